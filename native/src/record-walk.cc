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

#include "record-rules.h"

#include <cmath>
#include <cstdint>

namespace skein {

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
  const int flags = out[7] >= 0 && out[7] <= 3 ? int(out[7]) : 0;
  const bool requireKeys = (flags & 1) != 0;
  const bool checkTimestamps = (flags & 2) != 0;
  const size_t faultRoom = (ioArray.ElementLength() - 2) / 3;

  const uint8_t* base = buf.Data();
  const uint8_t* p = base + size_t(start);
  const uint8_t* const limit = base + size_t(end);
  const RecordRules rules{int64_t(expected), TimestampArg(baseTimestamp), low, high,
                          requireKeys, checkTimestamps};
  int64_t index = int64_t(firstIndex);
  size_t faults = 0;
  while (p < limit && index < rules.expected && faults < faultRoom) {
    int fault;
    double timestamp = 0;
    if (WalkOneRecord(p, limit, index, rules, &fault, &timestamp) != RecordStep::kWalked) break;
    if (fault != 0) {
      out[2 + 3 * faults] = double(index);
      out[3 + 3 * faults] = fault;
      out[4 + 3 * faults] = timestamp;
      faults++;
    }
    index++;
  }
  out[0] = double(index - int64_t(firstIndex));
  out[1] = double(faults);
  return Napi::Number::New(env, double(p - base));
}

}  // namespace skein
