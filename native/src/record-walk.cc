// The record walk's fast path (src/protocol/records/record-walk.ts calls it): walks the whole records
// lying in buf[start, end) while each is sound, and stops at the first record that is not whole in the
// range, not sound, or past the declared count, or when `out` has no room for another fault. The
// TypeScript walker takes over where this stops: it finishes a record split across chunks, and throws
// the precise CORRUPT_MESSAGE for a record refused here, so the rules live in one place (the
// TypeScript) and this only has to be as strict as it, never less.
//
// Arguments: buf (Uint8Array) and io (Float64Array), which carries the numbers both ways (one typed
// array costs one N-API call, ten numbers ten): in, [start, end, firstIndex (index of the first
// record), expected (declared count), baseTimestamp, low, high (CreateTime bounds), flags (1 = keys
// required, 2 = check timestamps)]; out, [records walked, faults, then (index, kind 1 keyless /
// 2 timestamp, timestamp) per fault]. Returns the position after the last record walked.
#include "record-walk.h"

#include <cmath>
#include <cstdint>

namespace skein {
namespace {

constexpr int64_t kNoTimestamp = -1;
constexpr int64_t kMinRecordBody = 6;  // attributes, timestampDelta, offsetDelta, key/value lengths, header count

// A zig-zag varint of at most maxBytes bytes at p, not at or past end.
inline bool ReadVarint(const uint8_t*& p, const uint8_t* end, int maxBytes, int64_t* out) {
  if (p < end && *p < 0x80) {  // most fields of most records: one byte
    const uint8_t c = *p++;
    *out = int64_t(c >> 1) ^ -int64_t(c & 1);
    return true;
  }
  uint64_t raw = 0;
  for (int n = 0; n < maxBytes; n++) {
    if (p >= end) return false;
    uint8_t c = *p++;
    raw |= uint64_t(c & 0x7f) << (7 * n);
    if (c < 0x80) {
      *out = int64_t(raw >> 1) ^ -int64_t(raw & 1);
      return true;
    }
  }
  return false;
}

// Skips a length-prefixed field; -1 (null) only when allowNull. nonNull tells which it was.
inline bool SkipField(const uint8_t*& p, const uint8_t* end, bool allowNull, bool* nonNull) {
  int64_t n;
  if (!ReadVarint(p, end, 5, &n)) return false;
  if (n < 0) {
    *nonNull = false;
    return n == -1 && allowNull;
  }
  if (n > end - p) return false;
  p += n;
  *nonNull = true;
  return true;
}

}  // namespace

Napi::Value WalkRecords(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() || !info[1].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    Napi::TypeError::New(env, "walkRecords: (buf: Uint8Array, io: Float64Array)").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  auto buf = info[0].As<Napi::Uint8Array>();
  auto ioArray = info[1].As<Napi::TypedArray>();
  if (ioArray.TypedArrayType() != napi_float64_array || ioArray.ElementLength() < 8) {
    Napi::TypeError::New(env, "walkRecords: io must be a Float64Array of at least 8").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  double* out = ioArray.As<Napi::Float64Array>().Data();
  const double length = double(buf.ElementLength());
  const double start = out[0], end = out[1], firstIndex = out[2], expected = out[3];
  // Positions must be whole numbers within buf: they decide which memory is read.
  if (!(start >= 0 && start <= end && end <= length && std::trunc(start) == start && std::trunc(end) == end) ||
      !(firstIndex >= 0 && firstIndex <= 2147483647.0 && expected >= 0 && expected <= 2147483647.0)) {
    Napi::RangeError::New(env, "walkRecords: start, end, firstIndex or expected out of range").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  const double baseTimestamp = out[4], low = out[5], high = out[6];
  const int flags = int(out[7]);
  const bool requireKeys = (flags & 1) != 0;
  const bool checkTimestamps = (flags & 2) != 0;
  const size_t faultRoom = (ioArray.ElementLength() - 2) / 3;

  const uint8_t* base = buf.Data();
  const uint8_t* p = base + size_t(start);
  const uint8_t* const limit = base + size_t(end);
  int64_t index = int64_t(firstIndex);
  size_t faults = 0;
  const int64_t base64 = std::isfinite(baseTimestamp) ? int64_t(baseTimestamp) : 0;
  while (p < limit && index < int64_t(expected) && faults < faultRoom) {
    const uint8_t* q = p;
    int64_t length, timestampDelta, offsetDelta, headers;
    if (!ReadVarint(q, limit, 5, &length) || length < kMinRecordBody || length > limit - q) break;
    const uint8_t* recordEnd = q + length;
    q++;  // attributes
    if (!ReadVarint(q, recordEnd, 10, &timestampDelta)) break;
    if (!ReadVarint(q, recordEnd, 5, &offsetDelta) || offsetDelta != index) break;
    bool hasKey, nonNull;
    if (!SkipField(q, recordEnd, true, &hasKey) || !SkipField(q, recordEnd, true, &nonNull)) break;
    if (!ReadVarint(q, recordEnd, 5, &headers) || headers < 0 || headers > (recordEnd - q) / 2) break;
    bool sound = true;
    for (int64_t h = 0; h < headers && sound; h++) {
      sound = SkipField(q, recordEnd, false, &nonNull) && SkipField(q, recordEnd, true, &nonNull);
    }
    if (!sound || q != recordEnd) break;
    if (requireKeys && !hasKey) {
      out[2 + 3 * faults] = double(index);
      out[3 + 3 * faults] = 1;
      out[4 + 3 * faults] = 0;
      faults++;
    } else if (checkTimestamps) {
      // Wrapping as Java's longs do; a timestamp beyond 2^53 is out of any sane bound anyway.
      const int64_t ts = int64_t(uint64_t(base64) + uint64_t(timestampDelta));
      const double t = double(ts);
      if (ts != kNoTimestamp && (t < low || t > high)) {
        out[2 + 3 * faults] = double(index);
        out[3 + 3 * faults] = 2;
        out[4 + 3 * faults] = t;
        faults++;
      }
    }
    index++;
    p = recordEnd;
  }
  out[0] = double(index - int64_t(firstIndex));
  out[1] = double(faults);
  return Napi::Number::New(env, double(p - base));
}

}  // namespace skein
