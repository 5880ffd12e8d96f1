#pragma once
// The GPU-free NvInfer implementation's runtime and engine: TensorRT's
// IRuntime and ICudaEngine over the engine format of format.h. Contexts are in
// context_impl.h. See ../README.md for the contract each call follows.
//
// Profile ownership follows TensorRT <= 8.5: each live context holds at most
// one profile and no two live contexts hold the same one. A context takes its
// profile at creation (profile 0, if no other context holds it), on a
// successful switch, or at enqueue if it became free; it gives it back on a
// switch away or when destroyed. Switching to a profile another live context
// holds fails and changes nothing; enqueueing on a profile another live context
// holds fails. So "context per profile" works (create N contexts, switch
// context i to profile i) and two contexts can never run one profile at once.

#include <NvInferRuntime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "etrt_gpufree/types.h"

namespace etrt::gpufree {

// Where an object's errors go: its error recorder if it has one, else the
// runtime's logger (TensorRT's rule). Engines inherit the runtime's recorder,
// contexts the engine's.
struct ErrorSink {
  nvinfer1::ILogger* logger = nullptr;
  nvinfer1::IErrorRecorder* recorder = nullptr;

  void report(nvinfer1::ErrorCode code, const std::string& message) const;
  // setErrorRecorder: holds a reference on the new recorder, gives back the old one's.
  void set_recorder(nvinfer1::IErrorRecorder* next);
  // "No IO tensor named ..." for a name an NvInfer call was given.
  void report_unknown_tensor(const char* call, const std::string& label, const char* name) const;
};

// Holds a recorder's reference for as long as an object points at it.
void retain(nvinfer1::IErrorRecorder* recorder);
void release(nvinfer1::IErrorRecorder* recorder);

// What TensorRT returns for a failed shape query.
inline nvinfer1::Dims invalid_dims() {
  nvinfer1::Dims d{};
  d.nbDims = -1;
  return d;
}
inline nvinfer1::Dims to_dims(const Shape& s) {
  nvinfer1::Dims d{};
  d.nbDims = s.rank;
  for (int32_t i = 0; i < s.rank; ++i) d.d[i] = s.d[i];
  return d;
}

class EngineImpl final : public nvinfer1::ICudaEngine {
 public:
  struct State;  // shared with the engine's contexts; engine_state.h

  ~EngineImpl() noexcept override;
  EngineImpl(const EngineImpl&) = delete;
  EngineImpl& operator=(const EngineImpl&) = delete;

  int32_t getNbIOTensors() const noexcept override;
  char const* getIOTensorName(int32_t index) const noexcept override;
  nvinfer1::TensorIOMode getTensorIOMode(char const* tensorName) const noexcept override;
  nvinfer1::DataType getTensorDataType(char const* tensorName) const noexcept override;
  nvinfer1::Dims getTensorShape(char const* tensorName) const noexcept override;
  bool isShapeInferenceIO(char const* tensorName) const noexcept override;
  nvinfer1::TensorLocation getTensorLocation(char const* tensorName) const noexcept override;
  nvinfer1::TensorFormat getTensorFormat(char const* tensorName, int32_t profileIndex) const noexcept override;
  char const* getTensorFormatDesc(char const* tensorName, int32_t profileIndex) const noexcept override;
  char const* getAliasedInputTensor(char const* tensorName) const noexcept override;
  int32_t getNbOptimizationProfiles() const noexcept override;
  nvinfer1::Dims getProfileShape(char const* tensorName, int32_t profileIndex,
                                 nvinfer1::OptProfileSelector select) const noexcept override;
  int64_t getDeviceMemorySizeV2() const noexcept override;
  int64_t getDeviceMemorySizeForProfileV2(int32_t profileIndex) const noexcept override;
  int64_t getStreamableWeightsSize() const noexcept override;
  bool setWeightStreamingBudgetV2(int64_t gpuMemoryBudget) noexcept override;
  int64_t getWeightStreamingBudgetV2() const noexcept override;
  int64_t getWeightStreamingAutomaticBudget() const noexcept override;
  int64_t getWeightStreamingScratchMemorySize() const noexcept override;
  nvinfer1::IExecutionContext* createExecutionContext(
      nvinfer1::ExecutionContextAllocationStrategy strategy) noexcept override;
  void setErrorRecorder(nvinfer1::IErrorRecorder* recorder) noexcept override;
  nvinfer1::IErrorRecorder* getErrorRecorder() const noexcept override;

  bool runs_on_host() const;
  bool shares_profiles() const;  // contexts may hold one profile at once (Model::exclusive_profiles off)

  // Parses and validates engine bytes; nullptr (reported to `sink`) on malformed, truncated or damaged bytes.
  static EngineImpl* deserialize(const void* data, size_t size, const ErrorSink& sink);

 private:
  explicit EngineImpl(std::shared_ptr<State> state);
  // CUDA mode, at context creation: uploads the weights on first use; refuses another device than theirs.
  bool prepare_device(std::string* error);
  // The IO index of `name`, or -1 (reported, naming `call`).
  int32_t lookup(char const* name, const char* call) const;

  std::shared_ptr<State> state_;
};

}  // namespace etrt::gpufree
