#pragma once
/// @file
/// The CUDA stream etrt's TensorRT delegates run on, handed over by the caller
/// for the current thread.
///
/// @code
///   cudaStream_t stream = ...;
///   {
///     etrt::CudaStreamGuard on(stream);
///     module.forward(inputs);   // profile switch, copies and enqueue, all on `stream`
///   }
/// @endcode
///
/// A delegate whose engine runs in device memory takes its stream, on every
/// execution, from the first of:
///
///  1. the innermost stream guard on the calling thread. In a build with
///     ExecuTorch's `extension_cuda` (`-DETRT_WITH_EXECUTORCH_CUDA_STREAM=ON`)
///     an etrt::CudaStreamGuard *is* an
///     `executorch::extension::cuda::CallerStreamGuard`, so the two kinds nest
///     as one and the stream reaches every CUDA delegate of the program; in
///     other builds only etrt::CudaStreamGuard is read;
///  2. with no guard, `cudaStreamPerThread`: the calling thread's per-thread
///     default stream on the delegate's device.
///
/// What a delegate promises about that stream (docs/cuda-path.md has the
/// details): `forward()` returns once no host memory is used any more (host
/// inputs consumed, host outputs written), and without synchronizing the
/// device when all of a delegate's inputs and outputs are device memory: read
/// device outputs after synchronizing the stream. Work a delegate leaves in
/// flight is waited for by its next execution (on any stream) and by its
/// destruction, never by a device-wide synchronization.
///
/// The guard only records the stream for the current thread; it never calls
/// CUDA, so this header needs no CUDA header and the guard exists in every
/// build. The caller owns the stream, which must belong to the delegate's
/// device, for as long as the guard lives and its work runs.

#include <optional>

#include "etrt/export.h"
namespace etrt {

/// RAII: selects `stream` (a `cudaStream_t`; nullptr is the legacy default
/// stream) for etrt's delegates on this thread while the guard lives. Guards
/// nest; leaving a scope restores the selection that was in force when the
/// guard was made. Non-copyable and non-movable: its lifetime is its scope.
class ETRT_API CudaStreamGuard {
 public:
  explicit CudaStreamGuard(void* stream) noexcept;
  ~CudaStreamGuard();

  CudaStreamGuard(const CudaStreamGuard&) = delete;
  CudaStreamGuard& operator=(const CudaStreamGuard&) = delete;
  CudaStreamGuard(CudaStreamGuard&&) = delete;
  CudaStreamGuard& operator=(CudaStreamGuard&&) = delete;

 private:
  // The previous selection, or (with ExecuTorch's extension_cuda) the
  // ExecuTorch guard this one is; one layout for both builds, so the header
  // does not depend on how etrt was configured.
  alignas(alignof(void*)) unsigned char storage_[2 * sizeof(void*)];
};

/// The stream the innermost guard selected on this thread, or std::nullopt
/// when none is in force (delegates then use `cudaStreamPerThread`).
ETRT_API std::optional<void*> current_cuda_stream() noexcept;

}  // namespace etrt
