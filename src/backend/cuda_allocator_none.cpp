// Glue, build without CUDA: no CUDA device allocator to register (cuda_allocator_policy.h).
#include "backend/cuda_allocator.h"

namespace etrt::backend {

CudaAllocatorRegistration cuda_allocator_registration() {
  return decide_cuda_allocator_registration(/*cuda_build=*/false, false, nullptr).registration;
}

}  // namespace etrt::backend
