// One scratch for all delegates of a program (load option shared_scratch, docs/design.md decision 19), through
// ExecuTorch's Module and the GPU-free NvInfer's host engines: the program holds the largest single need instead of
// the sum, computes the same, grows when a delegate with a larger need joins (the others moving to the new buffer
// before their next enqueue), shrinks and frees as delegates leave, and serializes two methods of one Module on two
// threads. The counter scratch_bytes says what is held.
//
// A pool serves one load (scratch_pool.h; delegate.h, load_scope()): the methods of one Module share it; two Modules,
// sessions over one loaded Program included, hold one each, whether or not the program has a named_data table
// (scratch_chain_no_table has none, as ExecuTorch 1.5.1's exporter writes a program without named data).

#include <gtest/gtest.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt_gpufree/trace.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace gpufree = etrt::gpufree;
namespace fx = etrt::fixtures;
using etrt::module_test::count;
using etrt::module_test::counter;
using etrt::module_test::fixture;
using etrt::module_test::has;
using etrt::module_test::trace_text;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr size_t kChain = std::size(fx::kScratchChainNeeds);
const int64_t kChainSum = std::accumulate(std::begin(fx::kScratchChainNeeds), std::end(fx::kScratchChainNeeds), 0ll);
const int64_t kChainLargest = *std::max_element(std::begin(fx::kScratchChainNeeds), std::end(fx::kScratchChainNeeds));

// `name` loaded with shared_scratch on or off and optionally a profile strategy (Module keeps the options for
// methods loaded later), and `method` loaded.
std::unique_ptr<Module> loaded(const std::string& name, bool shared, const char* strategy = nullptr,
                               const char* method = "forward") {
  etrt::testing::LoadOptions options = {{etrt::kOptionSharedScratch, shared}};
  if (strategy != nullptr) options.emplace_back(etrt::kOptionProfileStrategy, strategy);
  et::Error status = et::Error::Ok;
  auto module = etrt::testing::load_module(fixture(name), options, &status, method);
  EXPECT_EQ(status, et::Error::Ok) << name << ": " << etrt::last_error_message();
  return module;
}

void load_method(Module& module, const char* method) {
  etrt::clear_last_error();
  EXPECT_EQ(module.load_method(method), et::Error::Ok) << method << ": " << etrt::last_error_message();
}

std::vector<float> run(Module& module, std::vector<float> x, const char* method = "forward") {
  auto result = module.execute(method, from_blob(x.data(), {1, 4}, ScalarType::Float));
  EXPECT_TRUE(result.ok()) << etrt::last_error_message();
  if (!result.ok()) return {};
  const auto& y = result.get()[0].toTensor();
  return std::vector<float>(y.const_data_ptr<float>(), y.const_data_ptr<float>() + y.numel());
}

std::vector<float> big_expected(std::vector<float> x) {
  for (float& v : x) v = 2.0f * v + fx::kScratchBigBias;
  return x;
}

std::string chain_label(size_t i) { return "scratch_chain_" + std::to_string(i); }

int64_t chain_count(gpufree::TraceKind kind) {
  int64_t n = 0;
  for (size_t i = 0; i < kChain; ++i) n += count(chain_label(i), kind);
  return n;
}

void clear_chain_traces() {
  for (size_t i = 0; i < kChain; ++i) gpufree::clear_trace(chain_label(i));
}

const std::vector<float> kX = {0.5f, -1.0f, 2.0f, 3.25f};

TEST(SharedScratch, WithoutTheOptionEachDelegateHoldsItsOwnScratchTheSumOfTheNeeds) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  {
    auto module = loaded("scratch_chain", /*shared=*/false);
    EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + kChainSum);
    EXPECT_EQ(run(*module, kX), fx::scratch_chain_expected(kX));
  }
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before);
}

TEST(SharedScratch, WithTheOptionTheProgramHoldsTheLargestSingleNeedAndComputesTheSame) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  auto own = loaded("scratch_chain", /*shared=*/false);
  const std::vector<float> want = run(*own, kX);
  own.reset();
  {
    auto shared = loaded("scratch_chain", /*shared=*/true);
    EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + kChainLargest);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(run(*shared, kX), want) << "call " << i;
    EXPECT_EQ(want, fx::scratch_chain_expected(kX));
  }
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before) << "the pool is freed with its last delegate";
}

