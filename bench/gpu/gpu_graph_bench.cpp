// etrt_bench_gpu_graphs: what CUDA graphs (load option cuda_graphs) do for a decode step.
//
// The model is a 64-kernel decoder in CUDA mode (tests/backend/make_fixtures.cpp, graph_bench_engine):
// embedding, Q/K/V, two in-place KV-cache updates, causal attention, 28 residual blocks, LM head, over device
// memory the runner owns (tokens, start_pos, both caches, logits). Each iteration is one decode step: the token
// and its position are written into device memory (untimed), then forward() is timed on the host (the call
// returns with the work queued on the caller's stream) and on the device (events around the call, read after the
// stream drains). Cases, side by side in one process:
//
//   <graphs>/<strategy>
//     graphs    plain: every step enqueues the engine's kernels; graphs: steady steps replay a CUDA graph
//     strategy  switch | context_per_profile   (load option profile_strategy)
//
// The first steps (a plain enqueue, then the capture) are outside the timing: the benchmark's warm-up.
// Defaults: 10 repetitions of at least 0.2 s each, aggregates only; the summary prints medians and ratios.

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/options.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_defaults.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "etrt_gpufree/trace.h"

namespace {

namespace et = ::executorch::runtime;
using executorch::aten::ScalarType;
using executorch::extension::from_blob;
using executorch::extension::Module;

constexpr int32_t kVocab = 64;
constexpr int32_t kWidth = 32;
constexpr int32_t kCache = 256;
constexpr int32_t kMaxTokens = 64;

std::unique_ptr<Module> load(const char* strategy, bool graphs) {
  const char* dir = std::getenv("ETRT_GPU_FIXTURE_DIR");
  auto module = std::make_unique<Module>(std::string(dir != nullptr ? dir : ETRT_BENCH_GPU_PTE_DIR) + "/bench_graph.pte");
  et::BackendOptions<2> options;
  (void)options.set_option(etrt::kOptionProfileStrategy, strategy);
  (void)options.set_option(etrt::kOptionCudaGraphs, graphs);
  et::LoadBackendOptionsMap map;
  (void)map.set_options(etrt::kBackendId, options.view());
  if (module->load(map) != et::Error::Ok || module->load_forward() != et::Error::Ok) return nullptr;
  return module;
}

// The runner's device memory: every IO tensor of the program.
struct DeviceIo {
  void* tokens = nullptr;
  void* pos = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  void* logits = nullptr;
  bool make() {
    return cudaMalloc(&tokens, kMaxTokens * sizeof(int64_t)) == cudaSuccess &&
           cudaMalloc(&pos, sizeof(int64_t)) == cudaSuccess &&
           cudaMalloc(&k_cache, kCache * kWidth * sizeof(float)) == cudaSuccess &&
           cudaMalloc(&v_cache, kCache * kWidth * sizeof(float)) == cudaSuccess &&
           cudaMalloc(&logits, kMaxTokens * kVocab * sizeof(float)) == cudaSuccess &&
           cudaMemset(k_cache, 0, kCache * kWidth * sizeof(float)) == cudaSuccess &&
           cudaMemset(v_cache, 0, kCache * kWidth * sizeof(float)) == cudaSuccess;
  }
  ~DeviceIo() {
    for (void* p : {tokens, pos, k_cache, v_cache, logits}) cudaFree(p);
  }
};

struct Timing {
  double host_ns;
  double device_ns;
};
void run(benchmark::State& state, const char* strategy, bool graphs) {
  etrt::gpufree::set_tracing_enabled(false);
  auto module = load(strategy, graphs);
  if (!module) return state.SkipWithError(std::string("loading bench_graph.pte failed: ").append(etrt::last_error_message()).c_str());
  cudaStream_t stream = nullptr;
  cudaEvent_t begin = nullptr, end = nullptr;
  DeviceIo io;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreate(&begin) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess || !io.make())
    return state.SkipWithError("CUDA setup failed");
  if (module->set_output(from_blob(io.logits, {1, kMaxTokens, kVocab}, ScalarType::Float)) != et::Error::Ok)
    return state.SkipWithError("set_output failed");
  auto tokens = from_blob(io.tokens, {1, 1}, ScalarType::Long);
  auto pos = from_blob(io.pos, {1}, ScalarType::Long);
  auto k_cache = from_blob(io.k_cache, {1, kCache, kWidth}, ScalarType::Float);
  auto v_cache = from_blob(io.v_cache, {1, kCache, kWidth}, ScalarType::Float);
  const std::vector<et::EValue> inputs = {tokens, pos, k_cache, v_cache};

