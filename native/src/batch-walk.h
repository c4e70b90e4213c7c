// The fused record walk of a compressed batch: one native call decompresses the records section (lz4
// frames, snappy raw or xerial-framed, gzip through Node's own zlib) block by block into bounded
// scratch and walks the records as they come out, with the rules of record-rules.h. It gives a verdict
// only for batches it finds sound; anything else (a fault, a record too large to carry across blocks,
// a codec quirk) is handed back to the TypeScript path, which owns every error message.
#pragma once

#include <napi.h>
#include <zlib.h>

#include <cstdint>
#include <vector>

#include "record-rules.h"

namespace skein {

// One per addon instance (per thread): its scratch buffers are reused by every call.
class BatchWalker {
 public:
  ~BatchWalker();

  // walkCompressedRecords(codec, src, io) -> decompressed bytes walked, or -1 when the TypeScript path
  // must decide. io (Float64Array): in, [maxBytes (the bomb limit), unused, unused, expected,
  // baseTimestamp, low, high, flags (1 = keys required, 2 = check timestamps)]; out, [records walked,
  // faults, then (index, kind 1 keyless / 2 timestamp, timestamp) per fault].
  Napi::Value Walk(const Napi::CallbackInfo& info);

 private:
  // Walks decompressed bytes [p, end), carrying a record split at the end over to the next call.
  bool Feed(const uint8_t* p, const uint8_t* end);
  bool FinishCarried();
  bool Record(const uint8_t*& p, const uint8_t* end, RecordStep* step);
  bool Lz4(const uint8_t* src, size_t length);
  bool Snappy(const uint8_t* src, size_t length);
  bool SnappyBlock(const uint8_t* src, size_t length);
  bool Gzip(const uint8_t* src, size_t length);

  // Per call.
  RecordRules rules_{};
  double* faultsOut_ = nullptr;
  size_t faultRoom_ = 0;
  size_t faults_ = 0;
  int64_t index_ = 0;
  uint64_t maxBytes_ = 0;
  uint64_t produced_ = 0;
  size_t carryNeed_ = 0;  // when carrying: the carried record's whole size, or 0 while its length varint is incomplete

  // Reused across calls.
  std::vector<uint8_t> carry_;    // the start of a record split across blocks (at most kMaxCarry)
  std::vector<uint8_t> scratch_;  // decoded output: lz4 window + block, a snappy block, a gzip chunk
  z_stream zlib_{};
  bool zlibReady_ = false;
};

}  // namespace skein
