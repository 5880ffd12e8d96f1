#pragma once
// The GPU-free NvInfer implementation: the runtime interfaces etrt drives.
// Each method has the name, signature and meaning of TensorRT's; behaviour is
// described in ../README.md, call by call. Objects are created by the library
// and destroyed with `delete` (TensorRT 10's rule), in TensorRT's order:
// contexts before their engine, engines before their runtime.

#include "NvInferRuntimeBase.h"

namespace nvinfer1 {

class ICudaEngine;

enum class OptProfileSelector : int32_t {
  kMIN = 0,
  kOPT = 1,
  kMAX = 2,
};

enum class ExecutionContextAllocationStrategy : int32_t {
  kSTATIC = 0,
  kON_PROFILE_CHANGE = 1,
  kUSER_MANAGED = 2,
};

class IExecutionContext {
 public:
  virtual ~IExecutionContext() noexcept = default;

  virtual void setErrorRecorder(IErrorRecorder* recorder) noexcept = 0;
  virtual IErrorRecorder* getErrorRecorder() const noexcept = 0;
  virtual ICudaEngine const& getEngine() const noexcept = 0;

  virtual bool setOptimizationProfileAsync(int32_t profileIndex, cudaStream_t stream) noexcept = 0;
  virtual int32_t getOptimizationProfile() const noexcept = 0;

  virtual bool setInputShape(char const* tensorName, Dims const& dims) noexcept = 0;
  virtual Dims getTensorShape(char const* tensorName) const noexcept = 0;

  virtual bool setTensorAddress(char const* tensorName, void* data) noexcept = 0;
  virtual void const* getTensorAddress(char const* tensorName) const noexcept = 0;

  virtual void setDeviceMemoryV2(void* memory, int64_t size) noexcept = 0;

  virtual bool enqueueV3(cudaStream_t stream) noexcept = 0;
};

class ICudaEngine {
 public:
  virtual ~ICudaEngine() noexcept = default;

  virtual int32_t getNbIOTensors() const noexcept = 0;
  virtual char const* getIOTensorName(int32_t index) const noexcept = 0;
  virtual TensorIOMode getTensorIOMode(char const* tensorName) const noexcept = 0;
  virtual DataType getTensorDataType(char const* tensorName) const noexcept = 0;
  virtual Dims getTensorShape(char const* tensorName) const noexcept = 0;
  virtual bool isShapeInferenceIO(char const* tensorName) const noexcept = 0;
  virtual TensorLocation getTensorLocation(char const* tensorName) const noexcept = 0;
  virtual TensorFormat getTensorFormat(char const* tensorName, int32_t profileIndex) const noexcept = 0;
  virtual char const* getTensorFormatDesc(char const* tensorName, int32_t profileIndex) const noexcept = 0;
  // The input an output shares its memory with (an IKVCacheUpdateLayer's
  // cache), or nullptr.
  virtual char const* getAliasedInputTensor(char const* tensorName) const noexcept = 0;

  virtual int32_t getNbOptimizationProfiles() const noexcept = 0;
  virtual Dims getProfileShape(char const* tensorName, int32_t profileIndex, OptProfileSelector select) const
      noexcept = 0;

  virtual int64_t getDeviceMemorySizeV2() const noexcept = 0;
  virtual int64_t getDeviceMemorySizeForProfileV2(int32_t profileIndex) const noexcept = 0;

  // Weight streaming: bytes of weights that may stay off the device, and the
  // budget of them kept resident. The budget can change only while the engine
  // has no execution context. Below the streamable size the engine streams:
  // each context needs getWeightStreamingScratchMemorySize() more, which
  // getDeviceMemorySizeV2() includes, and enqueueV3 is synchronous and refuses
  // a capturing stream.
  virtual int64_t getStreamableWeightsSize() const noexcept = 0;
  virtual bool setWeightStreamingBudgetV2(int64_t gpuMemoryBudget) noexcept = 0;
  virtual int64_t getWeightStreamingBudgetV2() const noexcept = 0;
  virtual int64_t getWeightStreamingAutomaticBudget() const noexcept = 0;
  virtual int64_t getWeightStreamingScratchMemorySize() const noexcept = 0;

