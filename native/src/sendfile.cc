// sendfile(socketFd, fileFd, position, length, cb): copies a file range to a socket in the kernel
// (Kafka's FileRecords.writeTo → transferTo) without ever blocking the JS thread.
//
// How: the socket is non-blocking (Node's are), so sendfile(2) is called in a loop until it would
// block (EAGAIN); then a uv_poll_t waits for writability and the loop resumes. The poll watches a
// dup() of the socket fd, never the fd itself: libuv keeps one watcher per fd number and Node's own
// uv_tcp handle already owns that one, so polling it would break the stream. All sendfile calls go
// through the dup too, so the bytes still reach the right socket if JS closes its fd meanwhile. The
// dup is closed only after the poll handle is stopped (uv_poll_stop removes it from epoll) and closed.
// The callback fires exactly once, always asynchronously: (null, bytesSent) or (Error, bytesSent).
// A file shorter than position + length (sendfile returns 0) is an error, not a spin.
// Everything runs on the loop thread, so plain references keep the callback alive.
//
// trySendfile(socketFd, fileFd, position, length) -> bytesSent: the synchronous first attempt, on the
// socket fd itself (nothing outlives the call). It sends what the socket takes now without blocking
// and returns the count (0..length; less than length when the socket buffer filled up, and the caller
// goes on with sendfile() for the rest). Errors throw like Node's system errors. A small region (most
// fetch answers) then leaves in one syscall, with no callback and no loop turn in between.
#include "sendfile.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <climits>
#include <string>

#include "util.h"

namespace skein {

// Linux transfers at most this much per sendfile(2) call.
constexpr uint64_t kMaxChunk = 0x7ffff000;

struct SendfileOp {
  enum class Step { Done, WouldBlock };

  SendfileRegistry* registry = nullptr;
  SendfileOp* prev = nullptr;
  SendfileOp* next = nullptr;
  napi_env env = nullptr;
  napi_ref callback = nullptr;
  napi_async_context asyncContext = nullptr;

  int fd = -1;  // our dup of the socket
  int fileFd = -1;
  off_t position = 0;
  uint64_t length = 0;
  uint64_t remaining = 0;
  uint64_t sent = 0;
  int error = 0;  // errno of the failure, or 0
  const char* syscall = "sendfile";
  bool shortFile = false;

  uv_poll_t poll;
  uv_timer_t timer;
  uv_handle_t* active = nullptr;  // the one handle in use (poll or timer)
  bool closing = false;
  bool cancelled = false;

  Step Pump() {
    while (remaining > 0) {
      size_t chunk = size_t(remaining < kMaxChunk ? remaining : kMaxChunk);
      ssize_t n = sendfile(fd, fileFd, &position, chunk);
      if (n > 0) {
        sent += uint64_t(n);
        remaining -= uint64_t(n);
        continue;
      }
      if (n == 0) {
        // End of file before length bytes: retrying would spin forever.
        shortFile = true;
        return Step::Done;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::WouldBlock;
      error = errno;
      syscall = "sendfile";
      return Step::Done;
    }
    return Step::Done;
  }

  // Schedules the callback for the next loop turn, so it never fires synchronously.
  void FinishSoon() {
    uv_loop_t* loop = nullptr;
    napi_get_uv_event_loop(env, &loop);
    uv_timer_init(loop, &timer);
    timer.data = this;
    active = reinterpret_cast<uv_handle_t*>(&timer);
    uv_timer_start(&timer, OnTimer, 0, 0);
  }

  void WaitWritable() {
    uv_loop_t* loop = nullptr;
    napi_get_uv_event_loop(env, &loop);
    int r = uv_poll_init(loop, &poll, fd);
    if (r != 0) {
      error = -r;
      syscall = "uv_poll_init";
      FinishSoon();
      return;
    }
    poll.data = this;
    active = reinterpret_cast<uv_handle_t*>(&poll);
    r = uv_poll_start(&poll, UV_WRITABLE, OnPoll);
    if (r != 0) {
      error = -r;
      syscall = "uv_poll_start";
      Close();
    }
  }

  void Close() {
    if (closing) return;
    closing = true;
    if (active == reinterpret_cast<uv_handle_t*>(&poll)) uv_poll_stop(&poll);
    if (active == reinterpret_cast<uv_handle_t*>(&timer)) uv_timer_stop(&timer);
    uv_close(active, OnClosed);
  }

  static void OnPoll(uv_poll_t* handle, int status, int events) {
    auto* op = static_cast<SendfileOp*>(handle->data);
    if (op->closing) return;
    // libuv reports POLLERR/POLLHUP as a bare UV_EBADF; one more sendfile(2) yields the real errno
    // (EPIPE, ECONNRESET, ...).
    if (op->Pump() == Step::WouldBlock) {
      if (status == 0) return;
      op->error = -status;
      op->syscall = "poll";
    }
    op->Close();
  }

  static void OnTimer(uv_timer_t* handle) {
    static_cast<SendfileOp*>(handle->data)->Close();
  }

  static void OnClosed(uv_handle_t* handle) {
    auto* op = static_cast<SendfileOp*>(handle->data);
    if (op->fd >= 0) close(op->fd);
    op->fd = -1;
    if (!op->cancelled) op->Deliver();
    op->ReleaseJs();
    SendfileRegistry* registry = op->registry;
    registry->Remove(op);
    delete op;
    registry->MaybeFinishTeardown();
  }

  // Calls the JS callback. Raw napi calls with checked statuses: this runs from a libuv callback, and
  // when a worker is being torn down the loop still turns (Node closes its handles first) while JS
  // can no longer run; then the op ends silently instead of aborting the process.
  void Deliver() {
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) return;
    if (CanCallIntoJs()) {
      napi_value argv[2];
      napi_value fn;
      napi_value recv;
      if (MakeError(&argv[0]) && napi_create_double(env, double(sent), &argv[1]) == napi_ok &&
          napi_get_reference_value(env, callback, &fn) == napi_ok && fn != nullptr &&
          napi_get_global(env, &recv) == napi_ok) {  // napi_make_callback needs an object receiver
        napi_status s = napi_make_callback(env, asyncContext, recv, fn, 2, argv, nullptr);
        bool pending = false;
        if (s != napi_ok && napi_is_exception_pending(env, &pending) == napi_ok && pending) {
          // Thrown by the JS callback: report it as uncaught, like any I/O callback in Node.
          napi_value exception;
          if (napi_get_and_clear_last_exception(env, &exception) == napi_ok) napi_fatal_exception(env, exception);
        }
      }
    }
    napi_close_handle_scope(env, scope);
  }

