// Host overhead of one Module::forward() through etrt, against a delegate
// that does nothing, side by side in one process. The etrt delegate runs a
// GPU-free NvInfer engine that only copies its input, with tracing off, so what is
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
// (bench/run_bench.sh module prints that ratio). BM_NoopAlignedThenEngineEnqueue runs
// the noop forward() and the engine's enqueue in one loop, so that the engine is
// also timed beside ExecuTorch's code (bench/run_bench.sh module prints the ratio with
// the engine charged that instead).

#include <benchmark/benchmark.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

#include <NvInferRuntime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt_gpufree/trace.h"
#include "module_loading.h"

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
  et::Error status = et::Error::Ok;
  auto module =
      etrt::testing::load_module(pte_dir() + "/" + name + ".pte", {{etrt::kOptionProfileStrategy, strategy}}, &status);
  if (status != et::Error::Ok) return nullptr;
  return module;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Aligned = std::unique_ptr<float, FreeDeleter>;
Aligned aligned_floats(size_t n) { return Aligned(static_cast<float*>(std::aligned_alloc(256, (n * 4 + 255) / 256 * 256))); }

// A program loaded for forward() on the runner's own aligned buffers (unplanned IO): input [1,1] = 1, output [1,64].
struct AlignedModule {
  std::unique_ptr<Module> module;
  Aligned x = aligned_floats(64), y = aligned_floats(64);
  executorch::extension::TensorPtr one;

  // False, with nothing loaded, when the program cannot be loaded or its output not set.
  bool load(const char* program) {
    module = ::load(program);
    x.get()[0] = 1.0f;
    one = executorch::extension::from_blob(x.get(), {1, 1}, ScalarType::Float);
    return module != nullptr &&
           module->set_output(executorch::extension::from_blob(y.get(), {1, 64}, ScalarType::Float)) == et::Error::Ok;
  }
  bool forward() { return module->forward(one).ok(); }
};

