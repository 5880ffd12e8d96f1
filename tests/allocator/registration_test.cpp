// What libetrt does about a CUDA device allocator when it loads, seen from a process that links it: the CUDA build
// registers etrt's, the build without CUDA one that refuses every request naming the fix; neither registers one with
// ETRT_REGISTER_CUDA_ALLOCATOR=0 (a second CTest run of this executable). Runs without a GPU: the allocator touches
// CUDA only when asked for memory, and then fails with a reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/device_allocator.h>

#include "etrt/options.h"
#include "etrt/report.h"

#if ETRT_TEST_CUDA_BUILD
#include <cuda_runtime_api.h>
#endif

namespace etrt {
namespace {

namespace et = executorch::runtime;
using et::etensor::DeviceType;
using testing::HasSubstr;

int allocator_state() {
  clear_last_error();  // also keeps libetrt linked in: the registration is what it does when it loads
  et::BackendOption option[1];
  std::strcpy(option[0].key, kCudaAllocatorState);
  EXPECT_EQ(et::get_option("TensorRTBackend", et::Span<et::BackendOption>(option, 1)), et::Error::Ok);
  return std::get<int>(option[0].value);
}

bool opted_out() {
  const char* v = std::getenv("ETRT_REGISTER_CUDA_ALLOCATOR");
  return v != nullptr && std::strcmp(v, "0") == 0;
}

// Both builds register an allocator for CUDA unless turned off: the CUDA build its own, the build without CUDA one
// that refuses (kCudaAllocatorNoneInThisBuild: no CUDA memory here).
TEST(CudaAllocatorRegistration, EachBuildRegistersItsAllocatorUnlessTurnedOff) {
  if (opted_out()) {
    EXPECT_EQ(allocator_state(), kCudaAllocatorOptedOut);
    EXPECT_EQ(et::get_device_allocator(DeviceType::CUDA), nullptr);
  } else {
    EXPECT_EQ(allocator_state(), ETRT_TEST_CUDA_BUILD ? kCudaAllocatorRegistered : kCudaAllocatorNoneInThisBuild);
    ASSERT_NE(et::get_device_allocator(DeviceType::CUDA), nullptr);
    EXPECT_EQ(et::get_device_allocator(DeviceType::CUDA)->device_type(), DeviceType::CUDA);
  }
}

#if ETRT_TEST_CUDA_BUILD

bool machine_has_a_gpu() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return ok;
}

TEST(CudaAllocatorRegistration, AllocatingWithoutAGpuFailsWithAReasonAndWithAGpuGivesAlignedDeviceMemory) {
  if (opted_out()) return;  // the other run checks that nothing is registered
  et::DeviceAllocator* allocator = et::get_device_allocator(DeviceType::CUDA);
  ASSERT_NE(allocator, nullptr);
  clear_last_error();
  et::Result<void*> memory = allocator->allocate(4096, 0, 16);
  if (!machine_has_a_gpu()) {
    ASSERT_FALSE(memory.ok());
    EXPECT_EQ(memory.error(), et::Error::NotSupported);
    EXPECT_THAT(last_error_message(), HasSubstr("etrt's CUDA device allocator: allocating 4096 bytes on CUDA device 0"));
    EXPECT_THAT(last_error_message(), HasSubstr("no CUDA device can be used"));
    return;
  }
  ASSERT_TRUE(memory.ok()) << last_error_message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*memory) % 256, 0u);
  const float host[4] = {1, 2, 3, 4};
  float back[4] = {};
  ASSERT_EQ(allocator->copy_host_to_device(*memory, host, sizeof host, 0), et::Error::Ok);
  ASSERT_EQ(allocator->copy_device_to_host(back, *memory, sizeof back, 0), et::Error::Ok);
  EXPECT_EQ(std::memcmp(host, back, sizeof host), 0);
  allocator->deallocate(*memory, 0);
}

TEST(CudaAllocatorRegistration, AnAlignmentCudaMallocCannotGiveIsRefused) {
  if (opted_out()) return;  // the other run checks that nothing is registered
  et::DeviceAllocator* allocator = et::get_device_allocator(DeviceType::CUDA);
  ASSERT_NE(allocator, nullptr);
  for (size_t alignment : {size_t{512}, size_t{24}, size_t{0}}) {
    et::Result<void*> memory = allocator->allocate(64, 0, alignment);
    ASSERT_FALSE(memory.ok());
    EXPECT_EQ(memory.error(), et::Error::InvalidArgument);
    EXPECT_THAT(last_error_message(), HasSubstr("must be a power of two no larger than 256")) << alignment;
  }
}

#else

TEST(CudaAllocatorRegistration, EveryRequestToTheRefusingAllocatorSaysThatACudaBuildIsMissing) {
  if (opted_out()) return;  // the other run checks that nothing is registered
  et::DeviceAllocator* allocator = et::get_device_allocator(DeviceType::CUDA);
  ASSERT_NE(allocator, nullptr);
  clear_last_error();
  et::Result<void*> memory = allocator->allocate(1536, 0, 16);
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.error(), et::Error::NotSupported);
  ASSERT_TRUE(has_last_error());
  const std::string message = last_error_message();
  EXPECT_THAT(message, HasSubstr("etrt's CUDA device allocator: allocating 1536 bytes on CUDA device 0"));
  EXPECT_THAT(message, HasSubstr("this libetrt was built without CUDA"));
  EXPECT_THAT(message, HasSubstr("a CUDA build of etrt (-DETRT_WITH_CUDA=ON"));
  EXPECT_THAT(message, HasSubstr("without the target_device compile spec"));
  float host[4] = {};
  clear_last_error();
  EXPECT_EQ(allocator->copy_host_to_device(host, host, sizeof host, 1), et::Error::NotSupported);
  EXPECT_THAT(last_error_message(), HasSubstr("copying 16 bytes of host memory to CUDA device 1"));
  clear_last_error();
  EXPECT_EQ(allocator->copy_device_to_host(host, host, sizeof host, 0), et::Error::NotSupported);
  EXPECT_THAT(last_error_message(), HasSubstr("copying 16 bytes to host memory from CUDA device 0"));
  allocator->deallocate(nullptr, 0);  // nothing was given: a no-op
}

#endif

}  // namespace
}  // namespace etrt
