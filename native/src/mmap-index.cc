// Memory-mapped sparse index files, as Kafka's AbstractIndex / OffsetIndex / TimeIndex.
//
// On-disk layout: a flat array of fixed-size big-endian entries sorted by key, nothing else (no
// header, no checksum):
//   offset index (<baseOffset>.index, 8 bytes/entry):      int32 relative offset | int32 .log position
//   time index   (<baseOffset>.timeindex, 12 bytes/entry): int64 timestamp ms    | int32 relative offset
// While a segment is active the file is preallocated (ftruncate) to the configured maximum and mapped
// MAP_SHARED; entries() counts the slots in use. close(trim) cuts the file back to entries * entrySize,
// so a cleanly closed index reopens with entries = file size / entrySize.
// Descriptors: the file's descriptor is closed as soon as it is mapped (as Kafka's AbstractIndex closes
// its RandomAccessFile); resize and close(trim) reopen the file by path for their ftruncate. An open
// index therefore costs a mapping, not one of the process's open files.
//
// Recovery: indexes are not checksummed. After a crash a preallocated file reopens with every slot
// counted as an entry (trailing zeros included); the storage layer validates indexes (sorted keys,
// sane positions) and rebuilds them from the .log when they fail, exactly as Kafka does.
//
// Lookups binary-search the warm section first (the last 8192 bytes' worth of entries, as Kafka's
// AbstractIndex does): consumers near the log end only touch pages that are already in page cache.
#include "mmap-index.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include "util.h"

namespace skein {
namespace {

// Kafka's segment.index.bytes is an int; refusing more keeps one bad argument from mapping terabytes.
constexpr double kMaxIndexBytes = 2147483647.0;
// Kafka's AbstractIndex warm section size.
constexpr size_t kWarmSectionBytes = 8192;

inline uint32_t Load32BE(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

inline void Store32BE(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

}  // namespace

Napi::Function IndexFile::DefineClass(Napi::Env env) {
  return ObjectWrap<IndexFile>::DefineClass(
      env, "NativeIndexFile",
      {
          InstanceMethod<&IndexFile::Entries>("entries"),
          InstanceMethod<&IndexFile::MaxEntries>("maxEntries"),
          InstanceMethod<&IndexFile::IsFull>("isFull"),
          InstanceMethod<&IndexFile::Append>("append"),
          InstanceMethod<&IndexFile::Lookup>("lookup"),
          InstanceMethod<&IndexFile::LookupCeiling>("lookupCeiling"),
          InstanceMethod<&IndexFile::KeyAt>("keyAt"),
          InstanceMethod<&IndexFile::ValueAt>("valueAt"),
          InstanceMethod<&IndexFile::TruncateToEntries>("truncateToEntries"),
          InstanceMethod<&IndexFile::Resize>("resize"),
          InstanceMethod<&IndexFile::Flush>("flush"),
          InstanceMethod<&IndexFile::Close>("close"),
      });
}

IndexFile::IndexFile(const Napi::CallbackInfo& info) : ObjectWrap<IndexFile>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "openIndex: path must be a string").ThrowAsJavaScriptException();
    return;
  }
  path_ = info[0].As<Napi::String>().Utf8Value();
  if (path_.empty() || path_.find('\0') != std::string::npos) {
    Napi::TypeError::New(env, "openIndex: path must be a non-empty string without NUL bytes")
        .ThrowAsJavaScriptException();
    return;
  }
  double entrySize;
  if (!IntegerArg(info, 1, "openIndex: entrySize", 8, 12, &entrySize)) return;
  if (entrySize != 8 && entrySize != 12) {
    Napi::RangeError::New(env, "openIndex: entrySize must be 8 (offset index) or 12 (time index)")
        .ThrowAsJavaScriptException();
    return;
  }
  double maxBytes;
  if (!IntegerArg(info, 2, "openIndex: maxBytes", 0, kMaxIndexBytes, &maxBytes)) return;
  entrySize_ = size_t(entrySize);

  int openErr = OpenFd(true);
  if (openErr != 0) {
    ErrnoError(env, openErr, "open", path_).ThrowAsJavaScriptException();
    return;
  }
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    int err = errno;
    Release();
    ErrnoError(env, err, "fstat", path_).ThrowAsJavaScriptException();
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    Release();
    Napi::Error::New(env, "openIndex: '" + path_ + "' is not a regular file").ThrowAsJavaScriptException();
    return;
  }
  entries_ = size_t(st.st_size) / entrySize_;
  if (!Map(env, uint64_t(maxBytes))) {
    Release();
    return;
  }
  open_ = true;
  CloseFd();
}

