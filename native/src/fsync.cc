// fsync(fd, dataOnly, cb): fsync(2), or fdatasync(2) when dataOnly, run on the libuv thread pool so
// the JS thread never waits for the disk. Calls back once with null or a Node-style errno Error.
#include "fsync.h"

#include <unistd.h>

#include <cerrno>
#include <climits>

#include "util.h"

namespace skein {
namespace {

class FsyncWorker : public Napi::AsyncWorker {
 public:
  FsyncWorker(Napi::Function callback, int fd, bool dataOnly)
      : Napi::AsyncWorker(callback, "skein.fsync"), fd_(fd), dataOnly_(dataOnly) {}

  void Execute() override {
    int r;
    do {
      r = dataOnly_ ? fdatasync(fd_) : fsync(fd_);
    } while (r != 0 && errno == EINTR);
    if (r != 0) err_ = errno;
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Value arg = err_ != 0 ? ErrnoError(env, err_, dataOnly_ ? "fdatasync" : "fsync").Value() : env.Null();
    Callback().Call({arg});
  }

 private:
  int fd_;
  bool dataOnly_;
  int err_ = 0;
};

}  // namespace

Napi::Value Fsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double fd;
  if (!IntegerArg(info, 0, "fsync: fd", 0, INT_MAX, &fd)) return Napi::Value();
  if (info.Length() < 2 || !info[1].IsBoolean()) {
    Napi::TypeError::New(env, "fsync: dataOnly must be a boolean").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  if (info.Length() < 3 || !info[2].IsFunction()) {
    Napi::TypeError::New(env, "fsync: callback must be a function").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  auto* worker = new FsyncWorker(info[2].As<Napi::Function>(), int(fd), info[1].As<Napi::Boolean>().Value());
  worker->Queue();  // AsyncWorker deletes itself after the callback
  return Napi::Value();
}

}  // namespace skein
