#pragma once
// An execution context's refusals: the reason of the last one, kept for the
// trace and for the NvInfer call that reports it to the context's error
// recorder (inherited from the engine, else the logger).

#include <NvInferRuntime.h>

#include <mutex>
#include <string>
#include <utility>

#include "engine_impl.h"

namespace etrt::gpufree {

class ContextErrors {
 public:
  explicit ContextErrors(const ErrorSink& sink) : sink_(sink) {}

  ErrorSink& sink() { return sink_; }
  const ErrorSink& sink() const { return sink_; }

  // Sets last_error() and returns it, for the trace. `const` because tensor_shape() fails too.
  const std::string* fail(std::string message) const {
    std::lock_guard<std::mutex> lock(mutex_);
    last_error_ = std::move(message);
    return &last_error_;
  }
  bool refuse(std::string message) const {
    fail(std::move(message));
    return false;
  }

  // Passes a rule's result through, reporting its refusal.
  bool reported(bool ok) const {
    if (!ok) sink_.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, last_error_copy());
    return ok;
  }

  std::string last_error_copy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_error_;
  }
  // Unlocked: for the enqueue, which owns last_error_'s next write while it runs.
  const std::string& last_error() const { return last_error_; }

 private:
  ErrorSink sink_;
  mutable std::mutex mutex_;
  mutable std::string last_error_;
};

}  // namespace etrt::gpufree