int IndexFile::OpenFd(bool create) {
  if (fd_ >= 0) return 0;
  int fd;
  do {
    fd = open(path_.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  fd_ = fd;
  return 0;
}

void IndexFile::CloseFd() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

IndexFile::~IndexFile() {
  Release();
}

bool IndexFile::Map(Napi::Env env, uint64_t maxBytes) {
  int openErr = OpenFd(false);
  if (openErr != 0) {
    ErrnoError(env, openErr, "open", path_).ThrowAsJavaScriptException();
    return false;
  }
  uint64_t rounded = maxBytes - maxBytes % entrySize_;
  uint64_t used = uint64_t(entries_) * entrySize_;
  uint64_t size = rounded > used ? rounded : used;
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    ErrnoError(env, errno, "fstat", path_).ThrowAsJavaScriptException();
    return false;
  }
  if (uint64_t(st.st_size) != size) {
    int r;
    do {
      r = ftruncate(fd_, off_t(size));
    } while (r != 0 && errno == EINTR);
    if (r != 0) {
      ErrnoError(env, errno, "ftruncate", path_).ThrowAsJavaScriptException();
      return false;
    }
  }
  // mmap of length 0 is EINVAL: an empty index with no room simply has no mapping.
  if (size > 0) {
    void* p = mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
      ErrnoError(env, errno, "mmap", path_).ThrowAsJavaScriptException();
      return false;
    }
    map_ = static_cast<uint8_t*>(p);
  }
  mapBytes_ = size_t(size);
  maxEntries_ = mapBytes_ / entrySize_;
  return true;
}

void IndexFile::Unmap() {
  if (map_ != nullptr) munmap(map_, mapBytes_);
  map_ = nullptr;
  mapBytes_ = 0;
  maxEntries_ = 0;
}

void IndexFile::Release() {
  Unmap();
  CloseFd();
  open_ = false;
}

bool IndexFile::CheckOpen(Napi::Env env, const char* method) {
  if (open_) return true;
  Napi::Error::New(env, std::string("index ") + method + ": index file '" + path_ + "' is closed")
      .ThrowAsJavaScriptException();
  return false;
}

double IndexFile::ReadKey(size_t slot) const {
  const uint8_t* p = map_ + slot * entrySize_;
  if (entrySize_ == 8) return double(Load32BE(p));
  uint64_t bits = uint64_t(Load32BE(p)) << 32 | Load32BE(p + 4);
  return double(int64_t(bits));
}

uint32_t IndexFile::ReadValue(size_t slot) const {
  return Load32BE(map_ + slot * entrySize_ + (entrySize_ - 4));
}

size_t IndexFile::LowerBound(double target, size_t lo, size_t hi) const {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ReadKey(mid) < target) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

size_t IndexFile::FindLowerBound(double target) const {
  size_t n = entries_;
  if (n == 0) return 0;
  size_t warmEntries = kWarmSectionBytes / entrySize_;
  size_t firstHot = n - 1 > warmEntries ? n - 1 - warmEntries : 0;
  // Target beyond the first warm entry: the answer lies in the warm section, whose pages are hot.
  if (ReadKey(firstHot) < target) return LowerBound(target, firstHot + 1, n);
  return LowerBound(target, 0, firstHot + 1);
}

Napi::Value IndexFile::Entries(const Napi::CallbackInfo& info) {
  if (!CheckOpen(info.Env(), "entries")) return Napi::Value();
  return Napi::Number::New(info.Env(), double(entries_));
}

Napi::Value IndexFile::MaxEntries(const Napi::CallbackInfo& info) {
  if (!CheckOpen(info.Env(), "maxEntries")) return Napi::Value();
  return Napi::Number::New(info.Env(), double(maxEntries_));
}

Napi::Value IndexFile::IsFull(const Napi::CallbackInfo& info) {
  if (!CheckOpen(info.Env(), "isFull")) return Napi::Value();
  return Napi::Boolean::New(info.Env(), entries_ >= maxEntries_);
}

Napi::Value IndexFile::Append(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "append")) return Napi::Value();
  double key;
  double value;
  bool timeIndex = entrySize_ == 12;
  if (timeIndex) {
    if (!IntegerArg(info, 0, "index append: timestamp", -kMaxSafeInteger, kMaxSafeInteger, &key)) return Napi::Value();
  } else {
    if (!IntegerArg(info, 0, "index append: relative offset", 0, kMaxUint32, &key)) return Napi::Value();
  }
  if (!IntegerArg(info, 1, "index append: value", 0, kMaxUint32, &value)) return Napi::Value();
  if (entries_ >= maxEntries_) {
    Napi::Error::New(env, "index append: index file '" + path_ + "' is full (" + std::to_string(entries_) +
                              " entries)")
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  if (entries_ > 0) {
    double last = ReadKey(entries_ - 1);
    if (key < last) {
      Napi::Error::New(env, "index append: key " + std::to_string(int64_t(key)) + " is smaller than the last key " +
                                std::to_string(int64_t(last)) + " in '" + path_ + "'")
          .ThrowAsJavaScriptException();
      return Napi::Value();
    }
  }
  uint8_t* p = map_ + entries_ * entrySize_;
  if (timeIndex) {
    uint64_t bits = uint64_t(int64_t(key));
    Store32BE(p, uint32_t(bits >> 32));
    Store32BE(p + 4, uint32_t(bits));
    Store32BE(p + 8, uint32_t(value));
  } else {
    Store32BE(p, uint32_t(key));
    Store32BE(p + 4, uint32_t(value));
  }
  entries_++;
  return Napi::Value();
}

