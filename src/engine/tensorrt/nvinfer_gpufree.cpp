// nvinfer_implementation.h for the project's GPU-free NvInfer (nvinfer/, the default build): its engines say whether
// they run on the host (an extension TensorRT does not have), and it deserializes anywhere -- a CUDA-mode engine
// uploads its weights at context creation -- so CUDA builds load its host engines on machines without a GPU.
#include "engine/tensorrt/nvinfer_implementation.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::engine::tensorrt {

bool nv::runs_on_host(const nvinfer1::ICudaEngine& engine) { return etrt_gpufree_engineRunsOnHost(&engine); }

// The GPU-free NvInfer models both TensorRT versions' rules and says which the engine follows.
bool nv::shares_profiles(nvinfer1::ICudaEngine& engine) { return etrt_gpufree_engineSharesProfiles(&engine); }

bool deserializes_on_device() { return false; }

}  // namespace etrt::engine::tensorrt
