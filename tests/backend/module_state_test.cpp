// Delegate-owned state (docs/design.md, decision 18), through ExecuTorch's Module and the GPU-free NvInfer's host
// engines: the blob's delegate_state names a KV cache ExecuTorch does not pass (a partitioner's tag_mutated_buffer);
// the delegate keeps it in storage of its own, bound once, across calls, shared by name between the methods of one
// program, until a reset starts a new sequence.

#include <gtest/gtest.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <memory>
#include <string>
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

// Two loads of one file are two Programs, each with a NamedDataMap of its own (the packer writes an empty
// named-data table, as ExecuTorch's exporter does): two sequences, two caches.
TEST(DelegateState, TwoModulesOfOneFileKeepACacheEach) {
  const int64_t before = counter(etrt::kCounterStateBytes);
  auto first = loaded("state_kv");
  auto second = loaded("state_kv");
  EXPECT_EQ(counter(etrt::kCounterStateBytes), before + 2 * kCacheBytes);
  EXPECT_EQ(write(*first, "forward", {1, 2}, 0), cache_with({{0, {1, 2}}}));
  EXPECT_EQ(write(*second, "forward", {3, 4}, 1), cache_with({{1, {3, 4}}})) << "the first module's row is not here";
  EXPECT_EQ(write(*first, "forward", {5, 6}, 2), cache_with({{0, {1, 2}}, {2, {5, 6}}}));
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