static bool TargetArg(const Napi::CallbackInfo& info, const char* method, double* out) {
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(info.Env(), std::string("index ") + method + ": target must be a number")
        .ThrowAsJavaScriptException();
    return false;
  }
  double t = info[0].As<Napi::Number>().DoubleValue();
  if (std::isnan(t)) {
    Napi::RangeError::New(info.Env(), std::string("index ") + method + ": target is NaN").ThrowAsJavaScriptException();
    return false;
  }
  *out = t;
  return true;
}

Napi::Value IndexFile::Lookup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "lookup")) return Napi::Value();
  double target;
  if (!TargetArg(info, "lookup", &target)) return Napi::Value();
  size_t lb = FindLowerBound(target);
  // An exact hit returns the first of equal keys (for a time index, where that timestamp was first
  // reached); otherwise the last entry below the target.
  if (lb < entries_ && ReadKey(lb) == target) return Napi::Number::New(env, double(lb));
  return Napi::Number::New(env, lb == 0 ? -1.0 : double(lb - 1));
}

Napi::Value IndexFile::LookupCeiling(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "lookupCeiling")) return Napi::Value();
  double target;
  if (!TargetArg(info, "lookupCeiling", &target)) return Napi::Value();
  size_t lb = FindLowerBound(target);
  return Napi::Number::New(env, lb < entries_ ? double(lb) : -1.0);
}

Napi::Value IndexFile::KeyAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "keyAt")) return Napi::Value();
  double i;
  if (!IntegerArg(info, 0, "index keyAt: position", 0, kMaxSafeInteger, &i)) return Napi::Value();
  if (i >= double(entries_)) {
    Napi::RangeError::New(env, "index keyAt: position " + std::to_string(int64_t(i)) + " is not below entries() " +
                                   std::to_string(entries_))
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  return Napi::Number::New(env, ReadKey(size_t(i)));
}

Napi::Value IndexFile::ValueAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "valueAt")) return Napi::Value();
  double i;
  if (!IntegerArg(info, 0, "index valueAt: position", 0, kMaxSafeInteger, &i)) return Napi::Value();
  if (i >= double(entries_)) {
    Napi::RangeError::New(env, "index valueAt: position " + std::to_string(int64_t(i)) +
                                   " is not below entries() " + std::to_string(entries_))
        .ThrowAsJavaScriptException();
    return Napi::Value();
  }
  return Napi::Number::New(env, double(ReadValue(size_t(i))));
}

Napi::Value IndexFile::TruncateToEntries(const Napi::CallbackInfo& info) {
  if (!CheckOpen(info.Env(), "truncateToEntries")) return Napi::Value();
  double n;
  if (!IntegerArg(info, 0, "index truncateToEntries: n", 0, kMaxSafeInteger, &n)) return Napi::Value();
  // Slots past n keep their bytes (as in Kafka): entries() is the only boundary readers trust.
  if (n < double(entries_)) entries_ = size_t(n);
  return Napi::Value();
}

Napi::Value IndexFile::Resize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "resize")) return Napi::Value();
  double maxBytes;
  if (!IntegerArg(info, 0, "index resize: maxBytes", 0, kMaxIndexBytes, &maxBytes)) return Napi::Value();
  Unmap();
  // A failed remap leaves nothing safe to read: close, and let the storage layer reopen or rebuild.
  if (!Map(env, uint64_t(maxBytes))) {
    Release();
    return Napi::Value();
  }
  CloseFd();
  return Napi::Value();
}

Napi::Value IndexFile::Flush(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "flush")) return Napi::Value();
  if (map_ != nullptr && msync(map_, mapBytes_, MS_SYNC) != 0) {
    ErrnoError(env, errno, "msync", path_).ThrowAsJavaScriptException();
  }
  return Napi::Value();
}

Napi::Value IndexFile::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!CheckOpen(env, "close")) return Napi::Value();
  bool trim = info.Length() > 0 && info[0].ToBoolean().Value();
  Unmap();
  int err = 0;
  // A file removed meanwhile (its segment was deleted) has nothing left to trim.
  if (trim && (err = OpenFd(false)) == ENOENT) err = 0;
  if (trim && fd_ >= 0) {
    int r;
    do {
      r = ftruncate(fd_, off_t(entries_ * entrySize_));
    } while (r != 0 && errno == EINTR);
    if (r != 0) err = errno;
  }
  Release();
  if (err != 0) ErrnoError(env, err, "ftruncate", path_).ThrowAsJavaScriptException();
  return Napi::Value();
}

}  // namespace skein
