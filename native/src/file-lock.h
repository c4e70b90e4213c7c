// Exclusive advisory locks on a file (flock), for a data directory's `.lock`. See file-lock.cc.
#pragma once

#include <napi.h>

namespace skein {

// lockFile(path) -> fd holding an exclusive flock; throws (code EWOULDBLOCK) when another process holds it.
Napi::Value LockFile(const Napi::CallbackInfo& info);

}  // namespace skein
