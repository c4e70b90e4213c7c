// Decoding of one LZ4 block (the block format inside Kafka's LZ4 frames) into a caller's buffer, for
// the produce path's record walk: lz4-napi copies each block's input and allocates its output.
#pragma once

#include <napi.h>

namespace skein {

// lz4UncompressInto(src, dst, dstStart, dstEnd) -> bytes written at dstStart, or -1 when src is not a
// valid block fitting in dst[dstStart, dstEnd); matches may refer back into dst[0, dstStart) (the
// previous blocks of a linked frame).
Napi::Value Lz4UncompressInto(const Napi::CallbackInfo& info);

}  // namespace skein
