// The coexistence rule: an allocator another library registered for CUDA before libetrt loads (ExecuTorch's CUDA
// backend, here a stand-in) is kept, and libetrt's load neither aborts nor replaces it. This executable does not
// link libetrt: it registers its allocator first, then dlopens libetrt (ETRT_LIBRARY_PATH).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/device_allocator.h>

#include "etrt/options.h"

namespace {

namespace et = executorch::runtime;
using et::etensor::DeviceIndex;
using et::etensor::DeviceType;

class StandIn final : public et::DeviceAllocator {
 public:
  et::Result<void*> allocate(size_t, DeviceIndex, size_t) override { return et::Error::NotSupported; }
  void deallocate(void*, DeviceIndex) override {}
  et::Error copy_host_to_device(void*, const void*, size_t, DeviceIndex) override { return et::Error::NotSupported; }
  et::Error copy_device_to_host(void*, const void*, size_t, DeviceIndex) override { return et::Error::NotSupported; }
  DeviceType device_type() const override { return DeviceType::CUDA; }
};

StandIn g_stand_in;

TEST(CudaAllocatorLoadOrder, AnAllocatorRegisteredBeforeEtrtLoadsIsKept) {
  ASSERT_EQ(et::get_device_allocator(DeviceType::CUDA), nullptr);
  et::register_device_allocator(&g_stand_in);
  void* etrt = dlopen(ETRT_LIBRARY_PATH, RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(etrt, nullptr) << dlerror();
  EXPECT_EQ(et::get_device_allocator(DeviceType::CUDA), &g_stand_in);
  et::BackendOption option[1];
  std::strcpy(option[0].key, etrt::kCudaAllocatorState);
  ASSERT_EQ(et::get_option("TensorRTBackend", et::Span<et::BackendOption>(option, 1)), et::Error::Ok);
  // Both builds: the CUDA build's allocator and the refusing one of the build without CUDA give way alike.
  EXPECT_EQ(std::get<int>(option[0].value), etrt::kCudaAllocatorOtherLibrary);
}

}  // namespace
