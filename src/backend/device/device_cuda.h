#pragma once
// Mechanism (the CUDA runtime): what the device_*_cuda.cpp files share -- the opaque handles of device.h as CUDA's
// types, CUDA's words for a failure, and where a tensor's memory lives as a device sees it. Private to them; the
// glue's interface is device.h.
#include <cuda_runtime_api.h>

#include <string>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "backend/device/device.h"
#include "backend/policy/binding_policy.h"

namespace etrt::backend {

inline cudaStream_t as_stream(engine::StreamHandle s) { return static_cast<cudaStream_t>(s); }
inline cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }

// "cudaErrorInvalidValue (invalid argument)"; also clears the thread's last error, so a failure reported here
// does not resurface from an unrelated later call (sticky errors stay regardless).
inline std::string cuda_text(cudaError_t status) {
  (void)cudaGetLastError();
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

// The special handles name a stream relative to the calling thread or the current device; they have no device
// of their own to check.
inline bool is_special_stream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

inline bool is_host(MemoryPlace place) {
  return place == MemoryPlace::kPageableHost || place == MemoryPlace::kPinnedHost;
}

// Where `data` (tensor `t`'s memory) lives, as device `delegate_device` sees it; `device` receives the device of
// device memory (else -1). device_place_cuda.cpp.
MemoryPlace place_of_pointer(const executorch::aten::Tensor& t, const void* data, int delegate_device, int* device);

// What `device` says about reaching host memory (device_place_cuda.cpp).
DeviceTraits query_device_traits(int device);

}  // namespace etrt::backend
