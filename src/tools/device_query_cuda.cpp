// inspection.h, build with CUDA: what the machine's devices hold.
#include <cuda_runtime_api.h>

#include "tools/inspection.h"

namespace etrt::tools {

bool built_with_cuda() { return true; }

Error device_memory(int device, uint64_t* bytes, Diagnostic& why) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return fail(why, Error::NotSupported, "no CUDA device can be used (cudaGetDeviceCount: %s)",
                cudaGetErrorName(status));
  }
  if (device < 0 || device >= count)
    return fail(why, Error::NotSupported, "CUDA device %d is not present: this machine has %d", device, count);
  cudaDeviceProp properties{};
  status = cudaGetDeviceProperties(&properties, device);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return fail(why, Error::NotSupported, "cudaGetDeviceProperties(%d) failed: %s", device, cudaGetErrorName(status));
  }
  *bytes = static_cast<uint64_t>(properties.totalGlobalMem);
  return Error::Ok;
}

}  // namespace etrt::tools
