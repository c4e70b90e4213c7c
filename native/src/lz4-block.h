// Decoding of one LZ4 block (the block format inside Kafka's LZ4 frames) into a caller's buffer, for
// the produce path's record walk: lz4-napi copies each block's input and allocates its output.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>

namespace skein {

// Decodes one LZ4 block src[0, srcLength) into dst[dstStart, dstEnd), matches referring back into
// dst[0, dstStart) too. Returns the bytes written at dstStart, or -1 when src is not a valid block fitting there.
// Bytes of dst[dstStart, dstEnd) past the output may be overwritten.
int64_t Lz4DecodeBlock(const uint8_t* src, size_t srcLength, uint8_t* dst, size_t dstStart, size_t dstEnd);

// lz4UncompressInto(src, dst, dstStart, dstEnd) -> bytes written at dstStart, or -1 when src is not a
// valid block fitting in dst[dstStart, dstEnd); matches may refer back into dst[0, dstStart) (the
// previous blocks of a linked frame).
Napi::Value Lz4UncompressInto(const Napi::CallbackInfo& info);

}  // namespace skein
