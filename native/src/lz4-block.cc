// One LZ4 block (lz4's lz4_Block_format.md: sequences of a token, literal length, literals, a 2-byte
// match offset and match length; the last sequence has literals only) decoded into dst[dstStart,
// dstEnd). Every read is checked against src's end and every write against dstEnd, every match offset
// against what precedes it in dst: corrupt or hostile input answers -1 and touches nothing outside.
// Short literal runs and matches are copied in fixed 16- and 8-byte steps when both sides have room
// (as lz4's own decoder does): such a copy may write junk past the output, never past dstEnd.
#include "lz4-block.h"

#include <cstdint>
#include <cstring>

#include "util.h"

namespace skein {

int64_t Lz4DecodeBlock(const uint8_t* src, size_t srcLength, uint8_t* dst, size_t dstStart, size_t dstEnd) {
  const uint8_t* p = src;
  const uint8_t* const end = src + srcLength;
  size_t out = dstStart;
  for (;;) {
    if (p >= end) return -1;
    const uint8_t token = *p++;
    size_t literals = token >> 4;
    if (literals == 15) {
      uint8_t b;
      do {
        if (p >= end) return -1;
        b = *p++;
        literals += b;
      } while (b == 255);
    }
    if (literals > size_t(end - p) || literals > dstEnd - out) return -1;
    if (literals <= 16 && end - p >= 16 && dstEnd - out >= 16) {
      std::memcpy(dst + out, p, 16);  // one fixed-size copy instead of a variable one
    } else {
      std::memcpy(dst + out, p, literals);
    }
    p += literals;
    out += literals;
    if (p == end) break;  // the last sequence: literals only
    if (end - p < 2) return -1;
    const size_t offset = size_t(p[0]) | (size_t(p[1]) << 8);
    p += 2;
    if (offset == 0 || offset > out) return -1;
    size_t match = (token & 15) + 4;
    if ((token & 15) == 15) {
      uint8_t b;
      do {
        if (p >= end) return -1;
        b = *p++;
        match += b;
      } while (b == 255);
    }
    if (match > dstEnd - out) return -1;
    uint8_t* to = dst + out;
    const uint8_t* from = to - offset;
    if (offset >= 16 && dstEnd - out >= match + 16) {
      // 16 bytes at a time (most matches take one step): each reads bytes already in place.
      for (size_t i = 0; i < match; i += 16) std::memcpy(to + i, from + i, 16);
    } else if (offset >= 8 && dstEnd - out >= match + 8) {
      // 8 bytes at a time: each step reads bytes already in place, since they lie offset >= 8 back.
      for (size_t i = 0; i < match; i += 8) std::memcpy(to + i, from + i, 8);
    } else if (offset >= match) {
      std::memcpy(to, from, match);
    } else {
      for (size_t i = 0; i < match; i++) to[i] = from[i];  // overlapping: a repeated pattern
    }
    out += match;
  }
  return int64_t(out - dstStart);
}

Napi::Value Lz4UncompressInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsTypedArray() || !info[1].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    Napi::TypeError::New(env, "lz4UncompressInto: (src: Uint8Array, dst: Uint8Array, dstStart, dstEnd)").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  auto src = info[0].As<Napi::Uint8Array>();
  auto dst = info[1].As<Napi::Uint8Array>();
  double dstStart, dstEnd;
  if (!IntegerArg(info, 2, "lz4UncompressInto: dstStart", 0, double(dst.ElementLength()), &dstStart)) return Napi::Value();
  if (!IntegerArg(info, 3, "lz4UncompressInto: dstEnd", dstStart, double(dst.ElementLength()), &dstEnd)) return Napi::Value();
  return Napi::Number::New(env, double(Lz4DecodeBlock(src.Data(), src.ElementLength(), dst.Data(), size_t(dstStart), size_t(dstEnd))));
}

}  // namespace skein
