// Device plumbing over the CUDA runtime (device.h, device_cuda.h): where a tensor's memory lives as the delegate's
// device sees it, and what a device reaches of host memory -- the facts binding_policy.h decides on.
#include <cuda_runtime_api.h>

#include <executorch/runtime/core/portable_type/device.h>

#include "backend/device/device_cuda.h"

namespace etrt::backend {

// Where `data` lives, as device `delegate_device` sees it. ExecuTorch 1.5 tensors can say so themselves
// (Tensor::device_type()); a tensor that says CPU may still point at device memory (a runner's buffer shared through
// an unplanned input or set_output), so CUDA is asked then. Asked on every call: a cached answer would go stale when
// a runner registers a buffer (cudaHostRegister turns pageable memory pinned at the same address) or an address is
// reused.
MemoryPlace place_of_pointer(const executorch::aten::Tensor& t, const void* data, int delegate_device, int* device) {
  *device = -1;
  if (t.device_type() == executorch::runtime::etensor::DeviceType::CUDA) {
    *device = t.device_index();
    return *device == delegate_device ? MemoryPlace::kDevice : MemoryPlace::kOtherDevice;
  }
  cudaPointerAttributes attributes{};
  if (data == nullptr || cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    // A pointer CUDA knows nothing about is host memory; the failed query leaves an error to clear.
    (void)cudaGetLastError();
    return MemoryPlace::kPageableHost;
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      *device = attributes.device;
      return attributes.device == delegate_device ? MemoryPlace::kDevice : MemoryPlace::kOtherDevice;
    case cudaMemoryTypeManaged:
      return MemoryPlace::kManaged;
    case cudaMemoryTypeHost:
      // Whether the device addresses it at this address is the device's trait (EngineReach::pinned_host): with
      // cudaDevAttrCanUseHostPointerForRegisteredMem every pinned buffer has one address on both sides.
      return MemoryPlace::kPinnedHost;
    default:
      return MemoryPlace::kPageableHost;
  }
}

// What `device` says about reaching host memory. An attribute CUDA does not answer reads as "no": the device is then
// treated as discrete, which stages host memory and is always correct.
DeviceTraits query_device_traits(int device) {
  const auto ask = [device](cudaDeviceAttr attribute) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return value != 0;
  };
  DeviceTraits traits;
  traits.integrated = ask(cudaDevAttrIntegrated);
  traits.host_pointer_for_registered_mem = ask(cudaDevAttrCanUseHostPointerForRegisteredMem);
  traits.pageable_memory_access = ask(cudaDevAttrPageableMemoryAccess);
  return traits;
}

}  // namespace etrt::backend
