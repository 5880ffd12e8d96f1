#include "cuda_faults.h"


#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "libetrt_caller.h"

namespace etrt::cuda_faults {
namespace {

constexpr int kCount = static_cast<int>(sizeof(kFunctions) / sizeof(kFunctions[0]));

std::mutex g_mutex;
int g_armed = -1;  // index into kFunctions, or -1
int g_nth = 0;
cudaError_t g_error = cudaErrorInvalidValue;
int g_fired = 0;
int g_calls[kCount] = {};

int index_of(const char* function) {
  for (int i = 0; i < kCount; ++i)
    if (std::strcmp(kFunctions[i], function) == 0) return i;
  std::fprintf(stderr, "cuda_faults: '%s' is not an intercepted function (kFunctions)\n", function);
  std::abort();
}

// Counts the call and says whether the armed fault fires on it.
bool fires(int function, const void* caller, cudaError_t* error) {
  if (!etrt::testing::from_libetrt(caller)) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_calls[function];
  if (g_armed != function || --g_nth > 0) return false;
  g_armed = -1;
  ++g_fired;
  *error = g_error;
  return true;
}

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(etrt::testing::next_definition(name, "cuda_faults"));
}

}  // namespace

void arm(const char* function, int nth, cudaError_t error) {
  const int i = index_of(function);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_armed = i;
  g_nth = nth;
  g_error = error;
}

void disarm() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_armed = -1;
}

int fired() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_fired;
}

void reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_armed = -1;
  g_fired = 0;
  for (int& c : g_calls) c = 0;
}

int calls(const char* function) {
  const int i = index_of(function);
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls[i];
}

}  // namespace etrt::cuda_faults

// ---- the interposed CUDA runtime functions ----
//
// Each: if libetrt's call draws the armed fault, return its error without running; otherwise call libcudart's
// function. cudaStreamEndCapture is the exception, below.

#define ETRT_INTERPOSE(name, params, args)                                                        \
  extern "C" cudaError_t CUDARTAPI name params {                                                  \
    static const int index = etrt::cuda_faults::index_of(#name);                                  \
    cudaError_t injected = cudaSuccess;                                                           \
    if (etrt::cuda_faults::fires(index, __builtin_return_address(0), &injected)) return injected; \
    static const auto call = etrt::cuda_faults::real<cudaError_t(CUDARTAPI*) params>(#name);      \
    return call args;                                                                             \
  }

ETRT_INTERPOSE(cudaMalloc, (void** p, size_t size), (p, size))
ETRT_INTERPOSE(cudaGetDeviceCount, (int* count), (count))
ETRT_INTERPOSE(cudaStreamSynchronize, (cudaStream_t s), (s))
ETRT_INTERPOSE(cudaEventCreateWithFlags, (cudaEvent_t * e, unsigned int flags), (e, flags))
ETRT_INTERPOSE(cudaStreamGetDevice, (cudaStream_t s, int* device), (s, device))
ETRT_INTERPOSE(cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t e, unsigned int flags), (s, e, flags))
ETRT_INTERPOSE(cudaMemcpyAsync, (void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s),
               (dst, src, n, kind, s))
ETRT_INTERPOSE(cudaEventRecord, (cudaEvent_t e, cudaStream_t s), (e, s))
ETRT_INTERPOSE(cudaEventSynchronize, (cudaEvent_t e), (e))
ETRT_INTERPOSE(cudaGraphLaunch, (cudaGraphExec_t g, cudaStream_t s), (g, s))
ETRT_INTERPOSE(cudaStreamBeginCapture, (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode))

// A failing cudaStreamEndCapture still ends the capture (CUDA ends it whatever the outcome and returns no graph):
// the real call runs, then the fault replaces its result.
extern "C" cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  static const int index = etrt::cuda_faults::index_of("cudaStreamEndCapture");
  static const auto call =
      etrt::cuda_faults::real<cudaError_t(CUDARTAPI*)(cudaStream_t, cudaGraph_t*)>("cudaStreamEndCapture");
  cudaError_t injected = cudaSuccess;
  const bool fails = etrt::cuda_faults::fires(index, __builtin_return_address(0), &injected);
  const cudaError_t status = call(s, g);
  if (!fails) return status;
  if (status == cudaSuccess && g != nullptr && *g != nullptr) {
    (void)cudaGraphDestroy(*g);
    *g = nullptr;
  }
  return injected;
}
ETRT_INTERPOSE(cudaGraphInstantiate, (cudaGraphExec_t * e, cudaGraph_t g, unsigned long long flags), (e, g, flags))
