// Glue (ExecuTorch): registering etrt's CUDA device allocator, the same way in both builds (cuda_allocator.h).
#include <cstdlib>

#include <executorch/runtime/core/device_allocator.h>
#include <executorch/runtime/platform/log.h>

#include "backend/glue/cuda_allocator.h"
#include "backend/policy/cuda_allocator_policy.h"

namespace etrt::backend {

CudaAllocatorRegistration register_cuda_allocator(executorch::runtime::DeviceAllocator* allocator, bool cuda_build) {
  using executorch::runtime::etensor::DeviceType;
  // Read once, here: the decision holds for the life of the process.
  const char* variable = std::getenv(kRegisterCudaAllocatorVariable);
  const bool present = executorch::runtime::get_device_allocator(DeviceType::CUDA) != nullptr;
  const CudaAllocatorDecision decision = decide_cuda_allocator_registration(cuda_build, present, variable);
  if (decision.variable_unrecognized)
    ET_LOG(Error, "etrt: %s='%s' is neither 0/false/off/no nor 1/true/on/yes; ignored (etrt registers its CUDA "
                  "device allocator unless another library did)",
           kRegisterCudaAllocatorVariable, variable);
  if (decision.registration == CudaAllocatorRegistration::kRegister ||
      decision.registration == CudaAllocatorRegistration::kNoCudaInThisBuild)
    executorch::runtime::register_device_allocator(allocator);
  return decision.registration;
}

}  // namespace etrt::backend
