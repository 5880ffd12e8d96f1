// nvinfer_implementation.h for NVIDIA's TensorRT (a build with -DTENSORRT_ROOT): every engine runs on its GPU, and
// deserializeCudaEngine places it on the current device.
#include "engine/tensorrt/nvinfer_compat.h"
#include "engine/tensorrt/nvinfer_implementation.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::engine::tensorrt {

bool nv::runs_on_host(const nvinfer1::ICudaEngine& /*engine*/) { return false; }

bool nv::shares_profiles(nvinfer1::ICudaEngine& engine) { return probe_profile_sharing(engine); }

bool deserializes_on_device() { return true; }

}  // namespace etrt::engine::tensorrt
