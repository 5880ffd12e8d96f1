// Glue (ExecuTorch): etrt's CUDA device allocator and its registration when libetrt loads, in the CUDA build.
//
// A program exported with a CUDA target device (every Torch-TensorRT export) plans a buffer on CUDA and copies
// each delegate's inputs and outputs between it and the host (et_copy::_h2d_copy.out / _d2h_copy.out); ExecuTorch
// gets that memory and runs those copies through the DeviceAllocator registered for CUDA. The PyPI wheels register
// none, so etrt does -- unless someone did first, or ETRT_REGISTER_CUDA_ALLOCATOR=0 (cuda_allocator_policy.h).
// The CUDA calls are cuda_memory_cuda.cpp's.
#include <executorch/runtime/core/device_allocator.h>

#include "backend/device/cuda_memory.h"
#include "backend/glue/cuda_allocator.h"
#include "backend/glue/last_error.h"
#include "etrt/stream_guard.h"

namespace etrt::backend {
namespace {

using executorch::runtime::DeviceAllocator;
using executorch::runtime::Result;
using executorch::runtime::etensor::DeviceIndex;
using executorch::runtime::etensor::DeviceType;

constexpr char kWho[] = "etrt's CUDA device allocator";

// The stream the copies go on: the caller's (etrt::CudaStreamGuard), else the calling thread's per-thread stream
// -- the stream etrt's delegates run on, so a copy out of the device follows the delegate call that wrote it.
void* copy_stream() {
  const std::optional<void*> caller = current_cuda_stream();
  // cudaStreamPerThread is ((cudaStream_t)0x2); cuda_memory.h takes the handle opaque.
  return caller ? *caller : reinterpret_cast<void*>(0x2);
}

class CudaDeviceAllocator final : public DeviceAllocator {
 public:
  Result<void*> allocate(size_t nbytes, DeviceIndex index, size_t alignment) override {
    Diagnostic why;
    void* data = nullptr;
    const Error status = allocate_cuda(nbytes, index, alignment, &data, why);
    if (status != Error::Ok) {
      report_error_of(kWho, why.c_str());
      return status;
    }
    return data;
  }

  void deallocate(void* ptr, DeviceIndex index) override { free_cuda(ptr, index); }

  Error copy_host_to_device(void* dst, const void* src, size_t nbytes, DeviceIndex index) override {
    return copy(dst, src, nbytes, index, CopyDirection::kHostToDevice);
  }

  Error copy_device_to_host(void* dst, const void* src, size_t nbytes, DeviceIndex index) override {
    return copy(dst, src, nbytes, index, CopyDirection::kDeviceToHost);
  }

  DeviceType device_type() const override { return DeviceType::CUDA; }

 private:
  static Error copy(void* dst, const void* src, size_t nbytes, DeviceIndex index, CopyDirection direction) {
    Diagnostic why;
    const Error status = copy_cuda(dst, src, nbytes, index, direction, copy_stream(), why);
    if (status != Error::Ok) report_error_of(kWho, why.c_str());
    return status;
  }
};

CudaDeviceAllocator g_allocator;

const CudaAllocatorRegistration g_registration = register_cuda_allocator(&g_allocator, /*cuda_build=*/true);

}  // namespace

CudaAllocatorRegistration cuda_allocator_registration() { return g_registration; }

}  // namespace etrt::backend
