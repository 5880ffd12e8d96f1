#include "integrated_device.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "libetrt_caller.h"

namespace etrt::integrated_device {
namespace {

std::atomic<bool> g_on{false};
std::atomic<int> g_answered{0};

}  // namespace

void simulate(bool on) { g_on.store(on); }
int answered() { return g_answered.load(); }

}  // namespace etrt::integrated_device

extern "C" cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  using Real = cudaError_t(CUDARTAPI*)(int*, enum cudaDeviceAttr, int);
  static const auto real =
      reinterpret_cast<Real>(etrt::testing::next_definition("cudaDeviceGetAttribute", "integrated_device"));
  const cudaError_t status = real(value, attr, device);
  if (status != cudaSuccess || !etrt::integrated_device::g_on.load() ||
      !etrt::testing::from_libetrt(__builtin_return_address(0)))
    return status;
  switch (attr) {
    case cudaDevAttrIntegrated:
    case cudaDevAttrCanUseHostPointerForRegisteredMem:
      *value = 1;
      break;
    case cudaDevAttrPageableMemoryAccess:
      *value = 0;
      break;
    default:
      return status;
  }
  etrt::integrated_device::g_answered.fetch_add(1);
  return status;
}