  etrt::CudaStreamGuard on(stream);
  etrt::OptimizationProfileGuard decode(0);
  int64_t step = 0, failures = 0;
  double device_ms_total = 0;
  auto one_step = [&](bool timed, benchmark::State* s) {
    const int64_t token = (step * 7 + 3) % kVocab, at = step % kCache;
    ++step;
    cudaMemcpyAsync(io.tokens, &token, sizeof(token), cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(io.pos, &at, sizeof(at), cudaMemcpyHostToDevice, stream);
    cudaStreamSynchronize(stream);  // untimed: every step starts with an idle GPU
    cudaEventRecord(begin, stream);
    const auto start = std::chrono::steady_clock::now();
    failures += !module->forward(inputs).ok();
    const auto stop = std::chrono::steady_clock::now();
    cudaEventRecord(end, stream);
    cudaStreamSynchronize(stream);
    if (!timed) return;
    float ms = 0;
    cudaEventElapsedTime(&ms, begin, end);
    device_ms_total += ms;
    s->SetIterationTime(std::chrono::duration<double>(stop - start).count());
  };
  for (int i = 0; i < 3; ++i) one_step(false, nullptr);  // plain enqueue, capture, first replay
  for (auto _ : state) one_step(true, &state);
  state.counters["device_ns"] = benchmark::Counter(device_ms_total * 1e6, benchmark::Counter::kAvgIterations);
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  cudaStreamDestroy(stream);
  if (failures > 0) state.SkipWithError(std::string("forward() failed: ").append(etrt::last_error_message()).c_str());
}

class MedianReporter final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.aggregate_name != "median" || run.error_occurred) continue;
      const double device = run.counters.count("device_ns") ? static_cast<double>(run.counters.at("device_ns")) : 0;
      medians_[run.run_name.function_name] = {run.GetAdjustedRealTime(), device};
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void print_summary() const {
    if (medians_.empty()) return;
    std::printf("\nMedian over the repetitions, per decode step (forward()), ns\n\n%-28s %12s %12s\n", "case",
                "host ns", "device ns");
    for (const auto& [name, t] : medians_) std::printf("%-28s %12.0f %12.0f\n", name.c_str(), t.host_ns, t.device_ns);
    std::printf("\nGraphs vs plain, same strategy (graphs / plain):\n\n%-22s %12s %12s\n", "strategy", "host",
                "device");
    for (const char* strategy : {"switch", "context_per_profile"}) {
      const auto plain = medians_.find(std::string("plain/") + strategy);
      const auto graphs = medians_.find(std::string("graphs/") + strategy);
      if (plain == medians_.end() || graphs == medians_.end()) continue;
      std::printf("%-22s %11.3fx %11.3fx\n", strategy, graphs->second.host_ns / plain->second.host_ns,
                  graphs->second.device_ns / plain->second.device_ns);
    }
  }

 private:
  std::map<std::string, Timing> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  etrt::bench::initialize_with_defaults(argc, argv);
  for (const bool graphs : {false, true})
    for (const char* strategy : {etrt::kStrategySwitch, etrt::kStrategyContextPerProfile})
      benchmark::RegisterBenchmark((std::string(graphs ? "graphs/" : "plain/") + strategy).c_str(),
                                   [=](benchmark::State& s) { run(s, strategy, graphs); })
          ->UseManualTime()
          ->Unit(benchmark::kNanosecond);
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  return 0;
}
