// Small helpers shared by the addon's source files: argument checks that throw TypeError/RangeError,
// and Node-style errno errors (message "EPIPE: broken pipe, sendfile", with code, errno, syscall).
#pragma once

#include <napi.h>
#include <uv.h>

#include <cmath>
#include <string>

namespace skein {

// An Error shaped like Node's own system errors. err is a positive errno value.
inline Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& detail = "") {
  std::string message = std::string(uv_err_name(-err)) + ": " + uv_strerror(-err) + ", " + syscall;
  if (!detail.empty()) message += " '" + detail + "'";
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, uv_err_name(-err)));
  e.Set("errno", Napi::Number::New(env, -err));
  e.Set("syscall", Napi::String::New(env, syscall));
  return e;
}

// Reads info[i] as an integer number in [min, max]; throws TypeError/RangeError and returns false otherwise.
inline bool IntegerArg(const Napi::CallbackInfo& info, size_t i, const char* name, double min, double max,
                       double* out) {
  Napi::Env env = info.Env();
  if (i >= info.Length() || !info[i].IsNumber()) {
    Napi::TypeError::New(env, std::string(name) + " must be a number").ThrowAsJavaScriptException();
    return false;
  }
  double v = info[i].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(v) || std::trunc(v) != v || v < min || v > max) {
    Napi::RangeError::New(env, std::string(name) + " must be an integer in [" + std::to_string(int64_t(min)) +
                                   ", " + std::to_string(int64_t(max)) + "], got " + std::to_string(v))
        .ThrowAsJavaScriptException();
    return false;
  }
  *out = v;
  return true;
}

constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1
constexpr double kMaxUint32 = 4294967295.0;

}  // namespace skein
