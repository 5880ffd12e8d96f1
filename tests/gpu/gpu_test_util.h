#pragma once
// Small CUDA helpers for the GPU suite: owned device memory and streams, and a
// kernel that keeps a stream busy for a while, so a test can issue work
// "while earlier work is still running" without racing a timer on the host.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace etrt::gpu_test {

// Fails the current test with CUDA's words for `status`.
#define ETRT_CUDA_OK(expr)                                                                     \
  do {                                                                                         \
    const cudaError_t etrt_status_ = (expr);                                                   \
    ASSERT_EQ(etrt_status_, cudaSuccess) << #expr << ": " << cudaGetErrorString(etrt_status_); \
  } while (0)

int device_count();

class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(size_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
void upload(const DeviceMemory& dst, const std::vector<T>& src) {
  ASSERT_LE(src.size() * sizeof(T), dst.size());
  ETRT_CUDA_OK(cudaMemcpy(dst.data(), src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
}

template <typename T>
std::vector<T> download(const void* src, size_t count) {
  std::vector<T> out(count);
  const cudaError_t status = cudaMemcpy(out.data(), src, count * sizeof(T), cudaMemcpyDeviceToHost);
  EXPECT_EQ(status, cudaSuccess) << cudaGetErrorString(status);
  return out;
}

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }  // NOLINT: a stream is used where CUDA wants one

 private:
  cudaStream_t stream_ = nullptr;
};

// Enqueues a kernel on `stream` that returns `milliseconds` of wall time after it starts (%globaltimer, so the
// wait holds under compute-sanitizer, which slows kernels but not the clock).
void spin(cudaStream_t stream, int milliseconds);

// True while `stream` still has work queued or running.
bool busy(cudaStream_t stream);

// Set (ETRT_GPU_TESTS_UNDER_SANITIZER=1) when compute-sanitizer runs the suite: it slows host calls so much that a
// spinning kernel no longer outlasts them, so only the checks that the host did *not* wait are skipped.
inline bool under_sanitizer() { return std::getenv("ETRT_GPU_TESTS_UNDER_SANITIZER") != nullptr; }

// The host returned while `stream` still had work: it did not synchronize.
#define EXPECT_STILL_BUSY(stream, why)                    \
  do {                                                    \
    if (!::etrt::gpu_test::under_sanitizer()) {           \
      EXPECT_TRUE(::etrt::gpu_test::busy(stream)) << why; \
    }                                                     \
  } while (0)

}  // namespace etrt::gpu_test
