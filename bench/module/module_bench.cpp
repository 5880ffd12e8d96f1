// Host overhead of one Module::forward() through etrt, against a delegate
// that does nothing, side by side in one process. The etrt delegate runs a
// reference engine that only copies its input, with tracing off, so what is
// measured is the delegate's own work: reading the request, choosing and
// validating the profile, setting shapes, resizing outputs, binding, enqueue.
//
// Counters: allocs_per_forward counts every operator new in the process per
// forward() (ExecuTorch's Module allocates its result vector); the etrt rows
// should match the noop row, i.e. etrt itself allocates nothing.

#include <benchmark/benchmark.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

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

// The baseline: a delegate that resizes its output and returns.
class NoopBackend final : public et::BackendInterface {
 public:
  bool is_available() const override { return true; }
  et::Result<et::DelegateHandle*> init(et::BackendInitContext& context, et::FreeableBuffer* processed,
                                       et::ArrayRef<et::CompileSpec>) const override {
    processed->Free();
    return context.get_runtime_allocator()->allocate(1);
  }
  et::Error execute(et::BackendExecutionContext&, et::DelegateHandle*, et::Span<et::EValue*> args) const override {
    return et::resize_tensor(args[1]->toTensor(), args[0]->toTensor().sizes());
  }
};
NoopBackend g_noop;
const auto g_registered = et::register_backend({"EtrtBenchNoop", &g_noop});

std::unique_ptr<Module> load(const char* name, const char* strategy = etrt::kStrategySwitch) {
  auto module = std::make_unique<Module>(std::string(ETRT_BENCH_PTE_DIR) + "/" + name + ".pte");
  et::BackendOptions<1> options;
  (void)options.set_option(etrt::kOptionProfileStrategy, strategy);
  et::LoadBackendOptionsMap map;
  (void)map.set_options(etrt::kBackendId, options.view());
  if (module->load(map) != et::Error::Ok || module->load_forward() != et::Error::Ok) return nullptr;
  return module;
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

}  // namespace

BENCHMARK_MAIN();
