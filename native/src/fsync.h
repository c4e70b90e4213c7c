// fsync / fdatasync on the libuv thread pool. See fsync.cc.
#pragma once

#include <napi.h>

namespace skein {

// fsync(fd, dataOnly, callback)
Napi::Value Fsync(const Napi::CallbackInfo& info);

}  // namespace skein
