#pragma once
// Fault injection and test hooks of the GPU-free NvInfer implementation, so a
// backend's error paths can be driven through every NvInfer call it makes.
//
//   gpufree::inject_fault(gpufree::Call::kEnqueueV3);   // the next enqueueV3 anywhere fails
//   module.forward(inputs);                              // -> the backend's error path
//   EXPECT_EQ(gpufree::faults_fired(), 1);
//
// A failing call behaves as the real call does when it fails: it returns its
// failure value (false, nullptr, or nothing for setDeviceMemoryV2), reports
// ErrorCode::kINTERNAL_ERROR with a message starting "injected fault" to the
// object's error recorder (or the runtime's logger), changes nothing, and is
// recorded in the trace as refused. Not part of NvInfer; only tests use it.

#include <cstdint>
#include <functional>
#include <string>

#include "etrt_gpufree/types.h"

namespace etrt::gpufree {

// The calls a fault can be injected at.
enum class Call : uint8_t {
  kCreateInferRuntime,
  kDeserializeCudaEngine,
  kCreateExecutionContext,
  kSetOptimizationProfileAsync,
  kSetInputShape,
  kGetTensorShape,
  kSetTensorAddress,
  kSetDeviceMemoryV2,
  kEnqueueV3,
  kSetWeightStreamingBudgetV2,
};
inline constexpr int kCallCount = 10;
// "enqueueV3", ...: the NvInfer name.
ETRT_GPUFREE_API const char* to_string(Call call);

// Arms a fault: the `nth` next call of `call` (1 = the very next) on any engine
// whose label is `label` (empty: any engine; kCreateInferRuntime ignores it)
// fails. deserializeCudaEngine counts only calls whose bytes parse (the label
// is in them); malformed bytes fail on their own. One armed fault per call
// kind; arming again replaces it.
ETRT_GPUFREE_API void inject_fault(Call call, int64_t nth = 1, const std::string& label = "");
// Disarms every fault.
ETRT_GPUFREE_API void clear_faults();
// How many injected faults have fired since the process started.
ETRT_GPUFREE_API int64_t faults_fired();

namespace detail {
// True when the fault armed at `call` fires now (counts the call otherwise). One relaxed load when none is armed.
ETRT_GPUFREE_API bool fault_fires(Call call, const std::string& label);
}  // namespace detail

// Runs `hook` inside every enqueueV3 of engines labelled `label`, after the
// enqueue has claimed its context, profile and scratch memory and before it
// computes: lets a test start a competing call from another thread at a known
// moment. An empty function removes it.
ETRT_GPUFREE_API void set_enqueue_hook(const std::string& label, std::function<void()> hook);

namespace detail {
ETRT_GPUFREE_API void run_enqueue_hook(const std::string& label);
}  // namespace detail

}  // namespace etrt::gpufree
