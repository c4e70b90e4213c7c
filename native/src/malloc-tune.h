// glibc malloc tuning for a broker process (mallopt). See malloc-tune.cc.
#pragma once

#include <napi.h>

namespace skein {

// mallocTune(trimThresholdBytes, topPadBytes) -> true when applied (glibc), false elsewhere.
Napi::Value MallocTune(const Napi::CallbackInfo& info);

}  // namespace skein
