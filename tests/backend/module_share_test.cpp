// One engine, many sessions (docs/design.md, "One engine, many sessions"), through ExecuTorch's Module and the
// GPU-free NvInfer's host engines: Modules of one file hold one deserialized engine (load option share_engine, on by
// default), each with its own execution contexts, profile state and delegate-owned state, and the engine goes with
// the last of them. Engines whose contexts cannot share a profile (TensorRT 8.6 without kPROFILE_SHARING_0806) are
// not shared.

#include <gtest/gtest.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt_gpufree/faults.h"
#include "etrt_gpufree/trace.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace gpufree = etrt::gpufree;
using etrt::module_test::count;
using etrt::module_test::counter;
using etrt::module_test::expect_logits;
using etrt::module_test::fixture;
using etrt::module_test::has;
using etrt::module_test::run_ids;
using etrt::module_test::token_ids;
using etrt::testing::load_module;
using etrt::testing::LoadOptions;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using Sessions = std::vector<std::unique_ptr<Module>>;

// The engine counters (etrt/options.h), as a runner reads them.
struct Engines {
  int64_t deserialized, resident, bytes, sessions;
  Engines minus(const Engines& before) const {
    return {deserialized - before.deserialized, resident - before.resident, bytes - before.bytes,
            sessions - before.sessions};
  }
};
Engines engines() {
  return {counter(etrt::kCounterEnginesDeserialized), counter(etrt::kCounterEnginesResident),
          counter(etrt::kCounterEngineBytes), counter(etrt::kCounterEngineSessions)};
}

// Engines deserialized, engines resident and sessions held: `got`'s three counts.
void expect_engines(const Engines& got, int64_t deserialized, int64_t resident, int64_t sessions) {
  EXPECT_EQ(got.deserialized, deserialized);
  EXPECT_EQ(got.resident, resident);
  EXPECT_EQ(got.sessions, sessions);
}

// A load of llm during which `call` fails once: it must fail. The Module stays with the caller, so that what the
// failed load still holds shows in the counters.
std::unique_ptr<Module> load_failing_at(gpufree::Call call) {
  gpufree::inject_fault(call, 1, "llm");
  et::Error status = et::Error::Ok;
  auto module = load_module(fixture("llm"), {}, &status);
  gpufree::clear_faults();
  EXPECT_NE(status, et::Error::Ok);
  return module;
}

Sessions load_sessions(const std::string& name, size_t n, const LoadOptions& options = {}) {
  Sessions sessions;
  for (size_t i = 0; i < n; ++i) {
    et::Error status = et::Error::Internal;
    sessions.push_back(load_module(fixture(name), options, &status));
    EXPECT_EQ(status, et::Error::Ok) << name << " session " << i << ": " << etrt::last_error_message();
  }
  return sessions;
}

// Session i's step k of an llm conversation: a prompt of its own length, then single-token decode steps (the two
// profiles of llm, chosen automatically).
std::vector<int64_t> step_ids(size_t session, int step) {
  if (step % 4 == 0) return token_ids(32 + (session * 5 + static_cast<size_t>(step)) % 40);
  return {static_cast<int64_t>((session + static_cast<size_t>(step)) % etrt::fixtures::kVocab)};
}

// ---- llm: N Modules, one engine ----

class SharedEngine : public ::testing::TestWithParam<size_t> {};

TEST_P(SharedEngine, ModulesOfOneFileHoldOneEngineAndEachRunsItsOwnSteps) {
  const size_t n = GetParam();
  gpufree::clear_trace("llm");
  const Engines before = engines();
  Sessions sessions = load_sessions("llm", n);
  const Engines loaded = engines().minus(before);
  expect_engines(loaded, 1, 1, static_cast<int64_t>(n));
  EXPECT_GT(loaded.bytes, 0);
  EXPECT_EQ(gpufree::trace_counters("llm").engines_loaded, 1);
  // Interleaved: every session a step at a time, each switching between prefill and decode on its own contexts.
  for (int step = 0; step < 6; ++step) {
    for (size_t i = 0; i < n; ++i) {
      const std::vector<int64_t> ids = step_ids(i, step);
      expect_logits(run_ids(*sessions[i], ids), ids);
    }
  }
  // Destroyed one by one: the engine stays while any session holds it, and goes with the last.
  for (size_t i = 0; i + 1 < n; ++i) {
    sessions[i].reset();
    const std::vector<int64_t> ids = step_ids(n - 1, static_cast<int>(i));
    expect_logits(run_ids(*sessions[n - 1], ids), ids);
  }
  EXPECT_EQ(engines().minus(before).sessions, 1);
  EXPECT_EQ(count("llm", gpufree::TraceKind::kDestroyEngine), 0);
  sessions.clear();
  const Engines gone = engines().minus(before);
  EXPECT_EQ(gone.resident, 0);
  EXPECT_EQ(gone.bytes, 0);
  EXPECT_EQ(gone.sessions, 0);
  EXPECT_EQ(count("llm", gpufree::TraceKind::kDestroyEngine), 1);
}

