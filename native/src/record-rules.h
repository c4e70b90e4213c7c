// The structural rules of one record (RecordBatch v2's record: length, attributes, timestampDelta,
// offsetDelta, key, value, headers), shared by the native walks: walkRecords (record-walk.cc, over
// bytes the TypeScript hands over) and the fused decompress-and-walk (batch-walk.cc). They are exactly
// as strict as the TypeScript walker (src/protocol/records/record-walk.ts), which owns the rules and
// the error messages: a record refused here is handed to it, never accepted on its own.
#pragma once

#include <cmath>
#include <cstdint>

namespace skein {

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

// A timestamp from JavaScript as an int64: 0 when it is not a number an int64 holds (the callers
// validated the batch's timestamps before; this only keeps the conversion defined).
inline int64_t TimestampArg(double t) {
  return std::isfinite(t) && t > -9.2e18 && t < 9.2e18 ? int64_t(t) : 0;
}

// What a walk checks besides structure (RecordWalkRules in record-walk.ts).
struct RecordRules {
  int64_t expected;       // the batch's declared record count
  int64_t baseTimestamp;  // the batch's baseTimestamp
  double low, high;       // CreateTime bounds
  bool requireKeys;       // compacted topic: a keyless record is a fault
  bool checkTimestamps;   // CreateTime topic: a timestamp outside [low, high] is a fault
};

enum class RecordStep {
  kWalked,      // a sound record; p moved past it
  kIncomplete,  // the record does not end before `end` (its length varint or its body); p unchanged
  kUnsound,     // a structural fault: the TypeScript walker names it
};

// A record's fault under the content rules: 0 none, 1 keyless, 2 timestamp out of bounds (*timestamp).
// Walks the record at p numbered `index`.
[[gnu::always_inline]] inline RecordStep WalkOneRecord(const uint8_t*& p, const uint8_t* end, int64_t index, const RecordRules& rules,
                                int* fault, double* timestamp) {
  const uint8_t* q = p;
  int64_t length, timestampDelta, offsetDelta, headers;
  if (!ReadVarint(q, end, 5, &length)) {
    // Fewer than 5 bytes left: the varint ran out (it continues in the next chunk); else it is too long.
    return end - p < 5 ? RecordStep::kIncomplete : RecordStep::kUnsound;
  }
  if (length < kMinRecordBody) return RecordStep::kUnsound;
  if (length > end - q) return RecordStep::kIncomplete;
  const uint8_t* recordEnd = q + length;
  q++;  // attributes (Kafka reserves them; not checked)
  if (!ReadVarint(q, recordEnd, 10, &timestampDelta)) return RecordStep::kUnsound;
  if (!ReadVarint(q, recordEnd, 5, &offsetDelta) || offsetDelta != index) return RecordStep::kUnsound;
  bool hasKey, nonNull;
  if (!SkipField(q, recordEnd, true, &hasKey) || !SkipField(q, recordEnd, true, &nonNull)) return RecordStep::kUnsound;
  if (!ReadVarint(q, recordEnd, 5, &headers) || headers < 0 || headers > (recordEnd - q) / 2) return RecordStep::kUnsound;
  for (int64_t h = 0; h < headers; h++) {
    if (!SkipField(q, recordEnd, false, &nonNull) || !SkipField(q, recordEnd, true, &nonNull)) return RecordStep::kUnsound;
  }
  if (q != recordEnd) return RecordStep::kUnsound;
  *fault = 0;
  if (rules.requireKeys && !hasKey) {
    *fault = 1;
  } else if (rules.checkTimestamps) {
    // Wrapping as Java's longs do; a timestamp beyond 2^53 is out of any sane bound anyway.
    const int64_t ts = int64_t(uint64_t(rules.baseTimestamp) + uint64_t(timestampDelta));
    const double t = double(ts);
    if (ts != kNoTimestamp && (t < rules.low || t > rules.high)) {
      *fault = 2;
      *timestamp = t;
    }
  }
  p = recordEnd;
  return RecordStep::kWalked;
}

}  // namespace skein