  // napi has no direct "is the env stopping" query; like node-addon-api's
  // NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS, read napi_pending_exception without an actual pending
  // exception from a call that checks (a property write) as "shutting down".
  bool CanCallIntoJs() {
    napi_value probe;
    if (napi_create_object(env, &probe) != napi_ok) return false;
    return napi_set_named_property(env, probe, "probe", probe) == napi_ok;
  }

  bool SetString(napi_value object, const char* key, const char* value) {
    napi_value v;
    return napi_create_string_utf8(env, value, NAPI_AUTO_LENGTH, &v) == napi_ok &&
           napi_set_named_property(env, object, key, v) == napi_ok;
  }

  bool MakeError(napi_value* out) {
    if (!shortFile && error == 0) return napi_get_null(env, out) == napi_ok;
    std::string message;
    const char* code;
    if (shortFile) {
      code = "ERR_SENDFILE_EOF";
      message = "sendfile: the file ended before position + length (" + std::to_string(sent) + " of " +
                std::to_string(length) + " bytes sent)";
    } else {
      code = uv_err_name(-error);
      message = std::string(code) + ": " + uv_strerror(-error) + ", " + syscall;
    }
    napi_value text;
    napi_value errnoValue;
    if (napi_create_string_utf8(env, message.c_str(), message.size(), &text) != napi_ok) return false;
    if (napi_create_error(env, nullptr, text, out) != napi_ok) return false;
    if (!SetString(*out, "code", code) || !SetString(*out, "syscall", "sendfile")) return false;
    if (!shortFile) {
      if (napi_create_int32(env, -error, &errnoValue) != napi_ok) return false;
      if (napi_set_named_property(env, *out, "errno", errnoValue) != napi_ok) return false;
      if (!SetString(*out, "syscall", syscall)) return false;
    }
    return true;
  }