INSTANTIATE_TEST_SUITE_P(Sessions, SharedEngine, ::testing::Values(2, 8, 32));

TEST(SharedEngine, WithShareEngineOffEachModuleDeserializesItsOwn) {
  const Engines before = engines();
  Sessions shared = load_sessions("llm", 2);
  const int64_t one_engine = engines().minus(before).bytes;
  Sessions own = load_sessions("llm", 3, {{etrt::kOptionShareEngine, false}});
  const Engines loaded = engines().minus(before);
  expect_engines(loaded, 4, 4, 5);
  EXPECT_GT(one_engine, 0);
  EXPECT_EQ(loaded.bytes, 4 * one_engine) << "the shared engine once, the three others each";
  for (Sessions* group : {&shared, &own})
    for (size_t i = 0; i < group->size(); ++i) expect_logits(run_ids(*(*group)[i], step_ids(i, 0)), step_ids(i, 0));
}

// The weight-streaming budget is the engine's (TensorRT fixes it with the first context), so loads asking for
// different budgets hold different engines; options that are the session's (profile strategy) do not matter.
TEST(SharedEngine, LoadsAskingForAnotherWeightStreamingBudgetHoldAnotherEngine) {
  const Engines before = engines();
  Sessions plain = load_sessions("llm", 1);
  Sessions per_profile = load_sessions("llm", 1, {{etrt::kOptionProfileStrategy, etrt::kStrategyContextPerProfile}});
  Sessions budget = load_sessions("llm", 2, {{etrt::kOptionWeightStreamingBudget, 0}});
  const Engines loaded = engines().minus(before);
  EXPECT_EQ(loaded.deserialized, 2);
  EXPECT_EQ(loaded.sessions, 4);
  for (Sessions* group : {&plain, &per_profile, &budget})
    for (const auto& session : *group)
      for (int step = 0; step < 3; ++step) expect_logits(run_ids(*session, step_ids(0, step)), step_ids(0, step));
}

// TensorRT 8.6 without kPROFILE_SHARING_0806: a second context cannot take a profile the first holds, so every
// Module keeps an engine of its own, and each runs both profiles as before.
TEST(SharedEngine, AnEngineWhoseContextsCannotShareAProfileIsNotShared) {
  gpufree::clear_trace("llm_trt86");
  const Engines before = engines();
  Sessions sessions = load_sessions("llm_trt86", 3);
  const Engines loaded = engines().minus(before);
  expect_engines(loaded, 3, 3, 3);
  EXPECT_EQ(gpufree::trace_counters("llm_trt86").engines_loaded, 3);
  for (int step = 0; step < 6; ++step)
    for (size_t i = 0; i < sessions.size(); ++i)
      expect_logits(run_ids(*sessions[i], step_ids(i, step)), step_ids(i, step));
  EXPECT_EQ(gpufree::trace_counters("llm_trt86").failures, 0);
}

// A failed execution of one session leaves the others, and itself, running.
TEST(SharedEngine, OneSessionsFailureLeavesTheOthersRunning) {
  Sessions sessions = load_sessions("llm", 3);
  const std::vector<int64_t> one = {3};
  expect_logits(run_ids(*sessions[0], one), one);
  gpufree::inject_fault(gpufree::Call::kEnqueueV3, 1, "llm");
  EXPECT_NE(run_ids(*sessions[1], one).error, et::Error::Ok);
  EXPECT_TRUE(has(etrt::last_error_message(), "injected fault")) << etrt::last_error_message();
  gpufree::clear_faults();
  for (int step = 0; step < 4; ++step)
    for (size_t i = 0; i < sessions.size(); ++i)
      expect_logits(run_ids(*sessions[i], step_ids(i, step)), step_ids(i, step));
}

// A load whose engine fails to deserialize holds nothing; the next load of the file makes the engine.
TEST(SharedEngine, AFailedDeserializationHoldsNothingAndTheNextLoadMakesTheEngine) {
  const Engines before = engines();
  auto failed = load_failing_at(gpufree::Call::kDeserializeCudaEngine);
  EXPECT_TRUE(has(etrt::last_error_message(), "injected fault")) << etrt::last_error_message();
  expect_engines(engines().minus(before), 0, 0, 0);

  Sessions sessions = load_sessions("llm", 2);
  expect_engines(engines().minus(before), 1, 1, 2);
  const std::vector<int64_t> one = {3};
  expect_logits(run_ids(*sessions[1], one), one);
}