TEST(SharedScratch, ContextsAreCreatedWithoutMemoryAndGivenThePoolsBeforeTheirFirstEnqueueOnly) {
  clear_chain_traces();
  auto module = loaded("scratch_chain", /*shared=*/true);
  for (size_t i = 0; i < kChain; ++i) {
    const auto created = etrt::module_test::events_of(chain_label(i), gpufree::TraceKind::kCreateContext, true);
    ASSERT_EQ(created.size(), 1u) << trace_text(chain_label(i));
    EXPECT_TRUE(created[0].user_managed_memory) << chain_label(i);
  }
  EXPECT_EQ(chain_count(gpufree::TraceKind::kSetDeviceMemory), 0) << "not at load";
  run(*module, kX);
  EXPECT_EQ(chain_count(gpufree::TraceKind::kSetDeviceMemory), static_cast<int64_t>(kChain));
  for (size_t i = 0; i < kChain; ++i) {
    const auto given = etrt::module_test::events_of(chain_label(i), gpufree::TraceKind::kSetDeviceMemory, true);
    ASSERT_EQ(given.size(), 1u);
    EXPECT_EQ(given[0].size, static_cast<uint64_t>(kChainLargest)) << "every delegate runs in the one buffer";
  }
  clear_chain_traces();
  for (int i = 0; i < 3; ++i) run(*module, kX);
  EXPECT_EQ(chain_count(gpufree::TraceKind::kSetDeviceMemory), 0) << "a steady call gives nothing again";
  EXPECT_EQ(chain_count(gpufree::TraceKind::kSetTensorAddress), 0) << "and stays on the repeat fast path";
  EXPECT_EQ(chain_count(gpufree::TraceKind::kEnqueue), static_cast<int64_t>(3 * kChain));
}

// scratch_methods: "forward" (the chain) and "big" in one program, so one pool; "big" loaded later grows it.
TEST(SharedScratch, ThePoolGrowsWhenADelegateWithALargerNeedJoinsAndTheOthersMoveToIt) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  auto module = loaded("scratch_methods", /*shared=*/true);
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + kChainLargest);
  EXPECT_EQ(run(*module, kX), fx::scratch_chain_expected(kX));
  load_method(*module, "big");
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + fx::kScratchBigNeed)
      << "grown to the new largest need, not added";
  clear_chain_traces();
  EXPECT_EQ(run(*module, kX), fx::scratch_chain_expected(kX));
  const auto given = etrt::module_test::events_of(chain_label(0), gpufree::TraceKind::kSetDeviceMemory, true);
  ASSERT_EQ(given.size(), 1u) << "re-pointed before its next enqueue\n" << trace_text(chain_label(0));
  EXPECT_EQ(given[0].size, static_cast<uint64_t>(fx::kScratchBigNeed));
  EXPECT_EQ(chain_count(gpufree::TraceKind::kSetDeviceMemory), static_cast<int64_t>(kChain));
  EXPECT_EQ(run(*module, kX, "big"), big_expected(kX));
  EXPECT_EQ(run(*module, kX), fx::scratch_chain_expected(kX));
  module->unload_method("big");
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + kChainLargest) << "shrunk back when the largest left";
  clear_chain_traces();
  EXPECT_EQ(run(*module, kX), fx::scratch_chain_expected(kX));
  EXPECT_EQ(chain_count(gpufree::TraceKind::kSetDeviceMemory), static_cast<int64_t>(kChain));
  module.reset();
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before);
}

TEST(SharedScratch, ADelegateWithASmallerNeedJoinsWithoutMovingAnyone) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  auto module = loaded("scratch_methods", /*shared=*/true, nullptr, "big");
  EXPECT_EQ(run(*module, kX, "big"), big_expected(kX));
  gpufree::clear_trace("scratch_big_0");
  load_method(*module, "forward");
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + fx::kScratchBigNeed);
  EXPECT_EQ(run(*module, kX), fx::scratch_chain_expected(kX));
  EXPECT_EQ(run(*module, kX, "big"), big_expected(kX));
  EXPECT_EQ(count("scratch_big_0", gpufree::TraceKind::kSetDeviceMemory), 0) << trace_text("scratch_big_0");
}

TEST(SharedScratch, ADelegateLoadedWithoutTheOptionKeepsItsOwnScratch) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  auto chain = loaded("scratch_chain", /*shared=*/true);
  auto big = loaded("scratch_big", /*shared=*/false);
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + kChainLargest + fx::kScratchBigNeed);
  EXPECT_EQ(run(*big, kX), big_expected(kX));
  EXPECT_EQ(run(*chain, kX), fx::scratch_chain_expected(kX));
}

