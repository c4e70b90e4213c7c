// Decoding of one raw snappy block into a caller's buffer (the produce path's record walk decompresses
// snappy batches with it: the snappy package allocates a new buffer per call and is slow at batch sizes).
#pragma once

#include <napi.h>

namespace skein {

// snappyUncompressInto(src, dst) -> bytes written, or -1 when src is not a valid block of dst.length bytes
Napi::Value SnappyUncompressInto(const Napi::CallbackInfo& info);

}  // namespace skein
