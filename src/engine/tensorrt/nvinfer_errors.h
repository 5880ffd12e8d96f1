#pragma once
// Where TensorRT's reasons go, for the adapter (tensorrt_engine.cpp): a logger per engine and an error recorder per
// context keep the latest error each channel reported, and fail_since() turns "what TensorRT said since the call
// began" into the caller's Diagnostic (common/error.h). Private to src/engine/tensorrt/; compiled against NvInfer.

#include <NvInferRuntime.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "common/error.h"

namespace etrt::engine::tensorrt {

// The latest error one TensorRT channel reported. TensorRT may report from any
// thread, so writers lock; a caller takes a mark() before an NvInfer call (one
// atomic load, so the execute path stays cheap) and, only if the call failed,
// appends what TensorRT said in between to its Diagnostic.
class LastMessage {
 public:
  void set(const char* text) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.assign(text != nullptr ? text : "");
    count_.fetch_add(1, std::memory_order_release);
  }
  uint64_t mark() const { return count_.load(std::memory_order_acquire); }
  void append_since(uint64_t mark, Diagnostic& why) const {
    std::lock_guard<std::mutex> lock(mutex_);
    why.append("%s", count_.load(std::memory_order_relaxed) == mark ? "TensorRT gave no reason" : text_.c_str());
  }
  // For getErrorDesc(), which only etrt would call: valid until the next report.
  const char* text() const { return text_.c_str(); }

 private:
  mutable std::mutex mutex_;
  std::string text_;
  std::atomic<uint64_t> count_{0};
};

// Writes "<what the format says>: <what TensorRT reported since `mark`>" and returns `code`.
ETRT_COLD inline Error fail_since(Diagnostic& why, Error code, const LastMessage& reported, uint64_t mark,
                                  const char* format, ...) ETRT_PRINTF_FORMAT(5, 6);
inline Error fail_since(Diagnostic& why, Error code, const LastMessage& reported, uint64_t mark, const char* format,
                        ...) {
  why.clear();
  va_list args;
  va_start(args, format);
  why.vappend(format, args);
  va_end(args);
  why.append(": ");
  reported.append_since(mark, why);
  return code;
}

// One logger per engine: TensorRT uses the logger a runtime was created with
// for everything created through that runtime, and etrt creates one runtime per
// engine, so an engine's errors are its own. Errors are kept for the failing
// call's Diagnostic (the backend logs them with the delegate's name); warnings,
// which no call's result carries, go to stderr.
class Logger final : public nvinfer1::ILogger {
 public:
  void log(Severity severity, const char* msg) noexcept override {
    if (severity == Severity::kINTERNAL_ERROR || severity == Severity::kERROR) {
      errors_.set(msg);
    } else if (severity == Severity::kWARNING) {
      std::fprintf(stderr, "[etrt] TensorRT warning: %s\n", msg != nullptr ? msg : "");
    }
  }
  const LastMessage& errors() const { return errors_; }

 private:
  LastMessage errors_;
};

// One recorder per context, so a failed context call is explained by what that
// context reported. It stores one error, the latest (we are its only reader).
class ErrorRecorder final : public nvinfer1::IErrorRecorder {
 public:
  int32_t getNbErrors() const noexcept override { return reported_.load() > 0 ? 1 : 0; }
  nvinfer1::ErrorCode getErrorCode(int32_t index) const noexcept override {
    return index == 0 && reported_.load() > 0 ? code_.load() : nvinfer1::ErrorCode::kUNSPECIFIED_ERROR;
  }
  ErrorDesc getErrorDesc(int32_t index) const noexcept override {
    return index == 0 && reported_.load() > 0 ? last_.text() : "";
  }
  bool hasOverflowed() const noexcept override { return reported_.load() > 1; }
  void clear() noexcept override { reported_.store(0); }
  bool reportError(nvinfer1::ErrorCode code, ErrorDesc desc) noexcept override {
    code_.store(code);
    last_.set(desc);
    reported_.fetch_add(1);
    return false;  // not fatal: the failing NvInfer call returns its own failure
  }
  RefCount incRefCount() noexcept override { return ++refs_; }
  RefCount decRefCount() noexcept override { return --refs_; }

  const LastMessage& errors() const { return last_; }
  nvinfer1::ErrorCode last_code() const { return code_.load(); }

 private:
  LastMessage last_;
  std::atomic<nvinfer1::ErrorCode> code_{nvinfer1::ErrorCode::kSUCCESS};
  std::atomic<int32_t> reported_{0};
  std::atomic<RefCount> refs_{0};
};

}  // namespace etrt::engine::tensorrt
