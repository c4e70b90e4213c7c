// Why: every socket read hands Node a fresh 64 KiB buffer from malloc. With glibc's defaults the heap top
// is trimmed back to the kernel as soon as 128 KiB are free at the top, and the next reads fault the same
// pages in again (perf showed ~17% of the broker's main thread in those page faults while producing).
// Raising M_TRIM_THRESHOLD keeps up to that much free memory at the heap top instead, and M_TOP_PAD grows
// the heap in larger steps. The cost is RSS: up to trimThreshold bytes of freed memory stay mapped.
// Setting either disables glibc's dynamic mmap threshold, which is why both are set together and once,
// before the broker allocates its working set. With the dynamic threshold gone, every allocation above
// M_MMAP_THRESHOLD (128 KiB by default) is its own mmap, faulted in page by page and unmapped when freed:
// a consumer receives each Fetch response (megabytes) into one such buffer, so an optional third argument
// sets M_MMAP_THRESHOLD as well, to keep those buffers on the reused heap. Other C libraries have no mallopt: the call reports false.
#include "malloc-tune.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "util.h"

namespace skein {

Napi::Value MallocTune(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double trim;
  double topPad;
  // int parameters of mallopt: at most 2^31 - 1 bytes.
  if (!IntegerArg(info, 0, "mallocTune: trimThresholdBytes", 0, 2147483647.0, &trim)) return Napi::Value();
  if (!IntegerArg(info, 1, "mallocTune: topPadBytes", 0, 2147483647.0, &topPad)) return Napi::Value();
  double mmapThreshold = -1;
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!IntegerArg(info, 2, "mallocTune: mmapThresholdBytes", 0, 2147483647.0, &mmapThreshold)) return Napi::Value();
  }
#if defined(__GLIBC__)
  bool ok = mallopt(M_TRIM_THRESHOLD, int(trim)) == 1 && mallopt(M_TOP_PAD, int(topPad)) == 1;
  if (ok && mmapThreshold >= 0) ok = mallopt(M_MMAP_THRESHOLD, int(mmapThreshold)) == 1;
  return Napi::Boolean::New(env, ok);
#else
  return Napi::Boolean::New(env, false);
#endif
}

}  // namespace skein
