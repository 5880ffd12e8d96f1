// Delegate-owned state (docs/design.md, decision 18), through ExecuTorch's Module and the GPU-free NvInfer's host
// engines: the blob's delegate_state names a KV cache ExecuTorch does not pass (a partitioner's tag_mutated_buffer);
// the delegate keeps it in storage of its own, bound once, across calls, shared by name between the methods of one
// load (a Module), until a reset starts a new sequence. Programs the packer writes, with and without a named_data
// table, and one ExecuTorch's exporter wrote.

#include <gtest/gtest.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt/state.h"
#include "etrt_gpufree/trace.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace gpufree = etrt::gpufree;
using etrt::module_test::count;
using etrt::module_test::counter;
using etrt::module_test::fixture;
using etrt::module_test::has;
using etrt::module_test::trace_text;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr int32_t kRows = 8;  // state_kv's cache: [1, 8, 2]
constexpr int32_t kWidth = 2;
constexpr int64_t kCacheBytes = kRows * kWidth * sizeof(float);

std::unique_ptr<Module> loaded(const std::string& name, const std::vector<std::string>& methods = {"forward"}) {
  auto module = std::make_unique<Module>(fixture(name));
  for (const std::string& m : methods) {
    const et::Error status = module->load_method(m);
    EXPECT_EQ(status, et::Error::Ok) << m << ": " << etrt::last_error_message();
  }
  return module;
}

// One call of a state_kv method: `rows` ([n, 2]) written at `pos`; returns the cache it holds afterwards.
std::vector<float> write(Module& module, const std::string& method, std::vector<float> rows, int64_t pos) {
  const auto n = static_cast<int32_t>(rows.size() / kWidth);
  auto result = module.execute(
      method, {from_blob(rows.data(), {1, n, kWidth}, ScalarType::Float), from_blob(&pos, {1}, ScalarType::Long)});
  EXPECT_TRUE(result.ok()) << etrt::last_error_message();
  if (!result.ok()) return {};
  const auto& t = result.get()[0].toTensor();
  return std::vector<float>(t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel());
}

// A program ExecuTorch 1.5.1's exporter wrote, committed in tests/backend/fixtures (tests/export/
// make_backend_fixtures.py).
std::string exported_fixture(const std::string& name) {
  return std::string(ETRT_EXPORTED_FIXTURE_DIR) + "/" + name + ".pte";
}

// exported_kv_owned: tests/export/models.py's KvCache, exported with its cache owned by the delegate. Eager, it
// writes x ([1, n, 4]) into rows pos.. of its buffer `cache` ([1, 16, 4], zeros to start) and returns the cache and
// x * 2; Eager is that model, one instance per sequence.
constexpr int64_t kExportedRows = 16, kExportedWidth = 4;

struct Eager {
  std::vector<float> cache = std::vector<float>(kExportedRows * kExportedWidth, 0.0f);
  std::vector<std::vector<float>> step(const std::vector<float>& x, int64_t pos) {
    std::copy(x.begin(), x.end(), cache.begin() + pos * kExportedWidth);
    std::vector<float> doubled = x;
    for (float& v : doubled) v *= 2.0f;
    return {cache, doubled};
  }
};

// One step of exported_kv_owned on `module`: its outputs, flattened.
std::vector<std::vector<float>> step(Module& module, std::vector<float> x, int64_t pos) {
  const auto n = static_cast<int32_t>(x.size() / kExportedWidth);
  auto result = module.forward(std::vector<et::EValue>{from_blob(x.data(), {1, n, kExportedWidth}, ScalarType::Float),
                                                       from_blob(&pos, {1}, ScalarType::Long)});
  EXPECT_TRUE(result.ok()) << etrt::last_error_message();
  std::vector<std::vector<float>> outputs;
  if (!result.ok()) return outputs;
  for (const et::EValue& value : result.get()) {
    const auto& t = value.toTensor();
    outputs.emplace_back(t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel());
  }
  return outputs;
}

// x for a step of `n` rows, different for every (seed, row).
std::vector<float> rows(int64_t n, float seed) {
  std::vector<float> x(static_cast<size_t>(n * kExportedWidth));
  for (size_t i = 0; i < x.size(); ++i) x[i] = seed + 0.25f * static_cast<float>(i + 1);
  return x;
}

