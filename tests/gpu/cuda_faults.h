#pragma once
// Fault injection at the CUDA runtime calls libetrt makes (test tooling, GPU suite only).
//
// The test executable that links cuda_faults.cpp defines the CUDA runtime functions below itself and exports them
// (ENABLE_EXPORTS), so libetrt's calls bind to these definitions first; each forwards to libcudart's own
// (dlsym(RTLD_NEXT)) unless a fault armed for it fires. Only calls made from libetrt count and fail: those of the
// GPU-free NvInfer's CUDA mode and of the test itself pass through untouched.
//
//   cuda_faults::arm("cudaEventRecord");   // libetrt's next cudaEventRecord returns cudaErrorInvalidValue
//   module.forward(inputs);                // -> the backend's error path
//   EXPECT_EQ(cuda_faults::fired(), 1);
//
// The intercepted calls are kFunctions. The library must be linked with the shared CUDA runtime (CUDA::cudart), as
// libetrt is.

#include <cuda_runtime_api.h>

namespace etrt::cuda_faults {

inline constexpr const char* kFunctions[] = {
    "cudaMalloc",           "cudaGetDeviceCount",  "cudaStreamSynchronize",  "cudaEventCreateWithFlags",
    "cudaStreamGetDevice",  "cudaStreamWaitEvent", "cudaMemcpyAsync",        "cudaEventRecord",
    "cudaEventSynchronize", "cudaGraphLaunch",     "cudaStreamBeginCapture", "cudaStreamEndCapture",
    "cudaGraphInstantiate",
};

// Arms one fault: libetrt's `nth` next call (1 = the very next) of `function`, one of kFunctions, returns `error`
// without running (cudaStreamEndCapture runs, since a failed one still ends the capture, and returns no graph).
// Arming again replaces the armed fault.
void arm(const char* function, int nth = 1, cudaError_t error = cudaErrorInvalidValue);
// Disarms the armed fault, if any.
void disarm();
// Faults fired since the last reset(); reset() also disarms.
int fired();
void reset();
// libetrt's calls of `function` since the last reset().
int calls(const char* function);

}  // namespace etrt::cuda_faults
