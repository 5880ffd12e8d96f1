#pragma once
// Mechanism (the CUDA runtime, nothing of ExecuTorch's): the memory calls behind etrt's CUDA device allocator
// (cuda_allocator.cpp, the glue that registers it with ExecuTorch). Each call makes `device` current and restores
// the previous device; none touches CUDA before it is called, so loading libetrt on a machine without a GPU does
// nothing, and the first allocation there fails with a reason.

#include <cstddef>

#include "common/error.h"

namespace etrt::backend {

// The strongest alignment cudaMalloc guarantees, and so the strongest allocate_cuda() honours.
inline constexpr size_t kCudaMallocAlignment = 256;

// `bytes` of memory on CUDA device `device`, aligned to `alignment` (a power of two, at most kCudaMallocAlignment).
// InvalidArgument for a bad alignment, NotSupported when the machine has no such device (or none at all),
// MemoryAllocationFailed when the device is out of memory, Internal when CUDA fails otherwise.
[[nodiscard]] Error allocate_cuda(size_t bytes, int device, size_t alignment, void** out, Diagnostic& why);

// Frees what allocate_cuda() returned; null is ignored.
void free_cuda(void* data, int device);

enum class CopyDirection { kHostToDevice, kDeviceToHost };

// Copies `bytes` between host memory and memory of `device`, on `stream` (a cudaStream_t; null for the legacy
// stream), and waits for the copy, so the host side may be used as soon as it returns and the copy is ordered after
// whatever ran on that stream. Internal when CUDA fails.
[[nodiscard]] Error copy_cuda(void* dst, const void* src, size_t bytes, int device, CopyDirection direction,
                              void* stream, Diagnostic& why);

}  // namespace etrt::backend
