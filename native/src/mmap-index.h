// Memory-mapped sparse index files (Kafka's AbstractIndex). See mmap-index.cc for the layout.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace skein {

class IndexFile : public Napi::ObjectWrap<IndexFile> {
 public:
  // The JS class; the addon keeps one reference per env and builds instances through openIndex.
  static Napi::Function DefineClass(Napi::Env env);

  // Called by ObjectWrap with (path, entrySize, maxBytes); opens and maps the file or throws.
  explicit IndexFile(const Napi::CallbackInfo& info);
  ~IndexFile() override;

 private:
  Napi::Value Entries(const Napi::CallbackInfo& info);
  Napi::Value MaxEntries(const Napi::CallbackInfo& info);
  Napi::Value IsFull(const Napi::CallbackInfo& info);
  Napi::Value Append(const Napi::CallbackInfo& info);
  Napi::Value Lookup(const Napi::CallbackInfo& info);
  Napi::Value LookupCeiling(const Napi::CallbackInfo& info);
  Napi::Value KeyAt(const Napi::CallbackInfo& info);
  Napi::Value ValueAt(const Napi::CallbackInfo& info);
  Napi::Value TruncateToEntries(const Napi::CallbackInfo& info);
  Napi::Value Resize(const Napi::CallbackInfo& info);
  Napi::Value Flush(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  bool CheckOpen(Napi::Env env, const char* method);
  // Maps the file with room for maxBytes (rounded down to whole entries, never below the used
  // size). On failure throws, and leaves the index unmapped (callers then close it).
  bool Map(Napi::Env env, uint64_t maxBytes);
  void Unmap();
  void Release();
  // Opens path_ into fd_ when it is not open (create: O_CREAT); returns errno, 0 on success.
  int OpenFd(bool create);
  void CloseFd();

  double ReadKey(size_t slot) const;
  uint32_t ReadValue(size_t slot) const;
  // First slot in [lo, hi) whose key >= target (hi when none).
  size_t LowerBound(double target, size_t lo, size_t hi) const;
  // Lower bound over all entries, probing the warm (most recent) section first as Kafka does.
  size_t FindLowerBound(double target) const;

  std::string path_;
  // Open only while the file is being (re)mapped or trimmed: a mapping outlives its descriptor.
  int fd_ = -1;
  bool open_ = false;
  uint8_t* map_ = nullptr;
  size_t mapBytes_ = 0;
  size_t entrySize_ = 0;
  size_t entries_ = 0;
  size_t maxEntries_ = 0;
};

}  // namespace skein
