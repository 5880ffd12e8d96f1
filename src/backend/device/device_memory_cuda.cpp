// Device plumbing over the CUDA runtime (device.h): the buffers an engine's contexts run in and arguments are staged
// through (device memory from cudaMalloc, or aligned host memory for host engines), and synchronous writes into them.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

#include "backend/device/device_cuda.h"
#include "common/error.h"

namespace etrt::backend {

void DeviceBuffer::release() {
  if (kind_ == engine::MemoryKind::kDevice) {
    if (data_ != nullptr) (void)cudaFree(data_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
}

Error DeviceBuffer::allocate(engine::MemoryKind kind, size_t bytes, Diagnostic& why) {
  release();
  kind_ = kind;
  // Never null, even for 0 bytes: TensorRT refuses a null tensor address (engine::io_address_aligned).
  const size_t allocated = bytes == 0 ? 256 : bytes;
  if (kind == engine::MemoryKind::kDevice) {
    const cudaError_t status = cudaMalloc(&data_, allocated);
    if (status != cudaSuccess) {
      data_ = nullptr;
      // Out of memory is MemoryAllocationFailed; anything else (a sticky error, no device) is CUDA failing.
      return fail(why, status == cudaErrorMemoryAllocation ? Error::MemoryAllocationFailed : Error::Internal,
                  "could not allocate %zu bytes of device memory (cudaMalloc): %s", bytes, cuda_text(status).c_str());
    }
  } else {
    // 256-byte alignment matches what cudaMalloc gives, so host and device engines see the same guarantees.
    data_ = std::aligned_alloc(256, (allocated + 255) / 256 * 256);
    if (data_ == nullptr)
      return fail(why, Error::MemoryAllocationFailed, "could not allocate %zu bytes of engine scratch memory", bytes);
  }
  size_ = bytes;
  return Error::Ok;
}

Error fill_buffer(const DeviceBuffer& buffer, const void* data, size_t bytes, Diagnostic& why) {
  if (buffer.kind() != engine::MemoryKind::kDevice) {
    if (data != nullptr)
      std::memcpy(buffer.data(), data, bytes);
    else
      std::memset(buffer.data(), 0, bytes);
    return Error::Ok;
  }
  // On the legacy default stream, then waited for: executions on any stream (a caller's, the per-thread one) find
  // the state written.
  cudaError_t status = data != nullptr
                           ? cudaMemcpyAsync(buffer.data(), data, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy)
                           : cudaMemsetAsync(buffer.data(), 0, bytes, cudaStreamLegacy);
  if (status == cudaSuccess) status = cudaStreamSynchronize(cudaStreamLegacy);
  if (status != cudaSuccess)
    return fail(why, Error::Internal, "writing %zu bytes of state into device memory failed: %s", bytes,
                cuda_text(status).c_str());
  return Error::Ok;
}

}  // namespace etrt::backend