// A load that fails after it holds the engine (its execution context cannot be made) lets go of it at once: the
// maker's failure, with no other holder, destroys the engine; a joining session's leaves it to the others.
TEST(SharedEngine, ALoadThatFailsAfterHoldingTheEngineLetsGoOfIt) {
  const Engines before = engines();
  auto made_it = load_failing_at(gpufree::Call::kCreateExecutionContext);
  expect_engines(engines().minus(before), 1, 0, 0);

  Sessions sessions = load_sessions("llm", 1);
  auto joined = load_failing_at(gpufree::Call::kCreateExecutionContext);
  expect_engines(engines().minus(before), 2, 1, 1);
  const std::vector<int64_t> one = {3};
  expect_logits(run_ids(*sessions[0], one), one);
}

TEST(SharedEngine, ShareEngineMustBeABool) {
  et::Error status = et::Error::Ok;
  auto module = load_module(fixture("llm"), {{etrt::kOptionShareEngine, 1}}, &status);
  EXPECT_NE(status, et::Error::Ok);
  EXPECT_TRUE(has(etrt::last_error_message(), "TensorRTBackend load option 'share_engine' must be a bool, got a int"))
      << etrt::last_error_message();
}

// ---- state_kv: each session's own delegate-owned cache over one engine ----

constexpr int64_t kRows = 8, kWidth = 2;  // state_kv's cache: [1, 8, 2]

// One call of state_kv: `rows` ([n, 2]) written at `pos`; the cache the session holds afterwards.
std::vector<float> write(Module& module, std::vector<float> rows, int64_t pos) {
  const auto n = static_cast<int32_t>(rows.size() / kWidth);
  auto result = module.forward(
      {from_blob(rows.data(), {1, n, kWidth}, ScalarType::Float), from_blob(&pos, {1}, ScalarType::Long)});
  EXPECT_TRUE(result.ok()) << etrt::last_error_message();
  if (!result.ok()) return {};
  const auto& t = result.get()[0].toTensor();
  return std::vector<float>(t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel());
}

// A session's own reference: the cache its writes alone make, from zeros.
struct Reference {
  std::vector<float> cache = std::vector<float>(kRows * kWidth, 0.0f);
  // Session `s`'s write at step k: one row at k % 8, values of its own.
  std::pair<std::vector<float>, int64_t> next(size_t s, int k) {
    const int64_t pos = k % kRows;
    std::vector<float> row = {100.0f * static_cast<float>(s) + static_cast<float>(k),
                              -100.0f * static_cast<float>(s) - static_cast<float>(k)};
    for (size_t j = 0; j < row.size(); ++j) cache[static_cast<size_t>(pos * kWidth) + j] = row[j];
    return {row, pos};
  }
};

TEST(SharedEngineState, EachSessionKeepsItsOwnCacheUnderInterleavedSteps) {
  const Engines before = engines();
  Sessions sessions = load_sessions("state_kv", 8);
  EXPECT_EQ(engines().minus(before).deserialized, 1);
  EXPECT_EQ(engines().minus(before).sessions, 8);
  std::vector<Reference> refs(sessions.size());
  for (int k = 0; k < 12; ++k) {
    for (size_t s = 0; s < sessions.size(); ++s) {
      auto [row, pos] = refs[s].next(s, k);
      EXPECT_EQ(write(*sessions[s], row, pos), refs[s].cache) << "session " << s << " step " << k;
    }
  }
}

// Sessions on threads of their own, loaded concurrently (the first load of the key makes the engine, the others
// wait for it), then stepping concurrently: one engine, each session's outputs its own.
TEST(SharedEngineState, SessionsOnTheirOwnThreadsShareOneEngineAndKeepTheirOwnState) {
  constexpr size_t kThreads = 8;
  gpufree::clear_trace("state_kv");
  const Engines before = engines();
  std::vector<int> mismatches(kThreads, -1);
  std::atomic<size_t> arrived{0};
  std::vector<std::thread> threads;
  for (size_t s = 0; s < kThreads; ++s) {
    threads.emplace_back([&, s] {
      auto module = std::make_unique<Module>(fixture("state_kv"));
      const bool ok = module->load_method("forward") == et::Error::Ok;
      arrived.fetch_add(1);
      while (arrived.load() < kThreads) std::this_thread::yield();  // every session alive before any steps
      if (!ok) return;
      Reference ref;
      int bad = 0;
      for (int k = 0; k < 50; ++k) {
        auto [row, pos] = ref.next(s, k);
        bad += write(*module, row, pos) != ref.cache;
      }
      mismatches[s] = bad;
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t s = 0; s < kThreads; ++s) EXPECT_EQ(mismatches[s], 0) << "session " << s;
  const Engines after = engines().minus(before);
  EXPECT_EQ(after.deserialized, 1);
  EXPECT_EQ(after.resident, 0) << "gone with the last session";
  EXPECT_EQ(gpufree::trace_counters("state_kv").engines_loaded, 1);
  EXPECT_EQ(gpufree::trace_counters("state_kv").failures, 0);
}

}  // namespace
