#pragma once
// What libetrt decided about its CUDA device allocator when it loaded (cuda_allocator.cpp in the CUDA build,
// cuda_allocator_none.cpp in the build without CUDA); readable through get_option("TensorRTBackend",
// "cuda_allocator") (etrt/options.h).

#include "backend/cuda_allocator_policy.h"

namespace etrt::backend {

CudaAllocatorRegistration cuda_allocator_registration();

}  // namespace etrt::backend
