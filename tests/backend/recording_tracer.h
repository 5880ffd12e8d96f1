#pragma once
// An ExecuTorch EventTracer that keeps the delegate events of each run and ignores everything else: what etrt logs
// for ExecuTorch's profiling tools (docs/profiling.md), for tests/backend/module_profiling_test.cpp and
// bench/gpu/gpu_profiling_check.cpp.

#include <executorch/runtime/core/event_tracer.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace etrt::module_test {

// One delegate event as the delegate logged it.
struct Logged {
  std::string name;
  executorch::runtime::DelegateDebugIntId id = 0;
  uint64_t start = 0;
  uint64_t stop = 0;
  std::string metadata;
};

// Keeps each run's delegate events (ExecuTorch opens a block per Method::execute). etrt logs whole events
// (log_profiling_delegate): a start/end pair is counted in `unexpected`.
class RecordingTracer final : public executorch::runtime::EventTracer {
  using EventTracerEntry = executorch::runtime::EventTracerEntry;
  using DelegateDebugIntId = executorch::runtime::DelegateDebugIntId;
  using AllocatorID = executorch::runtime::AllocatorID;
  using Tensor = executorch::aten::Tensor;
  template <typename T>
  using Result = executorch::runtime::Result<T>;

 public:
  std::vector<std::vector<Logged>> runs;
  int unexpected = 0;

  void create_event_block(const char* /*name*/) override { runs.emplace_back(); }
  EventTracerEntry start_profiling(const char*, executorch::runtime::ChainID,
                                   executorch::runtime::DebugHandle) override {
    return {};
  }
  void end_profiling(EventTracerEntry) override {}
  EventTracerEntry start_profiling_delegate(const char*, DelegateDebugIntId) override {
    ++unexpected;
    return {};
  }
  void end_profiling_delegate(EventTracerEntry, const void*, size_t) override {}
  void log_profiling_delegate(const char* name, DelegateDebugIntId id, et_timestamp_t start, et_timestamp_t stop,
                              const void* metadata, size_t length) override {
    if (runs.empty()) runs.emplace_back();
    runs.back().push_back(
        {name ? name : "", id, start, stop, std::string(static_cast<const char*>(metadata), metadata ? length : 0)});
  }
  void track_allocation(AllocatorID, size_t) override {}
  AllocatorID track_allocator(const char*) override { return 0; }
  Result<bool> log_evalue(const executorch::runtime::EValue&, executorch::runtime::LoggedEValueType) override {
    return false;
  }
  Result<bool> log_intermediate_output_delegate(const char*, DelegateDebugIntId, const Tensor&) override {
    return false;
  }
  Result<bool> log_intermediate_output_delegate(const char*, DelegateDebugIntId,
                                                const executorch::runtime::ArrayRef<Tensor>) override {
    return false;
  }
  Result<bool> log_intermediate_output_delegate(const char*, DelegateDebugIntId, const int&) override { return false; }
  Result<bool> log_intermediate_output_delegate(const char*, DelegateDebugIntId, const bool&) override { return false; }
  Result<bool> log_intermediate_output_delegate(const char*, DelegateDebugIntId, const double&) override {
    return false;
  }
  void set_delegation_intermediate_output_filter(executorch::runtime::EventTracerFilterBase*) override {}
};

}  // namespace etrt::module_test
