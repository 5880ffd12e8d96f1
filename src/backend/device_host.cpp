// Host-only device plumbing: the build without CUDA. Device engines are
// refused at load (see delegate_loader.cpp), so only host memory exists here.
#include <cstdlib>
#include <new>

#include "backend/device.h"

namespace etrt::backend {

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

bool DeviceBuffer::allocate(engine::MemoryKind kind, size_t bytes, std::string* error) {
  release();
  if (kind != engine::MemoryKind::kHost) {
    *error = "device memory requested, but this etrt build has no CUDA path; rebuild with -DETRT_WITH_CUDA=ON";
    return false;
  }
  kind_ = kind;
  if (bytes == 0) return true;
  // 256-byte alignment matches what cudaMalloc gives, so host and device
  // engines see the same alignment guarantees.
  const size_t rounded = (bytes + 255) / 256 * 256;
  data_ = std::aligned_alloc(256, rounded);
  if (data_ == nullptr) {
    *error = "could not allocate " + std::to_string(bytes) + " bytes of engine scratch memory";
    return false;
  }
  size_ = bytes;
  return true;
}

bool memory_kind_supported(engine::MemoryKind kind) { return kind == engine::MemoryKind::kHost; }

}  // namespace etrt::backend
