// glibc malloc tuning for a broker or client process (mallopt). See malloc-tune.cc.
#pragma once

#include <napi.h>

namespace skein {

// mallocTune(trimThresholdBytes, topPadBytes[, mmapThresholdBytes]) -> true when applied (glibc), false
// elsewhere or when glibc refused a value.
Napi::Value MallocTune(const Napi::CallbackInfo& info);

}  // namespace skein
