// etrt_bench_gpu: host overhead of one Module::forward() on the CUDA path.
//
// The model is tests/backend's embedding + matmul (hidden size 16) as a
// CUDA-mode GPU-free NvInfer engine with tracing off: tiny compute, so what is
// measured is the delegate's own work -- the caller's stream, the wait for
// in-flight work, choosing and validating the profile, the switch (or the
// choice of context), shapes, staging, binding, the enqueue, the event -- plus
// ExecuTorch's Module around it. Cases, side by side in one process:
//
//   noop                      a delegate that only resizes its output: ExecuTorch's own cost
//   host/<pattern>            the same engine in host mode (no CUDA at all)
//   cuda/<strategy>/<io>/<pattern>
//     strategy  switch | context_per_profile    (load option profile_strategy)
//     io        device: input and output in device memory, bound in place; forward() returns with the work
//                       queued (its host overhead alone)
//               host:   ExecuTorch's planned host tensors, staged; forward() returns once the output is back
//                       (host overhead + copies + kernels + the wait)
//     pattern   decode: every call on profile 0 (no change); alternate: prefill (8 tokens) then decode, so every
//               call changes profile
//
//   api/<call>                one CUDA runtime call (or an empty kernel launch), to price the calls above:
//                             where a forward()'s microseconds go (the summary's estimate)
//
// Each iteration times forward() alone (manual time); the stream is then
// synchronized outside the timing, so every call starts with an idle GPU and a
// backlog never turns host time into device time. Defaults: 10 repetitions of
// at least 0.2 s each, aggregates only; the summary prints medians and ratios.
// allocs_per_forward counts every operator new in the process per forward()
// (Module allocates its result vector): etrt's rows should match the noop row.

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "bench_defaults.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/stream_guard.h"
#include "etrt_gpufree/trace.h"

namespace etrt::bench {
void launch_empty_kernel(cudaStream_t stream);
}  // namespace etrt::bench

namespace {

namespace et = ::executorch::runtime;
using executorch::aten::ScalarType;
using executorch::extension::from_blob;
using executorch::extension::Module;

constexpr int32_t kHidden = 16;
constexpr int32_t kMaxTokens = 64;
constexpr int32_t kPrefillTokens = 8;

// The baseline is tools/testing/noop_backend.cpp's do-nothing delegate (logits [1, S, H] resized to the input's S),
// compiled into this benchmark.

std::unique_ptr<Module> load(const std::string& name, const char* strategy) {
  // $ETRT_GPU_FIXTURE_DIR where the benchmark runs from a copy of the build (docs/gpu-testing.md).
  const char* dir = std::getenv("ETRT_GPU_FIXTURE_DIR");
  auto module =
      std::make_unique<Module>(std::string(dir != nullptr ? dir : ETRT_BENCH_GPU_PTE_DIR) + "/" + name + ".pte");
  et::BackendOptions<1> options;
  (void)options.set_option(etrt::kOptionProfileStrategy, strategy);
  et::LoadBackendOptionsMap map;
  (void)map.set_options(etrt::kBackendId, options.view());
  if (module->load(map) != et::Error::Ok || module->load_forward() != et::Error::Ok) return nullptr;
  return module;
}

struct Buffers {
  void* ids = nullptr;
  void* logits = nullptr;
  ~Buffers() {
    cudaFree(ids);
    cudaFree(logits);
  }
};

enum class Io { kDevice, kHost };

// One forward() per iteration; `pins` cycles (decode: {0}; alternate: {1, 0}).
void run(benchmark::State& state, const std::string& fixture, const char* strategy, Io io,
         const std::vector<int32_t>& pins) {
  etrt::gpufree::set_tracing_enabled(false);
  auto module = load(fixture, strategy);
  if (!module) return state.SkipWithError(("loading " + fixture + ".pte failed").c_str());
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
    return state.SkipWithError("cudaStreamCreate failed");
  std::vector<int64_t> host_ids(kMaxTokens, 3);
  Buffers device;
  auto logits_shape = std::vector<int32_t>{1, kMaxTokens, kHidden};
  if (io == Io::kDevice) {
    if (cudaMalloc(&device.ids, kMaxTokens * sizeof(int64_t)) != cudaSuccess ||
        cudaMalloc(&device.logits, kMaxTokens * kHidden * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(device.ids, host_ids.data(), kMaxTokens * sizeof(int64_t), cudaMemcpyHostToDevice) != cudaSuccess)
      return state.SkipWithError("cudaMalloc failed");
    if (module->set_output(from_blob(device.logits, logits_shape, ScalarType::Float)) != et::Error::Ok)
      return state.SkipWithError("set_output failed");
  }
  void* ids = io == Io::kDevice ? device.ids : host_ids.data();
  auto decode = from_blob(ids, {1, 1}, ScalarType::Long);
  auto prefill = from_blob(ids, {1, kPrefillTokens}, ScalarType::Long);

  etrt::CudaStreamGuard on(stream);
  size_t step = 0;
  int64_t allocations = 0, failures = 0;
  for (auto _ : state) {
    const int32_t pin = pins[step++ % pins.size()];
    etrt::OptimizationProfileGuard guard(pin);
    const int64_t before = etrt::allocation_count();
    const auto start = std::chrono::steady_clock::now();
    failures += !module->forward(pin == 0 ? decode : prefill).ok();
    const auto end = std::chrono::steady_clock::now();
    allocations += etrt::allocation_count() - before;
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    cudaStreamSynchronize(stream);  // untimed: the next call starts with an idle GPU
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  state.counters["allocs_per_forward"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  if (failures > 0) state.SkipWithError("forward() failed");
}

// The host cost of one CUDA call: each iteration times a batch of kBatch calls and records the mean; the stream is
// drained outside the timing. Registered with a fixed iteration count (main).
constexpr int kBatch = 64;
template <typename Call>
void price(benchmark::State& state, Call call) {
  cudaStream_t stream = nullptr;
  void* device = nullptr;
  cudaEvent_t event = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&device, 256) != cudaSuccess ||
      cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess)
    return state.SkipWithError("CUDA setup failed");
  int64_t host = 0;
  cudaEventRecord(event, stream);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) call(stream, device, &host, event);
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - start).count() / kBatch);
    cudaStreamSynchronize(stream);
  }
  cudaEventDestroy(event);
  cudaFree(device);
  cudaStreamDestroy(stream);
}