// One forward() per iteration of `program` on the runner's aligned buffers (unplanned IO), under `pin` (-1: no
// guard).
void run_aligned(benchmark::State& state, const char* program, int32_t pin) {
  etrt::gpufree::set_tracing_enabled(false);
  AlignedModule aligned;
  if (!aligned.load(program)) return state.SkipWithError("loading the unplanned program failed");
  int64_t allocations = 0, failures = 0;
  for (auto _ : state) {
    const int64_t before = etrt::allocation_count();
    if (pin < 0) {
      failures += !aligned.forward();
    } else {
      etrt::OptimizationProfileGuard guard(pin);
      failures += !aligned.forward();
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

// The etrt programs' engine, driven through NvInfer directly: shapes and addresses set once, as a steady-state
// decode step leaves them, so that enqueue() is what etrt's delegate calls once per forward().
struct IdentityEngine {
  // Declaration order is TensorRT's order reversed: the context goes before the engine, the engine before the
  // runtime, the runtime before its logger.
  QuietLogger logger;
  std::unique_ptr<nvinfer1::IRuntime> runtime;
  std::unique_ptr<nvinfer1::ICudaEngine> engine;
  std::unique_ptr<nvinfer1::IExecutionContext> context;
  Aligned x = aligned_floats(64), y = aligned_floats(64);

  bool load() {
    std::ifstream file(pte_dir() + "/bench_identity.engine", std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    runtime.reset(nvinfer1::createInferRuntime(logger));
    engine.reset(runtime ? runtime->deserializeCudaEngine(bytes.data(), bytes.size()) : nullptr);
    context.reset(engine ? engine->createExecutionContext() : nullptr);
    nvinfer1::Dims one{};
    one.nbDims = 2;
    one.d[0] = one.d[1] = 1;
    return context && context->setInputShape("x", one) && context->setTensorAddress("x", x.get()) &&
           context->setTensorAddress("y", y.get());
  }
  bool enqueue() { return context->enqueueV3(nullptr); }
};

// The engine alone, with nothing else running between its enqueues (its code stays in the instruction cache).
void BM_EngineEnqueue(benchmark::State& state) {
  etrt::gpufree::set_tracing_enabled(false);
  IdentityEngine engine;
  if (!engine.load()) return state.SkipWithError("could not set up the engine");
  int64_t failures = 0;
  for (auto _ : state) failures += !engine.enqueue();
  if (failures) state.SkipWithError("enqueueV3 failed");
}

// The do-nothing delegate's forward() and then the same engine's enqueue, in each iteration: the engine pays what
// it pays inside a forward() (ExecuTorch's code and its own compete for the instruction cache), which the engine
// timed alone does not. bench/run_bench.sh module takes (this - BM_NoopAligned) as the engine's cost in a forward().
void BM_NoopAlignedThenEngineEnqueue(benchmark::State& state) {
  etrt::gpufree::set_tracing_enabled(false);
  AlignedModule aligned;
  IdentityEngine engine;
  if (!aligned.load("noop_unplanned") || !engine.load()) return state.SkipWithError("could not set up");
  int64_t failures = 0;
  for (auto _ : state) {
    failures += !aligned.forward();
    failures += !engine.enqueue();
  }
  if (failures) state.SkipWithError("forward() or enqueueV3 failed");
}

// etrt's own cost, paired round by round: each round times a block of do-nothing forward()s, a block of etrt
// forward()s, the same under a pin of the decode profile (a guard per call), a block of the engine's enqueues alone
// and a block of do-nothing forward()s each followed by an enqueue, back to back on the same buffers, and takes the
// ratios within the round. A burst of noise on a shared machine then lands on one round's five blocks, not on one
// case of a sequential run, and the median over the rounds leaves it out. Counters: each block's median ns per call,
// and the medians of the per-round ratios
//   own_ratio_engine_alone  = (etrt - engine alone) / noop
//   own_ratio_engine_beside = (etrt - (noop then engine - noop)) / noop
//   own_ratio_pinned        = (etrt under the pin - engine alone) / noop
// (bench/run_bench.sh module prints them).
void BM_OwnCostPaired(benchmark::State& state) {
  etrt::gpufree::set_tracing_enabled(false);
  AlignedModule noop, etrt_module;
  IdentityEngine engine;
  if (!noop.load("noop_unplanned") || !etrt_module.load("etrt_unplanned") || !engine.load())
    return state.SkipWithError("could not set up");
  constexpr int kRounds = 101;
  constexpr int kCalls = 2000;
  using Clock = std::chrono::steady_clock;
  int64_t failures = 0;
  // ns per call of `body` over one block.
  auto block = [&](auto&& body) {
    const auto start = Clock::now();
    for (int i = 0; i < kCalls; ++i) failures += !body();
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kCalls;
  };
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> noop_ns, etrt_ns, pinned_ns, engine_ns, beside_ns, alone_ratio, beside_ratio, pinned_ratio;
  for (auto _ : state) {
    for (int round = 0; round < kRounds; ++round) {
      const double n = block([&] { return noop.forward(); });
      const double e = block([&] { return etrt_module.forward(); });
      const double p = block([&] {
        etrt::OptimizationProfileGuard decode(0);
        return etrt_module.forward();
      });
      const double q = block([&] { return engine.enqueue(); });
      const double b = block([&] { return noop.forward() && engine.enqueue(); });
      noop_ns.push_back(n);
      etrt_ns.push_back(e);
      pinned_ns.push_back(p);
      engine_ns.push_back(q);
      beside_ns.push_back(b);
      alone_ratio.push_back((e - q) / n);
      beside_ratio.push_back((e - (b - n)) / n);
      pinned_ratio.push_back((p - q) / n);
    }
  }
  if (failures) return state.SkipWithError("forward() or enqueueV3 failed");
  state.counters["noop_ns"] = median(noop_ns);
  state.counters["etrt_ns"] = median(etrt_ns);
  state.counters["etrt_pinned_ns"] = median(pinned_ns);
  state.counters["engine_ns"] = median(engine_ns);
  state.counters["noop_then_engine_ns"] = median(beside_ns);
  state.counters["own_ratio_engine_alone"] = median(alone_ratio);
  state.counters["own_ratio_engine_beside"] = median(beside_ratio);
  state.counters["own_ratio_pinned"] = median(pinned_ratio);
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
BENCHMARK(BM_NoopAlignedThenEngineEnqueue);
BENCHMARK(BM_OwnCostPaired)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
