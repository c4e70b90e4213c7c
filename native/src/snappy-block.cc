// One raw snappy block (the format of google/snappy's format_description.txt: a varint preamble with
// the uncompressed length, then literal and copy elements) decoded into dst, which the caller sized to
// the preamble's length after checking it against its bounds. Every read is checked against src's end
// and every write against dst's: corrupt or hostile input answers -1, never touches memory outside them.
// Short literals and copies are moved in fixed 16- and 8-byte steps when both sides have room: such a
// step may write junk past the output so far (later elements overwrite it), never past dst's end.
#include "snappy-block.h"

#include <cstdint>
#include <cstring>

namespace skein {

int64_t SnappyDecodeBlock(const uint8_t* src, size_t srcLength, uint8_t* dst, size_t dstLength) {
  const uint8_t* p = src;
  const uint8_t* const end = src + srcLength;
  uint64_t declared = 0;
  for (int shift = 0;; shift += 7) {
    if (p >= end || shift > 28) return -1;
    uint8_t c = *p++;
    declared |= uint64_t(c & 0x7f) << shift;
    if (c < 0x80) break;
  }
  if (declared != dstLength) return -1;
  size_t out = 0;
  while (p < end) {
    const uint8_t tag = *p++;
    const uint32_t kind = tag & 3;
    if (kind == 0) {
      size_t length = (tag >> 2) + 1;
      if (length > 60) {
        const size_t bytes = length - 60;  // 1..4 little-endian bytes of length - 1
        if (size_t(end - p) < bytes) return -1;
        length = 0;
        for (size_t i = 0; i < bytes; i++) length |= size_t(p[i]) << (8 * i);
        length += 1;
        p += bytes;
      }
      if (size_t(end - p) < length || dstLength - out < length) return -1;
      if (length <= 16 && end - p >= 16 && dstLength - out >= 16) {
        std::memcpy(dst + out, p, 16);  // one fixed-size copy instead of a variable one
      } else {
        std::memcpy(dst + out, p, length);
      }
      p += length;
      out += length;
      continue;
    }
    size_t length;
    size_t offset;
    if (kind == 1) {
      if (end - p < 1) return -1;
      length = 4 + ((tag >> 2) & 7);
      offset = (size_t(tag >> 5) << 8) | *p++;
    } else if (kind == 2) {
      if (end - p < 2) return -1;
      length = (tag >> 2) + 1;
      offset = size_t(p[0]) | (size_t(p[1]) << 8);
      p += 2;
    } else {
      if (end - p < 4) return -1;
      length = (tag >> 2) + 1;
      offset = size_t(p[0]) | (size_t(p[1]) << 8) | (size_t(p[2]) << 16) | (size_t(p[3]) << 24);
      p += 4;
    }
    if (offset == 0 || offset > out || dstLength - out < length) return -1;
    uint8_t* to = dst + out;
    const uint8_t* from = to - offset;
    if (offset >= 16 && dstLength - out >= length + 16) {
      // 16 bytes at a time (most matches take one step): each reads bytes already in place.
      for (size_t i = 0; i < length; i += 16) std::memcpy(to + i, from + i, 16);
    } else if (offset >= 8 && dstLength - out >= length + 8) {
      // 8 bytes at a time: each step reads bytes already in place, since they lie offset >= 8 back.
      for (size_t i = 0; i < length; i += 8) std::memcpy(to + i, from + i, 8);
    } else if (offset >= length) {
      std::memcpy(to, from, length);
    } else {
      for (size_t i = 0; i < length; i++) to[i] = from[i];  // overlapping: a repeated pattern
    }
    out += length;
  }
  return out == dstLength ? int64_t(out) : -1;
}

Napi::Value SnappyUncompressInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() || !info[1].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    Napi::TypeError::New(env, "snappyUncompressInto: (src: Uint8Array, dst: Uint8Array)").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  auto src = info[0].As<Napi::Uint8Array>();
  auto dst = info[1].As<Napi::Uint8Array>();
  return Napi::Number::New(env, double(SnappyDecodeBlock(src.Data(), src.ElementLength(), dst.Data(), dst.ElementLength())));
}

}  // namespace skein