// Collects the median of every case while printing as usual, then prints the summary.
class MedianReporter final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.aggregate_name != "median" || run.error_occurred) continue;
      std::string name = run.run_name.function_name;
      medians_[name] = {run.GetAdjustedRealTime(), run.counters.count("allocs_per_forward")
                                                       ? static_cast<double>(run.counters.at("allocs_per_forward"))
                                                       : -1.0};
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void print_summary() const {
    if (medians_.empty()) return;  // --benchmark_list_tests, or a filter that ran nothing
    const double noop = time("noop");
    std::printf(
        "\nMedian over the repetitions of the host time per Module::forward(), ns; x noop = ratio to the "
        "do-nothing delegate\n\n%-44s %10s %9s %12s\n",
        "case", "median ns", "x noop", "allocs/call");
    for (const auto& [name, m] : medians_)
      if (name.rfind("api/", 0) != 0)
        std::printf("%-44s %10.0f %8.2fx %12.1f\n", name.c_str(), m.ns, noop > 0 ? m.ns / noop : 0.0, m.allocs);
    std::printf("\nMedian over the repetitions of the host time per CUDA call, ns (batches of %d):\n\n", kBatch);
    for (const auto& [name, m] : medians_)
      if (name.rfind("api/", 0) == 0) std::printf("%-44s %10.0f\n", name.c_str(), m.ns);
    std::printf("\nProfile change vs none (alternate / decode), and context per profile vs switch, same IO:\n\n");
    std::printf("%-8s %-22s %10s %10s %9s\n", "io", "strategy", "decode ns", "alt. ns", "alt/dec");
    for (const char* io : {"device", "host"}) {
      for (const char* strategy : {"switch", "context_per_profile"}) {
        const std::string base = std::string("cuda/") + strategy + "/" + io + "/";
        const double d = time(base + "decode"), a = time(base + "alternate");
        std::printf("%-8s %-22s %10.0f %10.0f %8.2fx\n", io, strategy, d, a, d > 0 ? a / d : 0.0);
      }
      const double sw = time(std::string("cuda/switch/") + io + "/alternate");
      const double cpp = time(std::string("cuda/context_per_profile/") + io + "/alternate");
      std::printf("%-8s context_per_profile / switch, alternate: %.2fx\n", io, sw > 0 ? cpp / sw : 0.0);
    }
    // Per forward() with device IO on an unchanged profile, the calls each side makes (reference CUDA mode,
    // reference_context.cpp; backend, src/backend/device/device_call_cuda.cpp), priced with the api/ rows.
    const double launch = time("api/launch_empty_kernel"), memset = time("api/cudaMemsetAsync_1B"),
                 record = time("api/cudaEventRecord"), pointer = time("api/cudaPointerGetAttributes_device"),
                 stream_device = time("api/cudaStreamGetDevice"), get_device = time("api/cudaGetDevice"),
                 last_error = time("api/cudaGetLastError");
    const double engine = 3 * launch + 2 * memset + record + 2 * pointer + 2 * last_error + 2 * get_device;
    const double backend = 2 * pointer + stream_device + record + get_device;
    const double measured = time("cuda/switch/device/decode");
    std::printf(
        "\nEstimated split of cuda/switch/device/decode (%.0f ns), from the api/ rows:\n"
        "  GPU-free NvInfer engine's own CUDA calls (3 launches, 2 memsets, 1 event record, 2 pointer queries, "
        "2 cudaGetLastError, 2 cudaGetDevice): %.0f ns\n"
        "  etrt backend's CUDA calls (2 pointer queries, cudaStreamGetDevice, 1 event record, "
        "cudaGetDevice): %.0f ns\n"
        "  the rest (ExecuTorch, profile choice, shapes, binding; compare host/decode %.0f ns): %.0f ns\n",
        measured, engine, backend, time("host/decode"), measured - engine - backend);
  }

 private:
  struct Median {
    double ns;
    double allocs;
  };
  double time(const std::string& name) const {
    auto it = medians_.find(name);
    return it == medians_.end() ? 0.0 : it->second.ns;
  }
  std::map<std::string, Median> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  etrt::bench::initialize_with_defaults(argc, argv);

  const std::vector<int32_t> decode = {0}, alternate = {1, 0};
  auto add = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Unit(benchmark::kNanosecond);
  };
  add("noop", [=](benchmark::State& s) { run(s, "bench_noop", etrt::kStrategySwitch, Io::kHost, decode); });
  add("host/decode", [=](benchmark::State& s) { run(s, "bench_host", etrt::kStrategySwitch, Io::kHost, decode); });
  add("host/alternate",
      [=](benchmark::State& s) { run(s, "bench_host", etrt::kStrategySwitch, Io::kHost, alternate); });
  for (const char* strategy : {etrt::kStrategySwitch, etrt::kStrategyContextPerProfile}) {
    for (Io io : {Io::kDevice, Io::kHost}) {
      const std::string fixture = io == Io::kDevice ? "bench_cuda_unplanned" : "bench_cuda";
      const std::string base = std::string("cuda/") + strategy + "/" + (io == Io::kDevice ? "device" : "host") + "/";
      add(base + "decode", [=](benchmark::State& s) { run(s, fixture, strategy, io, decode); });
      add(base + "alternate", [=](benchmark::State& s) { run(s, fixture, strategy, io, alternate); });
    }
  }
  // The CUDA calls a forward() is made of, priced one by one.
  using Price = void (*)(cudaStream_t, void*, int64_t*, cudaEvent_t);
  const std::pair<const char*, Price> calls[] = {
      {"api/launch_empty_kernel",
       [](cudaStream_t s, void*, int64_t*, cudaEvent_t) { etrt::bench::launch_empty_kernel(s); }},
      {"api/cudaMemsetAsync_1B", [](cudaStream_t s, void* d, int64_t*, cudaEvent_t) { cudaMemsetAsync(d, 0, 1, s); }},
      {"api/cudaMemcpyAsync_H2D_8B_pageable",
       [](cudaStream_t s, void* d, int64_t* h, cudaEvent_t) { cudaMemcpyAsync(d, h, 8, cudaMemcpyHostToDevice, s); }},
      {"api/cudaEventRecord", [](cudaStream_t s, void*, int64_t*, cudaEvent_t e) { cudaEventRecord(e, s); }},
      {"api/cudaStreamWaitEvent", [](cudaStream_t s, void*, int64_t*, cudaEvent_t e) { cudaStreamWaitEvent(s, e, 0); }},
      {"api/cudaPointerGetAttributes_device",
       [](cudaStream_t, void* d, int64_t*, cudaEvent_t) {
         cudaPointerAttributes a{};
         cudaPointerGetAttributes(&a, d);
         benchmark::DoNotOptimize(a);
       }},
      {"api/cudaPointerGetAttributes_host",
       [](cudaStream_t, void*, int64_t* h, cudaEvent_t) {
         cudaPointerAttributes a{};
         cudaPointerGetAttributes(&a, h);
         benchmark::DoNotOptimize(a);
       }},
      {"api/cudaStreamGetDevice",
       [](cudaStream_t s, void*, int64_t*, cudaEvent_t) {
         int d = -1;
         cudaStreamGetDevice(s, &d);
         benchmark::DoNotOptimize(d);
       }},
      {"api/cudaGetDevice",
       [](cudaStream_t, void*, int64_t*, cudaEvent_t) {
         int d = -1;
         cudaGetDevice(&d);
         benchmark::DoNotOptimize(d);
       }},
      {"api/cudaGetLastError",
       [](cudaStream_t, void*, int64_t*, cudaEvent_t) { benchmark::DoNotOptimize(cudaGetLastError()); }},
  };
  // A fixed count: each iteration reports one call's time but costs a batch and a synchronization, so letting
  // the library grow iterations until 0.2 s of reported time would run for minutes.
  for (const auto& [name, call] : calls)
    benchmark::RegisterBenchmark(name, [call = call](benchmark::State& s) { price(s, call); })
        ->UseManualTime()
        ->Unit(benchmark::kNanosecond)
        ->Iterations(2000);

  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  return 0;
}
