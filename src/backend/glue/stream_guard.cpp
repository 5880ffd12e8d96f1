#include "etrt/stream_guard.h"

#include <new>

#if ETRT_WITH_EXECUTORCH_CUDA_STREAM
#include <executorch/extension/cuda/caller_stream.h>
#endif

namespace etrt {

#if ETRT_WITH_EXECUTORCH_CUDA_STREAM

// One thread-local for both guards: ExecuTorch's, inside its shared library.
// Two selections (ours and ExecuTorch's) could not tell which was made last,
// so an etrt guard nested in a CallerStreamGuard (or the reverse) would not
// win as scopes say it must.
using ExecuTorchGuard = executorch::extension::cuda::CallerStreamGuard;
static_assert(sizeof(ExecuTorchGuard) <= sizeof(CudaStreamGuard),
              "CudaStreamGuard's storage must hold an ExecuTorch CallerStreamGuard");
static_assert(alignof(ExecuTorchGuard) <= alignof(void*), "CallerStreamGuard is over-aligned");

CudaStreamGuard::CudaStreamGuard(void* stream) noexcept {
  new (storage_) ExecuTorchGuard(static_cast<cudaStream_t>(stream));
}

CudaStreamGuard::~CudaStreamGuard() { std::launder(reinterpret_cast<ExecuTorchGuard*>(storage_))->~ExecuTorchGuard(); }

std::optional<void*> current_cuda_stream() noexcept {
  const std::optional<cudaStream_t> stream = executorch::extension::cuda::getCallerStream();
  if (!stream) return std::nullopt;
  return static_cast<void*>(*stream);
}

#else

namespace {
// Like the profile request (thread_state.cpp), this lives in the shared
// library `etrt` exactly once: a copy in a second shared object would be a
// second, unrelated thread-local.
thread_local std::optional<void*> t_current_stream;
}  // namespace

using Previous = std::optional<void*>;
static_assert(sizeof(Previous) <= sizeof(CudaStreamGuard), "CudaStreamGuard's storage must hold the previous stream");

CudaStreamGuard::CudaStreamGuard(void* stream) noexcept {
  new (storage_) Previous(t_current_stream);
  t_current_stream = stream;
}

CudaStreamGuard::~CudaStreamGuard() {
  Previous* previous = std::launder(reinterpret_cast<Previous*>(storage_));
  t_current_stream = *previous;
  previous->~Previous();
}

std::optional<void*> current_cuda_stream() noexcept { return t_current_stream; }

#endif

}  // namespace etrt
