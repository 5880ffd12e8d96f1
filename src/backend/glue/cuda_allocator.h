#pragma once
// etrt's CUDA device allocator and what libetrt decided about it when it loaded: cuda_allocator.cpp in the CUDA
// build (an allocator over CUDA), cuda_allocator_none.cpp in the build without CUDA (an allocator that refuses every
// request, naming the fix); both register theirs through register_cuda_allocator() (cuda_allocator_registration.cpp).
// The decision is readable through get_option("TensorRTBackend", "cuda_allocator") (etrt/options.h).

#include "backend/policy/cuda_allocator_policy.h"

namespace executorch::runtime {
class DeviceAllocator;
}  // namespace executorch::runtime

namespace etrt::backend {

// What libetrt decided when it loaded.
CudaAllocatorRegistration cuda_allocator_registration();

// Decides (cuda_allocator_policy.h, from ETRT_REGISTER_CUDA_ALLOCATOR and whether ExecuTorch already has an
// allocator for CUDA) and registers `allocator` with ExecuTorch when the decision says so; logs a value of the
// variable it does not recognize. Called once per process, while libetrt loads, by the build's allocator file.
CudaAllocatorRegistration register_cuda_allocator(executorch::runtime::DeviceAllocator* allocator, bool cuda_build);

}  // namespace etrt::backend
