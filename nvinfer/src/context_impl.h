#pragma once
// The GPU-free NvInfer implementation's execution context: TensorRT's
// IExecutionContext contract, call by call (see engine_impl.h and ../README.md).
// Each NvInfer call resolves tensor names to IO indices, checks for an injected
// fault, runs the call's rules and, on failure, reports the reason to the
// context's error recorder (inherited from the engine, else the logger).
//
// By job: context.cpp (the NvInfer calls, creation and destruction),
// context_profile.cpp (profile switches and input shapes), context_memory.cpp
// (tensor addresses and device memory), context_enqueue.cpp (the enqueue);
// the state they share is in context_shapes.h, context_bindings.h and
// context_errors.h, CUDA mode's rules in context_device.h.

#include <NvInferRuntime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "context_bindings.h"
#include "context_errors.h"
#include "context_shapes.h"
#include "engine_state.h"
#include "etrt_gpufree/faults.h"

namespace etrt::gpufree {

inline std::string context_name(uint64_t id) { return "execution context #" + std::to_string(id); }

// Why a profile another live context holds is refused: the engine follows TensorRT 8.6's rules without profile
// sharing (Builder::set_tensorrt_version, set_preview_feature).
inline constexpr char kExclusiveProfiles[] =
    "the engine was built for TensorRT 8.6 without PreviewFeature::kPROFILE_SHARING_0806, which TensorRT 10 turns on "
    "for good";

// A context created while another live context held profile 0 starts with no profile, as in TensorRT 8.6 (exclusive
// profiles).
inline constexpr char kNoProfile[] =
    "the context has no optimization profile: profile 0 was held by another live context when it was created "
    "(TensorRT: 'Could not set default profile 0 for execution context'); call setOptimizationProfileAsync first";

class ContextImpl final : public nvinfer1::IExecutionContext {
 public:
  using State = EngineImpl::State;

  ContextImpl(const EngineImpl& engine, std::shared_ptr<State> state, uint64_t id, bool user_managed,
              const ContextMemory& memory, ScratchBuffer owned, DeviceOrder order, int32_t profile);
  ~ContextImpl() noexcept override;

  // ---- NvInfer ----------------------------------------------------------------------------------------------

  void setErrorRecorder(nvinfer1::IErrorRecorder* recorder) noexcept override;
  nvinfer1::IErrorRecorder* getErrorRecorder() const noexcept override;
  nvinfer1::ICudaEngine const& getEngine() const noexcept override;
  bool setOptimizationProfileAsync(int32_t profileIndex, cudaStream_t stream) noexcept override;
  int32_t getOptimizationProfile() const noexcept override;
  bool setInputShape(char const* tensorName, nvinfer1::Dims const& dims) noexcept override;
  nvinfer1::Dims getTensorShape(char const* tensorName) const noexcept override;
  bool setTensorAddress(char const* tensorName, void* data) noexcept override;
  void const* getTensorAddress(char const* tensorName) const noexcept override;
  void setDeviceMemoryV2(void* memory, int64_t size) noexcept override;
  bool enqueueV3(cudaStream_t stream) noexcept override;

 private:
  // ---- the rules, by an IO index lookup() found; false with the reason in errors_ ------------------------------

  // context_profile.cpp
  bool set_optimization_profile(int32_t profile, StreamHandle stream);
  bool set_input_shape(int32_t io_index, const Shape& shape);

  // context_memory.cpp
  bool set_tensor_address(int32_t io_index, void* address);
  bool set_device_memory(void* memory, size_t size);
  // For a refused memory size: how much of it is weight streaming's scratch, if the engine streams.
  std::string streaming_note() const;

  // context_enqueue.cpp
  bool enqueue(StreamHandle stream);
  // The enqueue proper, with this context already claimed against concurrent enqueues.
  bool enqueue_claimed(StreamHandle stream);
  // The checks of the context's own state, before anything is claimed.
  bool check_ready(StreamHandle stream);
  // CUDA mode: the device's checks and the stream's capture, which *capturing reports.
  bool check_device(StreamHandle stream, bool* capturing);
  // Takes the profile and marks the scratch in use, against the engine's other contexts.
  bool claim_shared(uint64_t scratch_bytes);
  void release_scratch();
  bool run_on_device(StreamHandle stream, uint64_t scratch_bytes, std::string* error);
  bool run_on_host(uint64_t scratch_bytes, std::string* error);

  // ---- helpers (context.cpp) -----------------------------------------------------------------------------------

  // The IO index of `name`, or -1 after reporting that there is none.
  int32_t lookup(char const* name, const char* call) const;
  // True (after reporting and tracing the refusal) when a fault injected at `call` fires now.
  bool injected(Call call, TraceKind kind);

  bool reported(bool ok) const { return errors_.reported(ok); }
  const std::string* fail(std::string message) const { return errors_.fail(std::move(message)); }
  bool refuse(std::string message) { return errors_.refuse(std::move(message)); }
  const std::string* fail_engine_destroyed(const char* call) const {
    return fail(std::string(call) + ": engine '" + label() + "' was destroyed; destroy its contexts first");
  }
  const std::string& label() const { return state_->model.label; }
  int32_t ordinal(int32_t io_index) const { return state_->input_ordinals[static_cast<size_t>(io_index)]; }

  const EngineImpl& engine_;
  std::shared_ptr<State> state_;
  ContextErrors errors_;
  const uint64_t id_;
  const bool user_managed_;
  const ContextMemory memory_;  // what it runs in, under the weight-streaming budget at its creation
  ScratchBuffer owned_scratch_;
  DeviceOrder order_;  // CUDA mode only
  int32_t profile_;    // -1: none (kNoProfile)
  StreamHandle switch_stream_ = nullptr;
  bool switched_since_enqueue_ = false;
  nvinfer1::ErrorCode failure_code_ = nvinfer1::ErrorCode::kFAILED_EXECUTION;  // what a failing enqueue reports
  // TensorRT does shape-dependent work on the first enqueue after the input shapes or the profile change, which a
  // CUDA graph cannot capture: set by those changes (and for a new context), cleared by an enqueue not captured.
  bool deferred_work_ = true;
  ContextShapes shapes_;
  ContextBindings bindings_;
  std::atomic<bool> enqueueing_{false};
};

}  // namespace etrt::gpufree
