#include "integrated_device.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace etrt::integrated_device {
namespace {

std::atomic<bool> g_on{false};
std::atomic<int> g_answered{0};

// True when the code at `caller` belongs to libetrt (libetrt.so*, not libetrt_gpufree_nvinfer.so*).
bool from_libetrt(const void* caller) {
  Dl_info info{};
  if (dladdr(caller, &info) == 0 || info.dli_fname == nullptr) return false;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base != nullptr ? base + 1 : info.dli_fname;
  return std::strncmp(base, "libetrt.so", 10) == 0;
}

}  // namespace

void simulate(bool on) { g_on.store(on); }
int answered() { return g_answered.load(); }

}  // namespace etrt::integrated_device

extern "C" cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  using Real = cudaError_t(CUDARTAPI*)(int*, enum cudaDeviceAttr, int);
  static const Real real = [] {
    void* symbol = dlsym(RTLD_NEXT, "cudaDeviceGetAttribute");
    if (symbol == nullptr) {
      std::fprintf(stderr, "integrated_device: libcudart's cudaDeviceGetAttribute not found (%s)\n", dlerror());
      std::abort();
    }
    return reinterpret_cast<Real>(symbol);
  }();
  const cudaError_t status = real(value, attr, device);
  if (status != cudaSuccess || !etrt::integrated_device::g_on.load() ||
      !etrt::integrated_device::from_libetrt(__builtin_return_address(0)))
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
