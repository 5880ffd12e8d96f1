#pragma once
// The NvInfer calls whose spelling depends on the TensorRT version, and the one place the adapter asks which version
// it is compiled against. Private to src/engine/tensorrt/; compiled against NvInfer.
//
// Supported: TensorRT 8.6 (JetPack 6.0/6.1, DRIVE OS 6), 10.1 and newer 10.x, 11.x. What differs:
//
//   what                         8.6                                              10.1+ / 11.x
//   Dims extents                 int32_t                                          int64_t (Dims64)
//   scratch size                 getDeviceMemorySize()                            getDeviceMemorySizeV2()
//   context without scratch      createExecutionContextWithoutDeviceMemory()      createExecutionContext(kUSER_MANAGED)
//   supplying scratch            setDeviceMemory(ptr)                             setDeviceMemoryV2(ptr, size)
//   IO format                    getTensorFormat(name): one for every profile     getTensorFormat(name, profile)
//   weight streaming             absent: no engine has streamable weights         the V2 budget calls, the scratch
//   aliased outputs              absent (getAliasedInputTensor is 10.15+)         10.15+
//   BF16, INT64, INT4 types      absent                                           present
//   profile sharing              kPROFILE_SHARING_0806 at build time, off by      always on
//                                default, no runtime query
//
// 11.0 removed the 8.6 spellings of the memory calls, so no spelling serves both.

#include <NvInferRuntime.h>
#include <NvInferVersion.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "common/shape.h"

#if NV_TENSORRT_MAJOR == 8
#include <cuda_runtime_api.h>

#include "engine/tensorrt/nvinfer_errors.h"
#endif

#if NV_TENSORRT_MAJOR < 8 || (NV_TENSORRT_MAJOR == 8 && NV_TENSORRT_MINOR < 6) || NV_TENSORRT_MAJOR == 9 || \
    (NV_TENSORRT_MAJOR == 10 && NV_TENSORRT_MINOR < 1)
#error "etrt's TensorRT adapter needs TensorRT 8.6, or 10.1 or newer (10.x, 11.x)."
#endif

// The device-memory calls of 8.6 (createExecutionContextWithoutDeviceMemory, getDeviceMemorySize, setDeviceMemory).
// Used in this header only: the adapter asks the constants and calls below, never the version.
#define ETRT_TENSORRT_8 (NV_TENSORRT_MAJOR == 8)
// getAliasedInputTensor and IKVCacheUpdateLayer first appear in TensorRT 10.15.
#define ETRT_TENSORRT_HAS_ALIASES (NV_TENSORRT_MAJOR > 10 || (NV_TENSORRT_MAJOR == 10 && NV_TENSORRT_MINOR >= 15))