  void ReleaseJs() {
    if (callback != nullptr) napi_delete_reference(env, callback);
    callback = nullptr;
    if (asyncContext != nullptr) napi_async_destroy(env, asyncContext);
    asyncContext = nullptr;
  }
};

SendfileRegistry::SendfileRegistry(Napi::Env env) : env_(env) {
  napi_add_async_cleanup_hook(env, OnTeardown, this, &hook_);
}

SendfileRegistry::~SendfileRegistry() {
  // Teardown waits for every op (the hook keeps the env alive), so none is left here.
  if (hook_ != nullptr) napi_remove_async_cleanup_hook(hook_);
}

void SendfileRegistry::Add(SendfileOp* op) {
  op->next = head_;
  if (head_ != nullptr) head_->prev = op;
  head_ = op;
}

void SendfileRegistry::Remove(SendfileOp* op) {
  if (op->prev != nullptr) op->prev->next = op->next;
  if (op->next != nullptr) op->next->prev = op->prev;
  if (head_ == op) head_ = op->next;
  op->prev = op->next = nullptr;
}

void SendfileRegistry::OnTeardown(napi_async_cleanup_hook_handle, void* arg) {
  auto* self = static_cast<SendfileRegistry*>(arg);
  self->tearingDown_ = true;
  for (SendfileOp* op = self->head_; op != nullptr; op = op->next) {
    op->cancelled = true;
    op->ReleaseJs();
    op->Close();
  }
  self->MaybeFinishTeardown();
}

void SendfileRegistry::MaybeFinishTeardown() {
  if (!tearingDown_ || head_ != nullptr || hook_ == nullptr) return;
  napi_async_cleanup_hook_handle hook = hook_;
  hook_ = nullptr;
  napi_remove_async_cleanup_hook(hook);
}

Napi::Value SendfileRegistry::Start(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double socketFd;
  double fileFd;
  double position;
  double length;
  if (!IntegerArg(info, 0, "sendfile: socketFd", 0, INT_MAX, &socketFd)) return Napi::Value();
  if (!IntegerArg(info, 1, "sendfile: fileFd", 0, INT_MAX, &fileFd)) return Napi::Value();
  if (!IntegerArg(info, 2, "sendfile: position", 0, kMaxSafeInteger, &position)) return Napi::Value();
  if (!IntegerArg(info, 3, "sendfile: length", 0, kMaxSafeInteger, &length)) return Napi::Value();
  if (info.Length() < 5 || !info[4].IsFunction()) {
    Napi::TypeError::New(env, "sendfile: callback must be a function").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  if (tearingDown_) {
    Napi::Error::New(env, "sendfile: the environment is shutting down").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  // A blocking socket would stall the JS thread inside sendfile(2): refuse it up front.
  int flags = fcntl(int(socketFd), F_GETFL);
  int flagsErr = flags < 0 ? errno : 0;  // saved now: the napi calls below may clobber errno
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) {
    Napi::Error::New(env, "sendfile: socketFd " + std::to_string(int(socketFd)) + " is in blocking mode")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }

  auto* op = new SendfileOp();
  op->registry = this;
  op->env = env;
  op->fileFd = int(fileFd);
  op->position = off_t(position);
  op->length = uint64_t(length);
  op->remaining = uint64_t(length);
  napi_create_reference(env, info[4], 1, &op->callback);
  napi_value resourceName;
  napi_create_string_utf8(env, "skein.sendfile", NAPI_AUTO_LENGTH, &resourceName);
  napi_async_init(env, nullptr, resourceName, &op->asyncContext);
  Add(op);

  op->fd = flags < 0 ? -1 : fcntl(int(socketFd), F_DUPFD_CLOEXEC, 0);
  if (op->fd < 0) {
    op->error = flags < 0 ? flagsErr : errno;
    op->syscall = flags < 0 ? "fcntl" : "dup";
    op->FinishSoon();
    return Napi::Value();
  }
  if (op->Pump() == SendfileOp::Step::WouldBlock) {
    op->WaitWritable();
  } else {
    op->FinishSoon();
  }
  return Napi::Value();
}

Napi::Value TrySendfile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double socketFd;
  double fileFd;
  double position;
  double length;
  if (!IntegerArg(info, 0, "trySendfile: socketFd", 0, INT_MAX, &socketFd)) return Napi::Value();
  if (!IntegerArg(info, 1, "trySendfile: fileFd", 0, INT_MAX, &fileFd)) return Napi::Value();
  if (!IntegerArg(info, 2, "trySendfile: position", 0, kMaxSafeInteger, &position)) return Napi::Value();
  if (!IntegerArg(info, 3, "trySendfile: length", 0, kMaxSafeInteger, &length)) return Napi::Value();
  // A blocking socket would stall the JS thread inside sendfile(2): refuse it.
  int flags = fcntl(int(socketFd), F_GETFL);
  if (flags < 0) {
    ErrnoError(env, errno, "fcntl").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  if ((flags & O_NONBLOCK) == 0) {
    Napi::Error::New(env, "trySendfile: socketFd " + std::to_string(int(socketFd)) + " is in blocking mode")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  off_t pos = off_t(position);
  uint64_t remaining = uint64_t(length);
  uint64_t sent = 0;
  while (remaining > 0) {
    size_t chunk = size_t(remaining < kMaxChunk ? remaining : kMaxChunk);
    ssize_t n = sendfile(int(socketFd), int(fileFd), &pos, chunk);
    if (n > 0) {
      sent += uint64_t(n);
      remaining -= uint64_t(n);
      continue;
    }
    if (n == 0) {
      Napi::Error e = Napi::Error::New(env, "trySendfile: the file ended before position + length (" +
                                                std::to_string(sent) + " of " + std::to_string(uint64_t(length)) +
                                                " bytes sent)");
      e.Set("code", Napi::String::New(env, "ERR_SENDFILE_EOF"));
      e.ThrowAsJavaScriptException();
      return Napi::Value();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    ErrnoError(env, errno, "sendfile").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  return Napi::Number::New(env, double(sent));
}

}  // namespace skein
