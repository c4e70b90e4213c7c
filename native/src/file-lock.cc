// lockFile(path): opens (creating) path and takes an exclusive, non-blocking flock on it, returning the
// fd. The lock lives as long as the fd (or the process): a crashed broker never leaves a stale lock,
// which is why this is flock and not a pid file. Kafka guards each log dir the same way with `.lock`.
#include "file-lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <string>

#include "util.h"

namespace skein {

Napi::Value LockFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "lockFile: path must be a string").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    ErrnoError(env, errno, "open", path).ThrowAsJavaScriptException();
    return Napi::Value();
  }
  int rc;
  do {
    rc = flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    close(fd);
    ErrnoError(env, err, "flock", path).ThrowAsJavaScriptException();
    return Napi::Value();
  }
  return Napi::Number::New(env, fd);
}

}  // namespace skein
