// The fused record walk of a compressed batch (batch-walk.h): decompression and the record walk in one
// native call, so a batch costs one crossing from JavaScript instead of one per block and per chunk.
// Memory is bounded as on the TypeScript path (compression.ts): lz4 decodes block by block into the
// 64 KiB window of a linked frame plus one block (at most 4 MiB), xerial snappy block by block, gzip
// in 64 KiB chunks; a raw snappy block is decoded whole (its copies may reach back to its start),
// bounded by the batch's decoded-size limit, which its declared length is checked against first. A
// record split across two blocks is carried over (at most kMaxCarry bytes of it; a longer one is
// left to the TypeScript path). The frame rules mirror compression.ts; where they disagree with the
// data, or the records do with record-rules.h, the answer is "let the TypeScript path decide" (-1),
// which then gives the precise error: this walk may refuse what TypeScript accepts, never the reverse.
// gzip inflates with Node's own zlib (the node binary exports it; the addon links against it).
#include "batch-walk.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lz4-block.h"
#include "snappy-block.h"

namespace skein {
namespace {

// The longest record carried across a block boundary; a longer one goes to the TypeScript walker.
constexpr size_t kMaxCarry = 1 << 20;
// Scratch larger than this (a raw snappy block of a large batch) is released after the call.
constexpr size_t kKeepScratch = (4 << 20) + (64 << 10);
constexpr size_t kKeepCarry = 64 << 10;

constexpr uint32_t kLz4Magic = 0x184d2204;
constexpr uint32_t kLz4SkippableMask = 0xfffffff0;
constexpr uint32_t kLz4SkippableMagic = 0x184d2a50;
constexpr size_t kLz4Window = 64 << 10;  // how far a linked block's matches may reach back

constexpr uint8_t kXerialMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t kXerialHeader = 16;  // magic, int32 version, int32 compatible version

constexpr size_t kGzipChunk = 64 << 10;

inline uint32_t Le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

inline uint32_t Be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

}  // namespace

BatchWalker::~BatchWalker() {
  if (zlibReady_) inflateEnd(&zlib_);
}

// Counts a sound record's content fault; false when out has no room for it (TypeScript collects them all).
bool BatchWalker::Record(const uint8_t*& p, const uint8_t* end, RecordStep* step) {
  int fault = 0;
  double timestamp = 0;
  *step = WalkOneRecord(p, end, index_, rules_, &fault, &timestamp);
  if (*step != RecordStep::kWalked) return true;
  if (fault != 0) {
    if (faults_ == faultRoom_) return false;
    faultsOut_[3 * faults_] = double(index_);
    faultsOut_[3 * faults_ + 1] = fault;
    faultsOut_[3 * faults_ + 2] = timestamp;
    faults_++;
  }
  index_++;
  return true;
}

// Completes the carried record with bytes from [p, end); false when it cannot be walked here.
bool BatchWalker::Feed(const uint8_t* p, const uint8_t* end) {
  while (!carry_.empty() && p < end) {
    if (carryNeed_ == 0) {
      // Its length varint is not complete yet: one more byte.
      carry_.push_back(*p++);
      const uint8_t* q = carry_.data();
      int64_t length;
      if (!ReadVarint(q, carry_.data() + carry_.size(), 5, &length)) {
        if (carry_.size() >= 5) return false;
        continue;
      }
      if (length < kMinRecordBody || uint64_t(length) > kMaxCarry) return false;
      carryNeed_ = size_t(q - carry_.data()) + size_t(length);
      if (carryNeed_ > kMaxCarry) return false;
    }
    const size_t take = std::min(carryNeed_ - carry_.size(), size_t(end - p));
    carry_.insert(carry_.end(), p, p + take);
    p += take;
    if (carry_.size() < carryNeed_) return true;
    const uint8_t* r = carry_.data();
    RecordStep step;
    if (!Record(r, carry_.data() + carry_.size(), &step) || step != RecordStep::kWalked) return false;
    carry_.clear();
    carryNeed_ = 0;
  }
  while (p < end) {
    if (index_ >= rules_.expected) return false;  // more records than declared
    RecordStep step;
    if (!Record(p, end, &step)) return false;
    if (step == RecordStep::kUnsound) return false;
    if (step == RecordStep::kIncomplete) {
      if (size_t(end - p) > kMaxCarry) return false;
      carry_.assign(p, end);
      int64_t length;
      const uint8_t* q = carry_.data();
      carryNeed_ = 0;
      if (ReadVarint(q, carry_.data() + carry_.size(), 5, &length)) {
        if (uint64_t(length) > kMaxCarry) return false;
        carryNeed_ = size_t(q - carry_.data()) + size_t(length);
        if (carryNeed_ > kMaxCarry) return false;
      }
      return true;
    }
  }
  return true;
}

bool BatchWalker::Lz4(const uint8_t* src, size_t length) {
  if (length == 0) return false;
  size_t pos = 0;
  while (pos < length) {
    if (length - pos < 4) return false;
    const uint32_t magic = Le32(src + pos);
    if ((magic & kLz4SkippableMask) == kLz4SkippableMagic) {
      if (length - pos < 8) return false;
      const uint32_t n = Le32(src + pos + 4);
      if (n > length - pos - 8) return false;
      pos += 8 + size_t(n);
      continue;
    }
    if (magic != kLz4Magic) return false;
    pos += 4;
    if (length - pos < 3) return false;
    const uint8_t flg = src[pos], bd = src[pos + 1];
    if ((flg >> 6) != 1 || (flg & 0x02) != 0 || (bd & 0x8f) != 0) return false;
    const bool independent = (flg & 0x20) != 0;
    const bool blockChecksum = (flg & 0x10) != 0;
    const bool hasContentSize = (flg & 0x08) != 0;
    const bool contentChecksum = (flg & 0x04) != 0;
    const bool hasDictId = (flg & 0x01) != 0;
    const int sizeId = (bd >> 4) & 0x07;
    if (sizeId < 4 || hasDictId) return false;
    const size_t blockMax = size_t(1) << (8 + 2 * sizeId);  // 64 KiB, 256 KiB, 1 MiB, 4 MiB
    pos += 2;
    if (hasContentSize) {
      if (length - pos < 9) return false;
      const uint64_t high = Le32(src + pos + 4);
      const uint64_t size = (high << 32) | Le32(src + pos);
      if (high > 0x1fffff || produced_ + size > maxBytes_) return false;
      pos += 8;
    }
    pos += 1;  // header checksum: the batch CRC already covers these bytes
    if (scratch_.size() < kLz4Window + blockMax) scratch_.resize(kLz4Window + blockMax);
    uint8_t* const work = scratch_.data();
    size_t window = 0;  // linked frames: bytes of the previous output kept at work[0, window)
    for (;;) {
      if (length - pos < 4) return false;
      const uint32_t word = Le32(src + pos);
      pos += 4;
      if (word == 0) break;  // EndMark
      const bool uncompressed = (word & 0x80000000u) != 0;
      const size_t size = word & 0x7fffffffu;
      if (size > blockMax || size > length - pos) return false;
      const uint8_t* block = src + pos;
      pos += size + (blockChecksum ? 4 : 0);
      if (pos > length) return false;
      const size_t start = independent ? 0 : window;
      int64_t n;
      if (uncompressed) {
        std::memcpy(work + start, block, size);
        n = int64_t(size);
      } else {
        n = Lz4DecodeBlock(block, size, work, start, start + blockMax);
        if (n < 0) return false;
      }
      produced_ += uint64_t(n);
      if (produced_ > maxBytes_) return false;
      if (!Feed(work + start, work + start + n)) return false;
      if (!independent) {
        const size_t kept = std::min(kLz4Window, start + size_t(n));
        std::memmove(work, work + start + size_t(n) - kept, kept);
        window = kept;
      }
    }
    if (contentChecksum) {
      if (length - pos < 4) return false;
      pos += 4;
    }
  }
  return true;
}

bool BatchWalker::Snappy(const uint8_t* src, size_t length) {
  if (length < kXerialHeader || std::memcmp(src, kXerialMagic, sizeof kXerialMagic) != 0) return SnappyBlock(src, length);
  size_t pos = kXerialHeader;
  while (pos < length) {
    if (length - pos < 4) return false;
    const int32_t n = int32_t(Be32(src + pos));
    pos += 4;
    if (n < 0 || size_t(n) > length - pos) return false;
    if (!SnappyBlock(src + pos, size_t(n))) return false;
    pos += size_t(n);
  }
  return true;
}

bool BatchWalker::SnappyBlock(const uint8_t* src, size_t length) {
  uint64_t declared = 0;
  size_t pos = 0;
  for (int shift = 0;; shift += 7) {
    if (pos >= length || shift > 28) return false;
    const uint8_t c = src[pos++];
    declared |= uint64_t(c & 0x7f) << shift;
    if (c < 0x80) break;
  }
  if (declared > maxBytes_ - produced_) return false;
  // A 3-byte copy yields at most 64 bytes: a block cannot declare more than that ratio allows.
  if (declared > 0 && 3 * (declared - 1) >= 64 * uint64_t(length - pos)) return false;
  if (scratch_.size() < declared) scratch_.resize(declared);
  if (SnappyDecodeBlock(src, length, scratch_.data(), declared) != int64_t(declared)) return false;
  produced_ += declared;
  return Feed(scratch_.data(), scratch_.data() + declared);
}

bool BatchWalker::Gzip(const uint8_t* src, size_t length) {
  if (length == 0 || length > 0xffffffffu) return false;
  if (!zlibReady_) {
    std::memset(&zlib_, 0, sizeof zlib_);
    if (inflateInit2(&zlib_, 15 + 16) != Z_OK) return false;  // 16: gzip wrapper only
    zlibReady_ = true;
  } else if (inflateReset(&zlib_) != Z_OK) {
    return false;
  }
  if (scratch_.size() < kGzipChunk) scratch_.resize(kGzipChunk);
  uint8_t* const chunk = scratch_.data();
  zlib_.next_in = const_cast<Bytef*>(src);
  zlib_.avail_in = uInt(length);
  for (;;) {
    const uInt inBefore = zlib_.avail_in;
    zlib_.next_out = chunk;
    zlib_.avail_out = uInt(kGzipChunk);
    const int ret = inflate(&zlib_, Z_NO_FLUSH);
    if (ret != Z_OK && ret != Z_STREAM_END) return false;
    const size_t have = kGzipChunk - zlib_.avail_out;
    produced_ += have;
    if (produced_ > maxBytes_) return false;
    if (have > 0 && !Feed(chunk, chunk + have)) return false;
    // Bytes after the first member (another member, or garbage): the TypeScript path decides.
    if (ret == Z_STREAM_END) return zlib_.avail_in == 0;
    if (have == 0 && zlib_.avail_in == inBefore) return false;
  }
}

Napi::Value BatchWalker::Walk(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsTypedArray() || !info[2].IsTypedArray() ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array ||
      info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[2].As<Napi::TypedArray>().ElementLength() < 8) {
    Napi::TypeError::New(env, "walkCompressedRecords: (codec: number, src: Uint8Array, io: Float64Array of at least 8)")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  const int codec = info[0].As<Napi::Number>().Int32Value();
  auto src = info[1].As<Napi::Uint8Array>();
  auto ioArray = info[2].As<Napi::Float64Array>();
  double* io = ioArray.Data();
  const double maxBytes = io[0], expected = io[3], baseTimestamp = io[4];
  if (!(maxBytes >= 0 && maxBytes <= 9007199254740991.0 && std::trunc(maxBytes) == maxBytes) ||
      !(expected >= 0 && expected <= 2147483647.0)) {
    Napi::RangeError::New(env, "walkCompressedRecords: maxBytes or expected out of range").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  const int flags = io[7] >= 0 && io[7] <= 3 ? int(io[7]) : 0;
  rules_ = RecordRules{int64_t(expected), TimestampArg(baseTimestamp), io[5], io[6],
                       (flags & 1) != 0, (flags & 2) != 0};
  faultsOut_ = io + 2;
  faultRoom_ = (ioArray.ElementLength() - 2) / 3;
  faults_ = 0;
  index_ = 0;
  maxBytes_ = uint64_t(maxBytes);
  produced_ = 0;
  carry_.clear();
  carryNeed_ = 0;

  bool sound;
  switch (codec) {
    case 1:
      sound = Gzip(src.Data(), src.ElementLength());
      break;
    case 2:
      sound = Snappy(src.Data(), src.ElementLength());
      break;
    case 3:
      sound = Lz4(src.Data(), src.ElementLength());
      break;
    default:
      sound = false;  // zstd and the rest: the TypeScript path
  }
  sound = sound && carry_.empty() && index_ == rules_.expected;
  if (scratch_.capacity() > kKeepScratch) std::vector<uint8_t>().swap(scratch_);
  if (carry_.capacity() > kKeepCarry) std::vector<uint8_t>().swap(carry_);
  if (!sound) return Napi::Number::New(env, -1);
  io[0] = double(index_);
  io[1] = double(faults_);
  return Napi::Number::New(env, double(produced_));
}

}  // namespace skein
