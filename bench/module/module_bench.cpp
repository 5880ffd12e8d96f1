// Host overhead of one Module::forward() through etrt, against a delegate
// that does nothing, side by side in one process. The etrt delegate runs a
// reference engine that only copies its input, with tracing off, so what is
// measured is the delegate's own work: reading the request, choosing and
// validating the profile, setting shapes, resizing outputs, binding, enqueue.
//
// Counters: allocs_per_forward counts every operator new in the process per
// forward() (ExecuTorch's Module allocates its result vector); the etrt rows
// should match the noop row, i.e. etrt itself allocates nothing.
//
// BM_EtrtAligned* pass the runner's own 256-byte-aligned buffers (unplanned
// IO), which TensorRT takes in place; the planned rows' 16-byte-aligned
// ExecuTorch buffers are staged (a copy in, a copy out). BM_EngineEnqueue times
// the engine's own enqueueV3 through NvInfer with nothing of etrt around it, so
// that etrt's own cost per forward() is the aligned row minus it
// (run_module_bench.sh prints that ratio).

#include <benchmark/benchmark.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

#include <NvInferRuntime.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "etrt_gpufree/trace.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"

namespace {

namespace et = ::executorch::runtime;
using executorch::aten::ScalarType;
using executorch::extension::Module;

// The baseline is tools/testing/noop_backend.cpp's do-nothing delegate, compiled into this benchmark.

// The programs: the build tree's, or $ETRT_BENCH_PTE_DIR's where the benchmark runs from a copy (another machine).
std::string pte_dir() {
  const char* dir = std::getenv("ETRT_BENCH_PTE_DIR");
  return dir != nullptr ? dir : ETRT_BENCH_PTE_DIR;
}

std::unique_ptr<Module> load(const char* name, const char* strategy = etrt::kStrategySwitch) {
  auto module = std::make_unique<Module>(pte_dir() + "/" + name + ".pte");
  et::BackendOptions<1> options;
  (void)options.set_option(etrt::kOptionProfileStrategy, strategy);
  et::LoadBackendOptionsMap map;
  (void)map.set_options(etrt::kBackendId, options.view());
  if (module->load(map) != et::Error::Ok || module->load_forward() != et::Error::Ok) return nullptr;
  return module;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Aligned = std::unique_ptr<float, FreeDeleter>;
Aligned aligned_floats(size_t n) { return Aligned(static_cast<float*>(std::aligned_alloc(256, (n * 4 + 255) / 256 * 256))); }

// One forward() per iteration of `program` on the runner's aligned buffers (unplanned IO), under `pin` (-1: no
// guard).
void run_aligned(benchmark::State& state, const char* program, int32_t pin) {
  etrt::gpufree::set_tracing_enabled(false);
  auto module = load(program);
  if (!module) return state.SkipWithError("loading the unplanned program failed");
  Aligned x = aligned_floats(64), y = aligned_floats(64);
  x.get()[0] = 1.0f;
  if (module->set_output(executorch::extension::from_blob(y.get(), {1, 64}, ScalarType::Float)) != et::Error::Ok)
    return state.SkipWithError("set_output failed");
  auto one = executorch::extension::from_blob(x.get(), {1, 1}, ScalarType::Float);
  int64_t allocations = 0, failures = 0;
  for (auto _ : state) {
    const int64_t before = etrt::allocation_count();
    if (pin < 0) {
      failures += !module->forward(one).ok();
    } else {
      etrt::OptimizationProfileGuard guard(pin);
      failures += !module->forward(one).ok();
    }
    allocations += etrt::allocation_count() - before;
  }
  state.counters["allocs_per_forward"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  if (failures) state.SkipWithError("forward() failed");
}

void BM_NoopAligned(benchmark::State& state) { run_aligned(state, "noop_unplanned", -1); }
void BM_EtrtAlignedNoGuard(benchmark::State& state) { run_aligned(state, "etrt_unplanned", -1); }
void BM_EtrtAlignedPinnedDecode(benchmark::State& state) { run_aligned(state, "etrt_unplanned", 0); }

class QuietLogger final : public nvinfer1::ILogger {
  void log(Severity, const char*) noexcept override {}
};

// The engine alone: the same engine's enqueueV3 with shapes and addresses set once, as a steady-state decode step
// leaves them; what etrt's delegate calls once per forward().
void BM_EngineEnqueue(benchmark::State& state) {
  etrt::gpufree::set_tracing_enabled(false);
  std::ifstream file(pte_dir() + "/bench_identity.engine", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  QuietLogger logger;
  std::unique_ptr<nvinfer1::IRuntime> runtime(nvinfer1::createInferRuntime(logger));
  std::unique_ptr<nvinfer1::ICudaEngine> engine(
      runtime ? runtime->deserializeCudaEngine(bytes.data(), bytes.size()) : nullptr);
  std::unique_ptr<nvinfer1::IExecutionContext> context(engine ? engine->createExecutionContext() : nullptr);
  Aligned x = aligned_floats(64), y = aligned_floats(64);
  nvinfer1::Dims one{};
  one.nbDims = 2;
  one.d[0] = one.d[1] = 1;
  if (!context || !context->setInputShape("x", one) || !context->setTensorAddress("x", x.get()) ||
      !context->setTensorAddress("y", y.get()))
    return state.SkipWithError("could not set up the engine");
  int64_t failures = 0;
  for (auto _ : state) failures += !context->enqueueV3(nullptr);
  context.reset();
  if (failures) state.SkipWithError("enqueueV3 failed");
}

// One forward() per iteration on `tokens` tokens, under `pin` (-1: no guard).
void run(benchmark::State& state, Module& module, const std::vector<int32_t>& pins, int32_t tokens) {
  etrt::gpufree::set_tracing_enabled(false);
  std::vector<float> small(1, 1.0f), large(static_cast<size_t>(tokens), 1.0f);
  auto one = executorch::extension::from_blob(small.data(), {1, 1}, ScalarType::Float);
  auto many = executorch::extension::from_blob(large.data(), {1, tokens}, ScalarType::Float);
  size_t step = 0;
  int64_t allocations = 0;
  int64_t failures = 0;
  for (auto _ : state) {
    const int32_t pin = pins[step++ % pins.size()];
    const int64_t before = etrt::allocation_count();
    if (pin < 0) {
      failures += !module.forward(one).ok();
    } else {
      etrt::OptimizationProfileGuard guard(pin);
      failures += !module.forward(pin == 0 ? one : many).ok();
    }
    allocations += etrt::allocation_count() - before;
  }
  state.counters["allocs_per_forward"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  if (failures) state.SkipWithError("forward() failed");
}

void BM_NoopDelegate(benchmark::State& state) {
  auto module = load("noop");
  if (!module) return state.SkipWithError("loading noop.pte failed");
  run(state, *module, {-1}, 1);
}

void BM_EtrtNoGuard(benchmark::State& state) {
  auto module = load("etrt");
  if (!module) return state.SkipWithError("loading etrt.pte failed");
  run(state, *module, {-1}, 1);
}

void BM_EtrtPinnedDecode(benchmark::State& state) {
  auto module = load("etrt");
  if (!module) return state.SkipWithError("loading etrt.pte failed");
  run(state, *module, {0}, 1);
}

// Prefill then decode, alternating: one profile change per forward().
void BM_EtrtAlternatingSwitch(benchmark::State& state) {
  auto module = load("etrt", etrt::kStrategySwitch);
  if (!module) return state.SkipWithError("loading etrt.pte failed");
  run(state, *module, {1, 0}, 8);
}

void BM_EtrtAlternatingContextPerProfile(benchmark::State& state) {
  auto module = load("etrt", etrt::kStrategyContextPerProfile);
  if (!module) return state.SkipWithError("loading etrt.pte failed");
  run(state, *module, {1, 0}, 8);
}

BENCHMARK(BM_NoopDelegate);
BENCHMARK(BM_EtrtNoGuard);
BENCHMARK(BM_EtrtPinnedDecode);
BENCHMARK(BM_EtrtAlternatingSwitch);
BENCHMARK(BM_EtrtAlternatingContextPerProfile);
BENCHMARK(BM_NoopAligned);
BENCHMARK(BM_EtrtAlignedNoGuard);
BENCHMARK(BM_EtrtAlignedPinnedDecode);
BENCHMARK(BM_EngineEnqueue);

}  // namespace

BENCHMARK_MAIN();
