#pragma once
// The TensorRT adapter: the one implementation of the engine seam
// (engine/engine.h). This header needs neither NvInfer nor CUDA, so the backend
// includes it without TensorRT's include paths. See docs/tensorrt.md.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/engine.h"

namespace etrt::engine::tensorrt {

// Deserializes a TensorRT plan (the engine bytes of a TR01/TR02 blob) on the
// current CUDA device, which the caller has already made `device_id`; the
// adapter records `device_id` and checks it is current. TensorRT copies what
// it needs, so `data` may be freed once this returns.
//
// Refuses, with the reason in `why`, a plan TensorRT cannot load and an
// engine with an IO tensor etrt cannot bind: an element type outside
// engine::DataType (FP8, INT4, FP4, E8M0) or a non-linear (vectorized) layout.
// Shape-tensor inputs are described (TensorDesc::is_shape_tensor), not
// refused: the backend refuses them with its own message.
//
// The returned engine's contexts share ownership of the TensorRT runtime and
// engine, so TensorRT's order (runtime outlives engine outlives contexts) holds
// whatever order the caller destroys them in.
//
// InvalidArgument for bytes TensorRT cannot deserialize, NotSupported for an engine etrt cannot bind, Internal when
// TensorRT itself fails; `*out` is set on success only.
[[nodiscard]] Error deserialize(const void* data, size_t size, int64_t device_id, std::unique_ptr<Engine>* out,
                                Diagnostic& why);

// What the engine's TensorRT runtime is given before it deserializes the plan.
struct RuntimeOptions {
  // IRuntime::setEngineHostCodeAllowed: a version-compatible plan that embeds its lean runtime needs it.
  bool allow_host_code = false;
  // Plugin libraries to load first (IPluginRegistry::loadLibrary), paths separated by ':'; null or "" for none.
  const char* plugin_libraries = nullptr;
};
// As above, with `options`; InvalidArgument naming a plugin library that does not load.
[[nodiscard]] Error deserialize(const void* data, size_t size, int64_t device_id, const RuntimeOptions& options,
                                std::unique_ptr<Engine>* out, Diagnostic& why);

// True when deserialize() needs the engine's CUDA device current (NVIDIA's TensorRT deserializes onto the current
// device). The GPU-free implementation never does, so CUDA builds load its host engines on machines without a GPU.
// Answered by the implementation the build links (nvinfer_nvidia.cpp, nvinfer_gpufree.cpp).
bool deserializes_on_device();

}  // namespace etrt::engine::tensorrt
