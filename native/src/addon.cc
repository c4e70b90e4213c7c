// Entry point of skein_native: a context-aware addon (Napi::Addon), so the main thread and every
// worker thread get their own instance. Per-env state lives in the instance (the IndexFile class,
// the in-flight sendfile registry, the fused record walk's scratch); the only globals are const tables (crc32c.cc).
#include <napi.h>

#include <memory>

#include "batch-walk.h"
#include "crc32c.h"
#include "file-lock.h"
#include "fsync.h"
#include "lz4-block.h"
#include "malloc-tune.h"
#include "mmap-index.h"
#include "record-walk.h"
#include "snappy-block.h"
#include "sendfile.h"
#include "util.h"

namespace skein {

class SkeinNative : public Napi::Addon<SkeinNative> {
 public:
  SkeinNative(Napi::Env env, Napi::Object exports)
      : hardwareCrc_(CpuHasCrc32c()), sendfiles_(std::make_unique<SendfileRegistry>(env)) {
    indexClass_ = Napi::Persistent(IndexFile::DefineClass(env));
    DefineAddon(exports, {
                             InstanceMethod<&SkeinNative::Crc32c>("crc32c"),
                             InstanceMethod<&SkeinNative::Crc32cSoftware>("crc32cSoftware"),
                             InstanceMethod<&SkeinNative::Crc32cHardware>("crc32cHardware"),
                             InstanceMethod<&SkeinNative::OpenIndex>("openIndex"),
                             InstanceMethod<&SkeinNative::Sendfile>("sendfile"),
                             InstanceMethod<&SkeinNative::TrySendfile>("trySendfile"),
                             InstanceMethod<&SkeinNative::Fsync>("fsync"),
                             InstanceMethod<&SkeinNative::LockFile>("lockFile"),
                             InstanceMethod<&SkeinNative::MallocTune>("mallocTune"),
                             InstanceMethod<&SkeinNative::WalkRecords>("walkRecords"),
                             InstanceMethod<&SkeinNative::SnappyUncompressInto>("snappyUncompressInto"),
                             InstanceMethod<&SkeinNative::Lz4UncompressInto>("lz4UncompressInto"),
                             InstanceMethod<&SkeinNative::WalkCompressedRecords>("walkCompressedRecords"),
                         });
  }

 private:
  // Reads (data: Uint8Array, seed?: number) and returns the CRC through kernel, or throws.
  Napi::Value Checksum(const Napi::CallbackInfo& info, bool hardware) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsTypedArray()) {
      Napi::TypeError::New(env, "crc32c: data must be a Uint8Array or Buffer").ThrowAsJavaScriptException();
      return Napi::Value();
    }
    Napi::TypedArray array = info[0].As<Napi::TypedArray>();
    napi_typedarray_type type = array.TypedArrayType();
    if (type != napi_uint8_array && type != napi_uint8_clamped_array) {
      Napi::TypeError::New(env, "crc32c: data must be a Uint8Array or Buffer").ThrowAsJavaScriptException();
      return Napi::Value();
    }
    uint32_t seed = 0;
    if (info.Length() > 1 && !info[1].IsUndefined()) {
      double s;
      if (!IntegerArg(info, 1, "crc32c: seed", 0, kMaxUint32, &s)) return Napi::Value();
      seed = uint32_t(s);
    }
    // Data() already includes the view's byteOffset.
    auto view = array.As<Napi::Uint8Array>();
    const uint8_t* data = view.Data();
    size_t length = view.ElementLength();
    uint32_t crc = ~seed;
    crc = hardware ? skein::Crc32cHardware(crc, data, length) : skein::Crc32cSoftware(crc, data, length);
    return Napi::Number::New(env, double(~crc));
  }

  Napi::Value Crc32c(const Napi::CallbackInfo& info) {
    return Checksum(info, hardwareCrc_);
  }

  Napi::Value Crc32cSoftware(const Napi::CallbackInfo& info) {
    return Checksum(info, false);
  }

  Napi::Value Crc32cHardware(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), hardwareCrc_);
  }

  Napi::Value OpenIndex(const Napi::CallbackInfo& info) {
    Napi::Value path = info.Length() > 0 ? info[0] : info.Env().Undefined();
    Napi::Value entrySize = info.Length() > 1 ? info[1] : info.Env().Undefined();
    Napi::Value maxBytes = info.Length() > 2 ? info[2] : info.Env().Undefined();
    return indexClass_.New({path, entrySize, maxBytes});
  }

  Napi::Value Sendfile(const Napi::CallbackInfo& info) {
    return sendfiles_->Start(info);
  }

  Napi::Value TrySendfile(const Napi::CallbackInfo& info) {
    return skein::TrySendfile(info);
  }

  Napi::Value Fsync(const Napi::CallbackInfo& info) {
    return skein::Fsync(info);
  }

  Napi::Value LockFile(const Napi::CallbackInfo& info) {
    return skein::LockFile(info);
  }

  Napi::Value MallocTune(const Napi::CallbackInfo& info) {
    return skein::MallocTune(info);
  }

  Napi::Value WalkRecords(const Napi::CallbackInfo& info) {
    return skein::WalkRecords(info);
  }

  Napi::Value SnappyUncompressInto(const Napi::CallbackInfo& info) {
    return skein::SnappyUncompressInto(info);
  }

  Napi::Value Lz4UncompressInto(const Napi::CallbackInfo& info) {
    return skein::Lz4UncompressInto(info);
  }

  Napi::Value WalkCompressedRecords(const Napi::CallbackInfo& info) {
    return batchWalker_.Walk(info);
  }

  const bool hardwareCrc_;
  std::unique_ptr<SendfileRegistry> sendfiles_;
  Napi::FunctionReference indexClass_;
  BatchWalker batchWalker_;  // its scratch buffers are this thread's
};

}  // namespace skein

// The registration macro pastes the class name into identifiers, so it needs an unqualified name.
using skein::SkeinNative;
NODE_API_ADDON(SkeinNative)
