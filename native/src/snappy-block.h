// Decoding of one raw snappy block into a caller's buffer (the produce path's record walk decompresses
// snappy batches with it: the snappy package allocates a new buffer per call and is slow at batch sizes).
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>

namespace skein {

// Decodes one raw snappy block src[0, srcLength) into dst, which must be exactly its declared length.
// Returns dstLength, or -1 when src is not a valid block of that length.
int64_t SnappyDecodeBlock(const uint8_t* src, size_t srcLength, uint8_t* dst, size_t dstLength);

// snappyUncompressInto(src, dst) -> bytes written, or -1 when src is not a valid block of dst.length bytes
Napi::Value SnappyUncompressInto(const Napi::CallbackInfo& info);

}  // namespace skein
