// Glue (ExecuTorch), build without CUDA: a CUDA device allocator that refuses every request, registered as the CUDA
// build registers its own (cuda_allocator_policy.h). A program exported with a CUDA target device (every
// Torch-TensorRT export) then fails at Module::load_method with etrt's reason in last_error_message() and the log --
// this libetrt has no CUDA, and what to use instead -- where ExecuTorch alone says only "No device allocator
// registered for device type 1".
#include <executorch/runtime/core/device_allocator.h>

#include "backend/glue/cuda_allocator.h"
#include "backend/glue/last_error.h"
#include "common/diagnostic.h"

namespace etrt::backend {
namespace {

using executorch::runtime::DeviceAllocator;
using executorch::runtime::Error;
using executorch::runtime::Result;
using executorch::runtime::etensor::DeviceIndex;
using executorch::runtime::etensor::DeviceType;

constexpr char kWho[] = "etrt's CUDA device allocator";

// `verb` `nbytes` bytes `where` CUDA device `index`: "allocating 64 bytes on CUDA device 0".
Error refuse(const char* verb, size_t nbytes, const char* where, DeviceIndex index) {
  Diagnostic why;
  why.append("%s %zu bytes %s CUDA device %d for a program that places memory on CUDA (one exported with a "
             "target_device compile spec, as Torch-TensorRT's partitioner always adds): this libetrt was built "
             "without CUDA and has no CUDA memory. Run the program with a CUDA build of etrt (-DETRT_WITH_CUDA=ON; "
             "pip: ETRT_CMAKE_ARGS=\"-DETRT_WITH_CUDA=ON\" pip install ./python) on a machine with a GPU, or export it "
             "without the target_device compile spec",
             verb, nbytes, where, static_cast<int>(index));
  report_error_of(kWho, why.c_str());
  return Error::NotSupported;
}

class RefusingCudaAllocator final : public DeviceAllocator {
 public:
  Result<void*> allocate(size_t nbytes, DeviceIndex index, size_t /*alignment*/) override {
    return refuse("allocating", nbytes, "on", index);
  }

  // Nothing was ever given.
  void deallocate(void* /*ptr*/, DeviceIndex /*index*/) override {}

  Error copy_host_to_device(void* /*dst*/, const void* /*src*/, size_t nbytes, DeviceIndex index) override {
    return refuse("copying", nbytes, "of host memory to", index);
  }

  Error copy_device_to_host(void* /*dst*/, const void* /*src*/, size_t nbytes, DeviceIndex index) override {
    return refuse("copying", nbytes, "to host memory from", index);
  }

  DeviceType device_type() const override { return DeviceType::CUDA; }
};

RefusingCudaAllocator g_allocator;

const CudaAllocatorRegistration g_registration = register_cuda_allocator(&g_allocator, /*cuda_build=*/false);

}  // namespace

CudaAllocatorRegistration cuda_allocator_registration() { return g_registration; }

}  // namespace etrt::backend