// A zero cache with `rows` at `pos`.
std::vector<float> cache_with(std::vector<std::pair<int64_t, std::vector<float>>> writes) {
  std::vector<float> cache(kRows * kWidth, 0.0f);
  for (const auto& [pos, rows] : writes)
    for (size_t i = 0; i < rows.size(); ++i) cache[static_cast<size_t>(pos * kWidth) + i] = rows[i];
  return cache;
}

TEST(DelegateState, TheCallPassesNeitherTheCacheNorItsNewValueAndTheCacheKeepsEveryStep) {
  auto module = loaded("state_kv");
  EXPECT_EQ(write(*module, "forward", {1, 2, 3, 4}, 0), cache_with({{0, {1, 2, 3, 4}}}));
  EXPECT_EQ(write(*module, "forward", {5, 6}, 2), cache_with({{0, {1, 2, 3, 4, 5, 6}}}));
  EXPECT_EQ(write(*module, "forward", {7, 8}, 3), cache_with({{0, {1, 2, 3, 4, 5, 6, 7, 8}}}));
}

TEST(DelegateState, TheStateIsBoundOnceAndTheSteadyDecodeStepRepeatsOnlyTheEnqueue) {
  auto module = loaded("state_kv");
  write(*module, "forward", {1, 2}, 0);  // a decode-shaped step: everything bound
  gpufree::clear_trace("state_kv");
  // The runner's inputs move between calls (ExecuTorch copies them into planned memory, at the same address), the
  // cache never does: nothing is bound or set again.
  for (int64_t pos = 1; pos < 5; ++pos) write(*module, "forward", {1, 2}, pos);
  EXPECT_EQ(count("state_kv", gpufree::TraceKind::kSetTensorAddress), 0) << trace_text("state_kv");
  EXPECT_EQ(count("state_kv", gpufree::TraceKind::kSetInputShape), 0) << trace_text("state_kv");
  EXPECT_EQ(count("state_kv", gpufree::TraceKind::kEnqueue), 4);
}

TEST(DelegateState, TheCountersReportTheStateBytesHeldWhileTheDelegateLives) {
  const int64_t before = counter(etrt::kCounterStateBytes);
  {
    auto module = loaded("state_kv");
    EXPECT_EQ(counter(etrt::kCounterStateBytes), before + kCacheBytes);
  }
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before);
}

TEST(DelegateState, AResetStartsANewSequenceFromTheInitialValue) {
  auto module = loaded("state_kv");
  write(*module, "forward", {1, 2, 3, 4}, 0);
  EXPECT_EQ(etrt::reset_delegate_state("cache"), 1);
  EXPECT_EQ(write(*module, "forward", {9, 9}, 1), cache_with({{1, {9, 9}}})) << "rows 0 are zeros again";
  EXPECT_EQ(etrt::reset_delegate_state("no such state"), 0);
  EXPECT_EQ(etrt::reset_delegate_state(), 1);
  EXPECT_EQ(write(*module, "forward", {5, 5}, 0), cache_with({{0, {5, 5}}}));
}

TEST(DelegateState, PrefillAndDecodeMethodsOfOneProgramShareOneCacheByName) {
  const int64_t before = counter(etrt::kCounterStateBytes);
  auto module = loaded("state_two_methods", {"prefill", "decode"});
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before + kCacheBytes) << "one cache for both methods";
  EXPECT_EQ(write(*module, "prefill", {1, 2, 3, 4}, 0), cache_with({{0, {1, 2, 3, 4}}}));
  EXPECT_EQ(write(*module, "decode", {5, 6}, 2), cache_with({{0, {1, 2, 3, 4, 5, 6}}}));
  EXPECT_EQ(write(*module, "prefill", {7, 8}, 3), cache_with({{0, {1, 2, 3, 4, 5, 6, 7, 8}}}));
  module->unload_method("prefill");
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before + kCacheBytes) << "decode still holds it";
  EXPECT_EQ(write(*module, "decode", {0, 1}, 4), cache_with({{0, {1, 2, 3, 4, 5, 6, 7, 8, 0, 1}}}));
}