// A pool serves one load: two programs (two files, or two loads of one file) each hold their own, and may run at once.
TEST(SharedScratch, TwoProgramsHoldAPoolEach) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  auto chain = loaded("scratch_chain", /*shared=*/true);
  auto big = loaded("scratch_big", /*shared=*/true);
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + kChainLargest + fx::kScratchBigNeed);
  auto again = loaded("scratch_chain", /*shared=*/true);
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + 2 * kChainLargest + fx::kScratchBigNeed);
  EXPECT_EQ(run(*big, kX), big_expected(kX));
  EXPECT_EQ(run(*chain, kX), fx::scratch_chain_expected(kX));
  EXPECT_EQ(run(*again, kX), fx::scratch_chain_expected(kX));
}

// The same for programs without a named_data table: ExecuTorch hands their delegates no NamedDataMap, and still
// nothing ties two loads together.
TEST(SharedScratch, TwoLoadsOfAProgramWithoutANamedDataTableHoldAPoolEach) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  auto first = loaded("scratch_chain_no_table", /*shared=*/true);
  auto second = loaded("scratch_chain_no_table", /*shared=*/true);
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + 2 * kChainLargest);
  EXPECT_EQ(run(*first, kX), fx::scratch_chain_expected(kX));
  EXPECT_EQ(run(*second, kX), fx::scratch_chain_expected(kX));
}

// Sessions: Modules made from the Program another Module loaded (Module(std::shared_ptr<Program>)). Each has its own
// method allocator, so each is a load of its own: a pool each, and their executions overlap instead of taking turns.
TEST(SharedScratch, SessionsOverOneLoadedProgramHoldAPoolEach) {
  for (const char* name : {"scratch_chain", "scratch_chain_no_table"}) {
    const int64_t before = counter(etrt::kCounterScratchBytes);
    auto first = loaded(name, /*shared=*/true);
    Module session(first->program());
    ASSERT_EQ(etrt::testing::load_with_options(session, {{etrt::kOptionSharedScratch, true}}), et::Error::Ok)
        << name << ": " << etrt::last_error_message();
    EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + 2 * kChainLargest) << name;
    EXPECT_EQ(run(session, kX), fx::scratch_chain_expected(kX)) << name;
    EXPECT_EQ(run(*first, kX), fx::scratch_chain_expected(kX)) << name;
  }
}

TEST(SharedScratch, ContextPerProfileContextsDrawOnThePoolToo) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  int64_t own = 0;
  {
    auto module = loaded("llm", /*shared=*/false, etrt::kStrategyContextPerProfile);
    own = counter(etrt::kCounterScratchBytes) - before;
  }
  ASSERT_GT(own, 0);
  auto module = loaded("llm", /*shared=*/true, etrt::kStrategyContextPerProfile);
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + own) << "one buffer for both contexts, as without the option";
  const auto prompt = etrt::module_test::token_ids(40), token = etrt::module_test::token_ids(1);
  for (int i = 0; i < 2; ++i) {
    etrt::module_test::expect_logits(etrt::module_test::run_ids(*module, prompt), prompt);
    etrt::module_test::expect_logits(etrt::module_test::run_ids(*module, token), token);
  }
}

// Two methods of one program, one pool, run from two threads at once: the pool's lock takes them in turn.
TEST(SharedScratch, TwoMethodsOfOneProgramOnTwoThreadsShareThePoolAndComputeCorrectly) {
  const int64_t before = counter(etrt::kCounterScratchBytes);
  auto module = loaded("scratch_methods", /*shared=*/true);
  load_method(*module, "big");
  EXPECT_EQ(counter(etrt::kCounterScratchBytes), before + fx::kScratchBigNeed) << "one pool for both methods";
  constexpr int kCalls = 200;
  auto worker = [&module](const char* method, float offset, int* wrong) {
    const bool chain = std::string(method) == "forward";
    for (int i = 0; i < kCalls; ++i) {
      const std::vector<float> x = {offset + static_cast<float>(i), offset, -offset, 1.0f};
      *wrong += run(*module, x, method) != (chain ? fx::scratch_chain_expected(x) : big_expected(x));
    }
  };
  int wrong_chain = 0, wrong_big = 0;
  std::thread a(worker, "forward", 1.0f, &wrong_chain);
  std::thread b(worker, "big", 100.0f, &wrong_big);
  a.join();
  b.join();
  EXPECT_EQ(wrong_chain, 0);
  EXPECT_EQ(wrong_big, 0);
}

TEST(SharedScratchRefusal, TheOptionMustBeABool) {
  et::Error status = et::Error::Ok;
  etrt::testing::load_module(fixture("scratch_chain"), {{etrt::kOptionSharedScratch, 1}}, &status);
  EXPECT_EQ(status, et::Error::InvalidArgument);
  const std::string message = etrt::last_error_message();
  EXPECT_TRUE(has(message, "TensorRTBackend load option 'shared_scratch' must be a bool, got a int")) << message;
}

}  // namespace