namespace etrt::engine::tensorrt::nv {

// What this version has at all: weight streaming (10.0+), and outputs TensorRT itself aliases to inputs (10.15+).
inline constexpr bool kHasWeightStreaming = !ETRT_TENSORRT_8;
inline constexpr bool kHasAliasedOutputs = ETRT_TENSORRT_HAS_ALIASES;

// One extent of nvinfer1::Dims: int32_t before 10.0, int64_t since.
using Extent = std::remove_reference_t<decltype(std::declval<nvinfer1::Dims&>().d[0])>;
static_assert(std::is_same<Extent, int32_t>::value == (ETRT_TENSORRT_8 != 0),
              "nvinfer1::Dims holds int32_t extents in 8.6 and int64_t from 10.0 on");
static_assert(nvinfer1::Dims::MAX_DIMS == kMaxRank, "etrt::Shape must hold exactly what nvinfer1::Dims holds");

// The NvInfer calls' names, for messages.
#if ETRT_TENSORRT_8
constexpr const char* kDeviceMemorySizeCall = "getDeviceMemorySize";
constexpr const char* kSetDeviceMemoryCall = "setDeviceMemory";
#else
constexpr const char* kDeviceMemorySizeCall = "getDeviceMemorySizeV2";
constexpr const char* kSetDeviceMemoryCall = "setDeviceMemoryV2";
#endif
inline const char* create_context_call(bool user_managed_memory) {
#if ETRT_TENSORRT_8
  return user_managed_memory ? "createExecutionContextWithoutDeviceMemory()" : "createExecutionContext()";
#else
  return user_managed_memory ? "createExecutionContext(kUSER_MANAGED)" : "createExecutionContext(kSTATIC)";
#endif
}

// `shape` as Dims; false when an extent does not fit Extent (only possible on 8.6: above 2^31 - 1).
inline bool to_dims(const Shape& shape, nvinfer1::Dims* out) {
  out->nbDims = shape.rank;
  for (int32_t i = 0; i < shape.rank; ++i) {
    if (shape.d[i] > std::numeric_limits<Extent>::max() || shape.d[i] < std::numeric_limits<Extent>::min())
      return false;
    out->d[i] = static_cast<Extent>(shape.d[i]);
  }
  return true;
}

// Scratch memory one context needs, for the largest profile; negative or 0 when TensorRT reports none.
inline int64_t device_memory_size(const nvinfer1::ICudaEngine& engine) {
#if ETRT_TENSORRT_8
  const size_t size = engine.getDeviceMemorySize();
  return size > static_cast<size_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                         : static_cast<int64_t>(size);
#else
  return engine.getDeviceMemorySizeV2();
#endif
}

// A new context: with TensorRT's own scratch memory, or none until set_device_memory.
inline nvinfer1::IExecutionContext* create_context(nvinfer1::ICudaEngine& engine, bool user_managed_memory) {
#if ETRT_TENSORRT_8
  return user_managed_memory ? engine.createExecutionContextWithoutDeviceMemory() : engine.createExecutionContext();
#else
  return engine.createExecutionContext(user_managed_memory
                                           ? nvinfer1::ExecutionContextAllocationStrategy::kUSER_MANAGED
                                           : nvinfer1::ExecutionContextAllocationStrategy::kSTATIC);
#endif
}

// Whether execution contexts of NVIDIA's `engine` may hold one optimization profile at once (TensorRT's profile
// sharing). From 10.0 on always. TensorRT 8.6 has no query. A second context created while a first holds profile 0
// starts without a profile (-1; createExecutionContext's documentation) -- or, for an engine built with
// PreviewFeature::kPROFILE_SHARING_0806, possibly with profile 0 -- and may then choose profile 0 only if the engine
// was built with that flag. So two contexts without memory are created; the second's profile is read and, if it has
// none, it chooses profile 0, a refusal going to a recorder of its own (a refusal is the answer, not an error for
// the engine's logger). Call it while the engine has no other context. Any failure answers false, which only costs a
// session its own engine.
inline bool probe_profile_sharing(nvinfer1::ICudaEngine& engine) {
#if ETRT_TENSORRT_8
  ErrorRecorder refusals;  // outlives both contexts
  std::unique_ptr<nvinfer1::IExecutionContext> first(create_context(engine, /*user_managed_memory=*/true));
  std::unique_ptr<nvinfer1::IExecutionContext> second(create_context(engine, /*user_managed_memory=*/true));
  if (first == nullptr || second == nullptr) return false;
  if (second->getOptimizationProfile() == 0) return true;
  second->setErrorRecorder(&refusals);
  const bool chosen = second->setOptimizationProfileAsync(0, nullptr);
  return cudaStreamSynchronize(nullptr) == cudaSuccess && chosen;
#else
  (void)engine;
  return true;
#endif
}

// Hands a context created without scratch memory `size` bytes at `memory` (the caller checked the size).
inline void set_device_memory(nvinfer1::IExecutionContext& context, void* memory, int64_t size) {
#if ETRT_TENSORRT_8
  (void)size;
  context.setDeviceMemory(memory);
#else
  context.setDeviceMemoryV2(memory, size);
#endif
}

// The IO tensor's layout under `profile` (8.6 has one layout for all profiles).
inline nvinfer1::TensorFormat tensor_format(const nvinfer1::ICudaEngine& engine, const char* name, int32_t profile) {
#if ETRT_TENSORRT_8
  (void)profile;
  return engine.getTensorFormat(name);
#else
  return engine.getTensorFormat(name, profile);
#endif
}
inline const char* tensor_format_desc(const nvinfer1::ICudaEngine& engine, const char* name, int32_t profile) {
#if ETRT_TENSORRT_8
  (void)profile;
  return engine.getTensorFormatDesc(name);
#else
  return engine.getTensorFormatDesc(name, profile);
#endif
}

// Weight streaming (10.1+). Under 8.6 no engine has streamable weights: the size is 0, so the backend ignores a
// budget as it does for any engine built without kWEIGHT_STREAMING, and setting one is refused.
inline int64_t streamable_weights_size(const nvinfer1::ICudaEngine& engine) {
#if ETRT_TENSORRT_8
  (void)engine;
  return 0;
#else
  return engine.getStreamableWeightsSize();
#endif
}
inline int64_t weight_streaming_automatic_budget(const nvinfer1::ICudaEngine& engine) {
#if ETRT_TENSORRT_8
  (void)engine;
  return 0;
#else
  return engine.getWeightStreamingAutomaticBudget();
#endif
}
inline int64_t weight_streaming_budget(const nvinfer1::ICudaEngine& engine) {
#if ETRT_TENSORRT_8
  (void)engine;
  return 0;  // what 10.x reports for an engine without streamable weights: getStreamableWeightsSize(), 0
#else
  return engine.getWeightStreamingBudgetV2();
#endif
}
// The scratch each context needs to stage streamed weights under the current budget; getDeviceMemorySizeV2()
// includes it ("the user can provide the additional memory through getDeviceMemorySizeV2() and
// IExecutionContext::setDeviceMemoryV2()"). 0 when the engine does not stream, and always under 8.6.
inline int64_t weight_streaming_scratch_memory_size(const nvinfer1::ICudaEngine& engine) {
#if ETRT_TENSORRT_8
  (void)engine;
  return 0;
#else
  return engine.getWeightStreamingScratchMemorySize();
#endif
}
// False when TensorRT refuses the budget. 8.6 has nothing to call (kHasWeightStreaming): the adapter refuses there
// before asking, and this refuses too.
inline bool set_weight_streaming_budget(nvinfer1::ICudaEngine& engine, int64_t bytes) {
#if ETRT_TENSORRT_8
  (void)engine;
  (void)bytes;
  return false;
#else
  return engine.setWeightStreamingBudgetV2(bytes);
#endif
}

// The input TensorRT writes output `name` into (getAliasedInputTensor), or null: none, or a version without aliased
// outputs (kHasAliasedOutputs).
inline const char* aliased_input_tensor(const nvinfer1::ICudaEngine& engine, const char* name) {
#if ETRT_TENSORRT_HAS_ALIASES
  return engine.getAliasedInputTensor(name);
#else
  (void)engine;
  (void)name;
  return nullptr;
#endif
}

}  // namespace etrt::engine::tensorrt::nv