  virtual IExecutionContext* createExecutionContext(
      ExecutionContextAllocationStrategy strategy = ExecutionContextAllocationStrategy::kSTATIC) noexcept = 0;

  virtual void setErrorRecorder(IErrorRecorder* recorder) noexcept = 0;
  virtual IErrorRecorder* getErrorRecorder() const noexcept = 0;
};

// A library of plugins, as loadLibrary returns it; nullptr when it did not load.
using PluginLibraryHandle = void*;

// The plugin registry of a runtime. Only what etrt calls: loading a plugin library, whose creators register
// themselves when it loads.
class IPluginRegistry {
 public:
  virtual PluginLibraryHandle loadLibrary(AsciiChar const* pluginPath) noexcept = 0;

 protected:
  virtual ~IPluginRegistry() noexcept = default;
};

class IRuntime {
 public:
  virtual ~IRuntime() noexcept = default;

  virtual ICudaEngine* deserializeCudaEngine(void const* blob, std::size_t size) noexcept = 0;

  // Whether a plan's host code may run (a version-compatible plan that embeds its lean runtime needs it). Off by
  // default.
  virtual void setEngineHostCodeAllowed(bool allowed) noexcept = 0;
  virtual bool getEngineHostCodeAllowed() const noexcept = 0;
  virtual IPluginRegistry& getPluginRegistry() noexcept = 0;

  virtual void setErrorRecorder(IErrorRecorder* recorder) noexcept = 0;
  virtual IErrorRecorder* getErrorRecorder() const noexcept = 0;
  virtual ILogger* getLogger() const noexcept = 0;
};

}  // namespace nvinfer1

// The library's one entry point. Its name is its own, not TensorRT's
// (createInferRuntime_INTERNAL), so a process that also loads NVIDIA's
// libnvinfer never binds one library's calls to the other.
extern "C" void* etrt_gpufree_createInferRuntime(void* logger, int32_t version) noexcept;
// Whether `engine` runs on the host (its "device" memory is host memory and its
// ops run on the calling thread) rather than as CUDA kernels. An extension:
// TensorRT has no such engine.
extern "C" bool etrt_gpufree_engineRunsOnHost(nvinfer1::ICudaEngine const* engine) noexcept;
// Whether execution contexts of `engine` may hold one optimization profile at once: true for engines built for
// TensorRT 10.x/11.x (the default) and for 8.6 engines built with PreviewFeature::kPROFILE_SHARING_0806; false for
// 8.6 engines without it. An extension: TensorRT 8.6 has no such query (an adapter finds it out by trying), and from
// 10.0 on the answer is always true.
extern "C" bool etrt_gpufree_engineSharesProfiles(nvinfer1::ICudaEngine const* engine) noexcept;
// What deserializeCudaEngine reads from `data` (the same decoder and checks), for tools: calls sink once with a JSON
// description and returns true, or calls it with the reason the bytes are refused and returns false. An extension:
// TensorRT has no such call; etrt's C ABI (etrt_engine_describe) reaches it.
extern "C" bool etrt_gpufree_describeEngine(const void* data, size_t size,
                                            void (*sink)(void* context, const char* text, size_t length),
                                            void* context) noexcept;

namespace nvinfer1 {
namespace {

// Creates a runtime that reports to `logger`; nullptr if the library is not
// the version these headers declare.
inline IRuntime* createInferRuntime(ILogger& logger) noexcept {
  return static_cast<IRuntime*>(etrt_gpufree_createInferRuntime(&logger, NV_TENSORRT_VERSION));
}

}  // namespace
}  // namespace nvinfer1
