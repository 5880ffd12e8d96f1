#include "gpu_test_util.h"

#include <cuda_runtime.h>

namespace etrt::gpu_test {

namespace {

__device__ uint64_t global_time_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t ns) {
  const uint64_t start = global_time_ns();
  while (global_time_ns() - start < ns) {
  }
}

}  // namespace

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

DeviceMemory::DeviceMemory(size_t bytes) : size_(bytes) {
  const cudaError_t status = cudaMalloc(&data_, bytes);
  EXPECT_EQ(status, cudaSuccess) << "cudaMalloc(" << bytes << "): " << cudaGetErrorString(status);
  if (status != cudaSuccess) {
    data_ = nullptr;
    size_ = 0;
  }
}

DeviceMemory::~DeviceMemory() {
  if (data_ != nullptr) EXPECT_EQ(cudaFree(data_), cudaSuccess);
}

Stream::Stream() {
  const cudaError_t status = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  EXPECT_EQ(status, cudaSuccess) << cudaGetErrorString(status);
}

Stream::~Stream() {
  if (stream_ != nullptr) {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }
}

void spin(cudaStream_t stream, int milliseconds) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<uint64_t>(milliseconds) * 1000000u);
  const cudaError_t status = cudaGetLastError();
  EXPECT_EQ(status, cudaSuccess) << "spin kernel launch: " << cudaGetErrorString(status);
}

bool busy(cudaStream_t stream) {
  const cudaError_t status = cudaStreamQuery(stream);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return true;
  }
  EXPECT_EQ(status, cudaSuccess) << cudaGetErrorString(status);
  return false;
}

}  // namespace etrt::gpu_test
