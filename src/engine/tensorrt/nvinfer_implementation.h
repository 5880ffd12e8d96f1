#pragma once
// What the NvInfer implementation the adapter is built against does beyond TensorRT's API -- the two questions whose
// answers differ between NVIDIA's TensorRT and the project's GPU-free NvInfer (nvinfer/). One source per
// implementation answers them (nvinfer_nvidia.cpp, nvinfer_gpufree.cpp), and the build compiles the one it links, so
// the adapter asks and never tests which implementation it is. deserializes_on_device() is the third answer, declared
// for the backend in tensorrt_engine.h. Private to src/engine/tensorrt/; compiled against NvInfer.

#include <NvInferRuntime.h>

namespace etrt::engine::tensorrt::nv {

// Whether `engine` computes on the calling thread over host memory (the GPU-free implementation's host mode) rather
// than as CUDA kernels over device memory (engine::MemoryKind). Never for NVIDIA's TensorRT.
bool runs_on_host(const nvinfer1::ICudaEngine& engine);

// Whether contexts of `engine` may hold one optimization profile at once (Engine::profiles_shared_across_contexts).
// Call it while the engine has no context.
bool shares_profiles(nvinfer1::ICudaEngine& engine);

}  // namespace etrt::engine::tensorrt::nv