// The scope of a state is one load (docs/design.md, decision 18): each Module, each session over a shared Program,
// keeps a cache of its own, whether or not the program has a named_data table. state_kv has one (the packer's empty
// table); state_kv_no_table has none, as ExecuTorch 1.5.1's exporter writes a program without named data, so
// ExecuTorch hands its delegates no NamedDataMap.
class DelegateStatePerLoad : public ::testing::TestWithParam<const char*> {};

TEST_P(DelegateStatePerLoad, TwoModulesOfOneFileKeepACacheEach) {
  const int64_t before = counter(etrt::kCounterStateBytes);
  auto first = loaded(GetParam());
  auto second = loaded(GetParam());
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before + 2 * kCacheBytes);
  EXPECT_EQ(write(*first, "forward", {1, 2}, 0), cache_with({{0, {1, 2}}}));
  EXPECT_EQ(write(*second, "forward", {3, 4}, 1), cache_with({{1, {3, 4}}})) << "the first module's row is not here";
  EXPECT_EQ(write(*first, "forward", {5, 6}, 2), cache_with({{0, {1, 2}}, {2, {5, 6}}}));
  EXPECT_EQ(write(*second, "forward", {7, 8}, 2), cache_with({{1, {3, 4}}, {2, {7, 8}}}));
}

// Sessions: Modules made from the Program another Module loaded (Module(std::shared_ptr<Program>)). Each has its own
// method allocator, which is the scope: a sequence each.
TEST_P(DelegateStatePerLoad, SessionsOverOneLoadedProgramKeepACacheEach) {
  const int64_t before = counter(etrt::kCounterStateBytes);
  auto first = loaded(GetParam());
  Module session(first->program());
  ASSERT_EQ(session.load_method("forward"), et::Error::Ok) << etrt::last_error_message();
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before + 2 * kCacheBytes);
  EXPECT_EQ(write(*first, "forward", {1, 2}, 0), cache_with({{0, {1, 2}}}));
  EXPECT_EQ(write(session, "forward", {3, 4}, 0), cache_with({{0, {3, 4}}}));
  EXPECT_EQ(write(*first, "forward", {5, 6}, 1), cache_with({{0, {1, 2, 5, 6}}}));
}

// A state lives while its delegates do: a Module loaded after the last one was destroyed starts from zeros, even
// where its method allocator takes the address the old one had.
TEST_P(DelegateStatePerLoad, AModuleLoadedAfterTheLastOneWasDestroyedStartsFromTheInitialValue) {
  const int64_t before = counter(etrt::kCounterStateBytes);
  for (int load = 0; load < 3; ++load) {
    auto module = loaded(GetParam());
    EXPECT_EQ(write(*module, "forward", {1, 2}, load), cache_with({{load, {1, 2}}})) << "load " << load;
  }
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before);
}

INSTANTIATE_TEST_SUITE_P(Programs, DelegateStatePerLoad, ::testing::Values("state_kv", "state_kv_no_table"));

// Two programs without a named_data table, each with a state named "cache" of another shape, loaded side by side:
// nothing ties them together, so neither is refused nor sees the other's values.
TEST(DelegateState, TwoProgramsWithoutANamedDataTableAndAStateOfOneNameLoadSideBySide) {
  auto ours = loaded("state_kv_no_table");
  Module exported(exported_fixture("exported_kv_owned"));
  etrt::clear_last_error();
  EXPECT_EQ(exported.load_method("forward"), et::Error::Ok) << etrt::last_error_message();
  EXPECT_EQ(write(*ours, "forward", {1, 2}, 0), cache_with({{0, {1, 2}}}));
}

