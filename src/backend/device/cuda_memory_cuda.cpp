// The CUDA calls behind etrt's CUDA device allocator (cuda_memory.h).
#include <cuda_runtime_api.h>

#include <cstdio>

#include "backend/device/cuda_memory.h"

namespace etrt::backend {

namespace {

const char* cuda_name(cudaError_t status) {
  (void)cudaGetLastError();  // a reported failure must not resurface from an unrelated later call
  return cudaGetErrorName(status);
}

// Makes `device` current while it lives and restores the previous device.
class CurrentDevice {
 public:
  CurrentDevice() = default;
  ~CurrentDevice() {
    if (restore_) (void)cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

  [[nodiscard]] Error make_current(int device, const char* what, Diagnostic& why) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess)
      return fail(why, Error::NotSupported,
                  "%s on CUDA device %d, but no CUDA device can be used (cudaGetDeviceCount: %s, %s); run the "
                  "program on a machine with a GPU and its driver, or export it without a CUDA target device",
                  what, device, cuda_name(status), cudaGetErrorString(status));
    if (device < 0 || device >= count)
      return fail(why, Error::NotSupported,
                  "%s on CUDA device %d, but this machine has %d CUDA device(s); export the program for a device it "
                  "has, or choose the GPU with CUDA_VISIBLE_DEVICES",
                  what, device, count);
    status = cudaGetDevice(&previous_);
    if (status == cudaSuccess && previous_ != device) {
      status = cudaSetDevice(device);
      restore_ = status == cudaSuccess;
    }
    if (status != cudaSuccess)
      return fail(why, Error::Internal, "%s: could not make CUDA device %d current: %s", what, device,
                  cuda_name(status));
    return Error::Ok;
  }

 private:
  int previous_ = -1;
  bool restore_ = false;
};

}  // namespace

Error allocate_cuda(size_t bytes, int device, size_t alignment, void** out, Diagnostic& why) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kCudaMallocAlignment)
    return fail(why, Error::InvalidArgument,
                "allocating %zu bytes on CUDA device %d with alignment %zu: the alignment must be a power of two "
                "no larger than %zu (what cudaMalloc guarantees)",
                bytes, device, alignment, kCudaMallocAlignment);
  CurrentDevice current;
  char what[96];
  std::snprintf(what, sizeof what, "allocating %zu bytes", bytes);
  const Error made = current.make_current(device, what, why);
  if (made != Error::Ok) return made;
  void* data = nullptr;
  // cudaMalloc of 0 bytes returns null; ExecuTorch still wants a distinct pointer, so ask for one byte.
  const cudaError_t status = cudaMalloc(&data, bytes == 0 ? 1 : bytes);
  if (status != cudaSuccess)
    return fail(why, status == cudaErrorMemoryAllocation ? Error::MemoryAllocationFailed : Error::Internal,
                "allocating %zu bytes on CUDA device %d failed (cudaMalloc: %s, %s)%s", bytes, device,
                cuda_name(status), cudaGetErrorString(status),
                status == cudaErrorMemoryAllocation ? "; free device memory or use a smaller program" : "");
  *out = data;
  return Error::Ok;
}

void free_cuda(void* data, int device) {
  if (data == nullptr) return;
  CurrentDevice current;
  Diagnostic ignored;
  (void)current.make_current(device, "freeing", ignored);
  (void)cudaFree(data);
}

Error copy_cuda(void* dst, const void* src, size_t bytes, int device, CopyDirection direction, void* stream,
                Diagnostic& why) {
  if (bytes == 0) return Error::Ok;
  const bool to_device = direction == CopyDirection::kHostToDevice;
  const char* what = to_device ? "copying to memory" : "copying from memory";
  CurrentDevice current;
  const Error made = current.make_current(device, what, why);
  if (made != Error::Ok) return made;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t status =
      cudaMemcpyAsync(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s);
  const char* call = "cudaMemcpyAsync";
  if (status == cudaSuccess) {
    status = cudaStreamSynchronize(s);
    call = "cudaStreamSynchronize";
  }
  if (status != cudaSuccess)
    return fail(why, Error::Internal, "copying %zu bytes %s CUDA device %d failed (%s: %s, %s)", bytes,
                to_device ? "to" : "from", device, call, cuda_name(status), cudaGetErrorString(status));
  return Error::Ok;
}

}  // namespace etrt::backend
