// Non-blocking sendfile(2) from a file to a socket, driven by the libuv loop. See sendfile.cc.
#pragma once

#include <napi.h>

namespace skein {

struct SendfileOp;

// Per-env owner of in-flight sendfiles. At env teardown (a worker exiting) it closes their libuv
// handles without calling back into JS, and holds teardown (an async cleanup hook) until they are closed.
class SendfileRegistry {
 public:
  explicit SendfileRegistry(Napi::Env env);
  ~SendfileRegistry();
  SendfileRegistry(const SendfileRegistry&) = delete;
  SendfileRegistry& operator=(const SendfileRegistry&) = delete;

  // sendfile(socketFd, fileFd, position, length, callback)
  Napi::Value Start(const Napi::CallbackInfo& info);

 private:
  friend struct SendfileOp;
  static void OnTeardown(napi_async_cleanup_hook_handle handle, void* arg);
  void Add(SendfileOp* op);
  void Remove(SendfileOp* op);
  void MaybeFinishTeardown();

  napi_env env_;
  SendfileOp* head_ = nullptr;
  napi_async_cleanup_hook_handle hook_ = nullptr;
  bool tearingDown_ = false;
};

// trySendfile(socketFd, fileFd, position, length) -> bytes sent without blocking (see sendfile.cc).
Napi::Value TrySendfile(const Napi::CallbackInfo& info);

}  // namespace skein