// What the exporter writes for this model has no named_data table: two Modules of the file, their steps
// interleaved, each compute what an eager model of their own computes.
TEST(DelegateStateExported, TwoModulesOfAnExportedProgramInterleavedEachRunLikeEager) {
  const int64_t before = counter(etrt::kCounterStateBytes);
  Module first(exported_fixture("exported_kv_owned"));
  Module second(exported_fixture("exported_kv_owned"));
  Eager eager_first, eager_second;
  const std::vector<std::pair<int64_t, int64_t>> steps = {{3, 0}, {1, 3}, {4, 4}, {1, 8}};  // (rows, pos)
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto [n, pos] = steps[i];
    const std::vector<float> x1 = rows(n, 1.0f + static_cast<float>(i)), x2 = rows(n, -5.0f - static_cast<float>(i));
    EXPECT_EQ(step(first, x1, pos), eager_first.step(x1, pos)) << "first module, step " << i;
    EXPECT_EQ(step(second, x2, pos), eager_second.step(x2, pos)) << "second module, step " << i;
  }
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before + 2 * kExportedRows * kExportedWidth * int64_t{sizeof(float)});
}

TEST(DelegateStateExported, AModuleOfAnExportedProgramLoadedAfterTheLastOneWasDestroyedStartsFromZeros) {
  for (int load = 0; load < 3; ++load) {
    Module module(exported_fixture("exported_kv_owned"));
    Eager eager;
    for (int64_t pos = 0; pos < 3; ++pos) {
      const std::vector<float> x = rows(1, static_cast<float>(10 * load + pos));
      EXPECT_EQ(step(module, x, pos), eager.step(x, pos)) << "load " << load << ", pos " << pos;
    }
  }
}

TEST(DelegateStateExported, SessionsOverOneExportedProgramEachRunLikeEager) {
  Module first(exported_fixture("exported_kv_owned"));
  ASSERT_EQ(first.load(), et::Error::Ok);
  Module session(first.program());
  Eager eager_first, eager_session;
  for (int64_t pos = 0; pos < 3; ++pos) {
    const std::vector<float> x1 = rows(1, static_cast<float>(pos)), x2 = rows(1, 100.0f + static_cast<float>(pos));
    EXPECT_EQ(step(first, x1, pos), eager_first.step(x1, pos)) << "pos " << pos;
    EXPECT_EQ(step(session, x2, pos), eager_session.step(x2, pos)) << "pos " << pos;
  }
}

TEST(DelegateState, AStateTheEngineDoesNotUpdateInPlaceIsCopiedBackAfterEachCall) {
  auto module = loaded("state_acc");
  std::vector<float> x = {1.0f, 2.0f};
  for (float step = 1; step <= 3; ++step) {
    auto input = from_blob(x.data(), {1, 2}, ScalarType::Float);
    auto result = module->forward(std::vector<::executorch::runtime::EValue>{input});
    ASSERT_TRUE(result.ok()) << etrt::last_error_message();
    const float* y = result.get()[0].toTensor().const_data_ptr<float>();
    EXPECT_EQ(y[0], 2.0f * step);  // y = 2 (acc + x), acc accumulating x from zeros
    EXPECT_EQ(y[1], 4.0f * step);
  }
}

TEST(DelegateStateRefusal, AnInitialValueTheProgramDoesNotCarryIsRefusedNamingTheKey) {
  Module module(fixture("state_missing_initial"));
  etrt::clear_last_error();
  EXPECT_NE(module.load_method("forward"), et::Error::Ok);
  const std::string message = etrt::last_error_message();
  EXPECT_TRUE(has(message, "state 'cache' starts from named data 'etrt_state/cache', which the program does not have"))
      << message;
  EXPECT_TRUE(has(message, "re-export the model, or load it with the .ptd file that holds its named data")) << message;
  // The runtime stays usable.
  auto ok = loaded("state_kv");
  EXPECT_EQ(write(*ok, "forward", {1, 1}, 0), cache_with({{0, {1, 1}}}));
}

TEST(DelegateStateRefusal, ADynamicStateIsRefusedWithItsBounds) {
  Module module(fixture("state_dynamic"));
  etrt::clear_last_error();
  EXPECT_NE(module.load_method("forward"), et::Error::Ok);
  const std::string message = etrt::last_error_message();
  EXPECT_TRUE(has(message,
                  "state 'x' (input 'x') accepts [1, 1, 2]..[1, 4, 2] under profile 0, but a delegate-owned "
                  "state has one static shape"))
      << message;
}

}  // namespace
