// etrt_bench_gpu_profiling: the device time etrt logs for ExecuTorch's event tracer ("etrt device time",
// docs/profiling.md) against CUDA events the runner records around the same forward() calls on its own stream. Each
// step is waited for; etrt's own events bracket its steps inside the call. Two ways of queueing each step:
//
//   idle   the stream is idle when the runner records its first event, so the runner's pair also spans the host's
//          time in forward() before etrt's first event (ExecuTorch's method, etrt's checks): the difference
//   held   a host function holding the stream for 500 us goes first, so the host has queued the whole call before
//          the device reaches the runner's first event: both pairs bracket the same device work and should agree
//
// Medians over the steps, decode (1 token) and prefill (64 tokens), and the median of the per-step ratios (the
// device-time events carry the execution they measured, so the pairs are exact).
//
// bench_cuda_unplanned.pte (tests/backend/make_fixtures.cpp, --cuda): a CUDA-mode engine with a decode profile [1,1]
// and a prefill profile [1,2..64], its IO the runner's device memory.
//
//   etrt_bench_gpu_profiling [fixture-dir] [steps=200]   (default dir: $ETRT_GPU_FIXTURE_DIR, else the build tree's)

#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/platform.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "fixtures.h"
#include "median.h"
#include "recording_tracer.h"

namespace {

namespace et = ::executorch::runtime;
using etrt::module_test::Logged;
using etrt::module_test::RecordingTracer;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "etrt_bench_gpu_profiling: %s failed%s%s\n", what, etrt::has_last_error() ? ": " : "",
               etrt::has_last_error() ? etrt::last_error_message() : "");
  std::exit(1);
}

using etrt::testing::median;

// Holds the stream it is queued on for 500 us (a host function: the stream waits until it returns).
void CUDART_CB hold_the_stream(void*) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// The number after "<key>": in an event's JSON metadata, or -1.
long long field(const std::string& metadata, const std::string& key) {
  const size_t at = metadata.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::atoll(metadata.c_str() + at + key.size() + 3);
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("ETRT_GPU_FIXTURE_DIR");
  const std::string dir = argc > 1 ? argv[1] : (env != nullptr && *env != '\0' ? env : ETRT_BENCH_GPU_PTE_DIR);
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  constexpr int kMaxTokens = 64;

  auto owned = std::make_unique<RecordingTracer>();
  RecordingTracer* const tracer = owned.get();
  Module module(dir + "/bench_cuda_unplanned.pte", Module::LoadMode::File, std::move(owned));
  check(module.load_forward() == et::Error::Ok, "loading bench_cuda_unplanned.pte");
  void *ids = nullptr, *logits = nullptr;
  check(cudaMalloc(&ids, kMaxTokens * sizeof(int64_t)) == cudaSuccess, "cudaMalloc");
  check(cudaMemset(ids, 0, kMaxTokens * sizeof(int64_t)) == cudaSuccess, "cudaMemset");
  check(cudaMalloc(&logits, size_t{kMaxTokens} * etrt::fixtures::kHidden * sizeof(float)) == cudaSuccess, "cudaMalloc");
  check(module.set_output(from_blob(logits, {1, kMaxTokens, etrt::fixtures::kHidden}, ScalarType::Float)) ==
            et::Error::Ok,
        "set_output");
  cudaStream_t stream = nullptr;
  cudaEvent_t before = nullptr, after = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate");
  check(cudaEventCreate(&before) == cudaSuccess && cudaEventCreate(&after) == cudaSuccess, "cudaEventCreate");
  etrt::CudaStreamGuard on(stream);

  const et_tick_ratio_t ratio = et_pal_ticks_to_ns_multiplier();
  const auto ticks_to_us = [&](uint64_t ticks) {
    return static_cast<double>(ticks) * static_cast<double>(ratio.numerator) / static_cast<double>(ratio.denominator) /
           1000.0;
  };
  std::printf("etrt device time (event tracer) vs CUDA events around forward(), %d steps each, waited for, medians\n",
              steps);
  std::printf("%-30s %12s %12s %12s %12s\n", "step", "etrt us", "runner us", "difference", "etrt/runner");
  long long execution = 0;  // etrt numbers the traced executions of the delegate from 1
  for (const bool held : {false, true})
    for (const int tokens : {1, kMaxTokens}) {
      std::map<long long, double> runner_us;  // execution -> the runner's events
      const auto input = from_blob(ids, {1, tokens}, ScalarType::Long);
      for (int i = 0; i < steps + 10; ++i) {  // the first 10: warm-up, not counted
        if (held) check(cudaLaunchHostFunc(stream, hold_the_stream, nullptr) == cudaSuccess, "cudaLaunchHostFunc");
        check(cudaEventRecord(before, stream) == cudaSuccess, "cudaEventRecord");
        check(module.forward(input).ok(), "forward");
        check(cudaEventRecord(after, stream) == cudaSuccess, "cudaEventRecord");
        check(cudaEventSynchronize(after) == cudaSuccess, "cudaEventSynchronize");
        ++execution;
        float ms = 0.0f;
        check(cudaEventElapsedTime(&ms, before, after) == cudaSuccess, "cudaEventElapsedTime");
        if (i >= 10) runner_us[execution] = 1000.0 * static_cast<double>(ms);
      }
      check(module.forward(input).ok(), "forward");  // logs the last step's device time
      check(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
      ++execution;
      std::vector<double> etrt_us, runner, ratios, differences;
      for (const auto& run : tracer->runs)
        for (const Logged& e : run) {
          if (e.name != "etrt device time") continue;
          const auto found = runner_us.find(field(e.metadata, "execution"));
          if (found == runner_us.end()) continue;
          const double us = ticks_to_us(e.stop - e.start);
          etrt_us.push_back(us);
          runner.push_back(found->second);
          ratios.push_back(us / found->second);
          differences.push_back(found->second - us);
        }
      tracer->runs.clear();
      char label[48];
      std::snprintf(label, sizeof(label), "%s, %s (%d token%s)", held ? "held" : "idle",
                    tokens == 1 ? "decode" : "prefill", tokens, tokens == 1 ? "" : "s");
      std::printf("%-30s %12.1f %12.1f %12.1f %11.3fx   (%zu of %d steps paired)\n", label, median(etrt_us),
                  median(runner), median(differences), median(ratios), etrt_us.size(), steps);
    }
  std::printf("unexpected start/end delegate events: %d\n", tracer->unexpected);
  return 0;
}
