// Concurrency stress, meant to run under ThreadSanitizer (build-tsan, docs/testing.md) and cheap enough to run in
// every build. Each test runs under both profile strategies (load option profile_strategy).
//
// What is supported, and so what is tested:
//
//  * Separate Modules on separate threads, each with its own guards: fully concurrent. Two Modules loaded from
//    one file have separate delegates (separate contexts) over one engine (load option share_engine, on by
//    default); they share that and process-wide state (the backend registration, the counters, the GPU-free
//    NvInfer's trace). `SeparateModules...`
//  * Sessions over one engine on threads of their own, loaded concurrently, while one session keeps failing (a shape
//    no profile admits) and another is destroyed and loaded again: the others run on. `SessionsOverOneEngine...`
//  * One Module shared by several threads: ExecuTorch's Module and Method are not thread-safe (an execution
//    writes the method's inputs and outputs), so the runner serializes whole executions with its own lock; each
//    thread's guard still decides the profile of its own executions. `OneModuleSharedUnderARunnerLock...`
//  * One delegate executed by several threads at once: only reachable through the BackendInterface itself, called
//    as ExecuTorch calls it (init once, then execute with each caller's own argument tensors). etrt's delegate
//    serializes executions with its mutex (docs/architecture.md, "lock the delegate"), so this is supported, and
//    each call runs on the profile its own thread asked for. `OneDelegateExecutedConcurrently...`
//  * Loads of one Program over one method allocator (a runner's arena), with shared_scratch: one scope, so their
//    delegates draw on one scratch pool, whose lock serializes them, while another thread makes the pool grow and
//    shrink. `LoadsSharingOneMethodAllocator...`
//
// Every execution's profile is checked in the thread's etrt::ExecutionReport against a model of the selection
// rules, and its logits against fixtures.h. Guards and reports are created and destroyed around every execution,
// while other threads load, run and destroy Modules, read the process-wide counters and nest guards of their own.
//
// Bounded in time: each worker stops after ETRT_STRESS_ITERATIONS executions (default 200) or after
// ETRT_STRESS_SECONDS seconds (default 20), whichever comes first; each test checks that every worker got
// through at least a few.

#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/memory_allocator.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "fixtures.h"
#include "module_loading.h"

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using Clock = std::chrono::steady_clock;

// overlap.pte: profile 0 takes exactly one token, profile 1 takes 1..2048 -- where the two auto policies differ.
constexpr const char* kProgram = "overlap";
constexpr int32_t kProfiles = 2;
constexpr int32_t kMaxTokens = 40;

std::string fixture(const std::string& file) { return std::string(ETRT_FIXTURE_DIR) + "/" + file; }

long env_or(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::strtol(v, nullptr, 10) : fallback;
}
const long kIterations = env_or("ETRT_STRESS_ITERATIONS", 200);
const long kSeconds = env_or("ETRT_STRESS_SECONDS", 20);
constexpr long kMinIterations = 5;

// ---- the selection rules, modelled independently of src/profile ----

enum class Pattern { kPin0, kPin1, kSticky, kFirstFit };
constexpr Pattern kPatterns[] = {Pattern::kPin0, Pattern::kPin1, Pattern::kSticky, Pattern::kFirstFit};

const char* name_of(Pattern p) {
  switch (p) {
    case Pattern::kPin0:
      return "pin 0";
    case Pattern::kPin1:
      return "pin 1";
    case Pattern::kSticky:
      return "sticky auto";
    case Pattern::kFirstFit:
      return "first-fit auto";
  }
  return "?";
}

bool fits(int32_t profile, int32_t tokens) { return profile == 0 ? tokens == 1 : tokens >= 1 && tokens <= 2048; }

// The token count of iteration `i`: pin 0 only ever one token; the others mix prompts and single tokens, so the
// auto policies switch, and the sticky one keeps profile 1 for single tokens after a prompt.
int32_t tokens_for(Pattern p, long i, long salt) {
  if (p == Pattern::kPin0) return 1;
  if ((i + salt) % 3 == 0) return 2 + static_cast<int32_t>((i * 7 + salt) % (kMaxTokens - 1));
  return 1;
}

// The profile an execution of `tokens` runs on, given the profile the delegate was left on.
int32_t expected_profile(Pattern p, int32_t tokens, int32_t active) {
  switch (p) {
    case Pattern::kPin0:
      return 0;
    case Pattern::kPin1:
      return 1;
    case Pattern::kSticky:
      if (fits(active, tokens)) return active;
      break;
    case Pattern::kFirstFit:
      break;
  }
  for (int32_t q = 0; q < kProfiles; ++q)
    if (fits(q, tokens)) return q;
  return -1;
}

// Runs `f` with the guard of pattern `p` in force, created just before and destroyed just after.
template <typename F>
auto with_request(Pattern p, F&& f) {
  switch (p) {
    case Pattern::kPin0: {
      etrt::OptimizationProfileGuard pin(0);
      return f();
    }
    case Pattern::kPin1: {
      etrt::OptimizationProfileGuard pin(1);
      return f();
    }
    case Pattern::kSticky: {
      auto automatic = etrt::OptimizationProfileGuard::automatic(etrt::AutoPolicy::kStickyFirstFit);
      return f();
    }
    case Pattern::kFirstFit:
      break;
  }
  auto automatic = etrt::OptimizationProfileGuard::automatic(etrt::AutoPolicy::kFirstFit);
  return f();
}

std::vector<int64_t> token_ids(int32_t n, long salt) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = (i * 7 + salt) % etrt::fixtures::kVocab;
  return ids;
}

// "" when `values` are the logits of `ids`.
std::string check_logits(const float* values, size_t count, const std::vector<int64_t>& ids) {
  const std::vector<float> want = etrt::fixtures::expected_logits(ids);
  if (count != want.size())
    return "logits: " + std::to_string(count) + " values, expected " + std::to_string(want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(values[i] - want[i]) <= 1e-5f))
      return "logits[" + std::to_string(i) + "] = " + std::to_string(values[i]) + ", expected " +
             std::to_string(want[i]);
  return "";
}

// "" when `report` holds exactly one successful execution on `profile`, switched as expected.
std::string check_report(const etrt::ExecutionReport& report, int32_t profile, bool switched) {
  if (report.entries().size() != 1) return "report has " + std::to_string(report.entries().size()) + " entries";
  const etrt::ExecutionRecord& e = report.entries()[0];
  if (!e.ok) return std::string(e.delegate) + " reports a failed execution";
  if (e.profile != profile)
    return "ran on profile " + std::to_string(e.profile) + ", expected " + std::to_string(profile);
  if (e.num_profiles != kProfiles) return "reports " + std::to_string(e.num_profiles) + " profiles";
  if (e.switched != switched)
    return std::string("switched = ") + (e.switched ? "true" : "false") + ", expected the opposite";
  return "";
}

// Findings from worker threads, reported by the test's thread (GoogleTest assertions stay on one thread).
class Failures {
 public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (list_.size() < 20) list_.push_back(what);
    ++count_;
  }
  void expect_none() {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_EQ(count_, 0u);
    for (const std::string& f : list_) ADD_FAILURE() << f;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> list_;
  size_t count_ = 0;
};

// Stops workers at the iteration or time bound; counts what each did.
class Budget {
 public:
  Budget() : deadline_(Clock::now() + std::chrono::seconds(kSeconds)) {}
  bool more(long done) const { return done < kIterations && Clock::now() < deadline_ && !stop_.load(); }
  void stop() { stop_.store(true); }

 private:
  Clock::time_point deadline_;
  std::atomic<bool> stop_{false};
};

// A Module on `program` with profile_strategy = `strategy`, or null with the reason in `error`.
std::unique_ptr<Module> load_module(const char* strategy, const std::string& program, std::string* error) {
  auto module = std::make_unique<Module>(fixture(program + ".pte"));
  if (etrt::testing::load_with_options(*module, {{etrt::kOptionProfileStrategy, strategy}}) != et::Error::Ok) {
    *error = "loading " + program + ".pte failed: " + etrt::last_error_message();
    return nullptr;
  }
  return module;
}

// The process-wide counter scratch_bytes, read with get_option as a runner reads it.
int64_t scratch_bytes() {
  et::BackendOption option;
  std::strcpy(option.key, etrt::kCounterScratchBytes);
  if (et::get_option(etrt::kBackendId, et::Span<et::BackendOption>(&option, 1)) != et::Error::Ok) return -1;
  return std::get<int>(option.value);
}

// One forward() of `ids` on `module`; "" when the logits are right.
std::string forward(Module& module, std::vector<int64_t> ids) {
  auto tensor = from_blob(ids.data(), {1, static_cast<int32_t>(ids.size())}, ScalarType::Long);
  const auto result = module.forward(tensor);
  if (!result.ok()) return std::string("forward failed: ") + etrt::last_error_message();
  const auto& logits = result.get()[0].toTensor();
  return check_logits(logits.const_data_ptr<float>(), static_cast<size_t>(logits.numel()), ids);
}

// Threads that share the process with the executing ones: each loads, runs and destroys Modules; reads the
// process-wide counters (which only grow); or nests guards and reports without executing.
void background(int kind, const char* strategy, const Budget& budget, Failures& failures, std::atomic<long>& done) {
  long i = 0;
  int last_executions = 0;
  for (; budget.more(i); ++i) {
    if (kind == 0) {
      std::string error;
      auto loaded = load_module(strategy, "llm", &error);
      if (loaded == nullptr) {
        failures.add("churn: " + error);
        return;
      }
      const std::string bad = with_request(Pattern::kPin1, [&] { return forward(*loaded, token_ids(32, i)); });
      if (!bad.empty()) failures.add("churn: " + bad);
    } else if (kind == 1) {
      et::BackendOption counters[3];
      std::strcpy(counters[0].key, etrt::kCounterProfileSwitches);
      std::strcpy(counters[1].key, etrt::kCounterExecutions);
      std::strcpy(counters[2].key, etrt::kCounterLastProfile);
      if (et::get_option(etrt::kBackendId, et::Span<et::BackendOption>(counters, 3)) != et::Error::Ok) {
        failures.add("get_option failed");
        return;
      }
      const int executions = std::get<int>(counters[1].value);
      if (executions < last_executions) failures.add("the executions counter went backwards");
      last_executions = executions;
      std::this_thread::yield();
    } else {
      etrt::ExecutionReport outer;
      etrt::OptimizationProfileGuard pin(static_cast<int32_t>(i % 3));
      {
        auto automatic = etrt::OptimizationProfileGuard::automatic();
        etrt::ExecutionReport inner;
        if (etrt::current_profile_request().kind != etrt::ProfileRequest::Kind::kAuto)
          failures.add("a nested automatic guard is not in force on its own thread");
      }
      if (etrt::current_profile_request() != etrt::ProfileRequest::pinned(static_cast<int32_t>(i % 3)))
        failures.add("leaving a nested guard did not restore the pin");
      if (outer.total() != 0) failures.add("a thread that executes nothing recorded an execution");
    }
  }
  done += i;
}

class Stress : public ::testing::TestWithParam<const char*> {
 protected:
  const char* strategy() const { return GetParam(); }
};

// ---- separate Modules, one per thread, with background load/unload, counter reads and guard churn ----

TEST_P(Stress, SeparateModulesEachRunTheProfileTheirOwnGuardsAskFor) {
  constexpr int kPerPattern = 2;
  Budget budget;
  Failures failures;
  std::vector<std::unique_ptr<Module>> modules;
  for (size_t i = 0; i < std::size(kPatterns) * kPerPattern; ++i) {
    std::string error;
    modules.push_back(load_module(strategy(), kProgram, &error));
    ASSERT_NE(modules.back(), nullptr) << error;
  }
  std::vector<long> executed(modules.size(), 0);
  std::atomic<long> background_done{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < modules.size(); ++t) {
    threads.emplace_back([&, t] {
      const Pattern pattern = kPatterns[t % std::size(kPatterns)];
      Module& module = *modules[t];
      int32_t active = 0;  // a new delegate starts on profile 0
      long i = 0;
      for (; budget.more(i); ++i) {
        const int32_t tokens = tokens_for(pattern, i, static_cast<long>(t));
        const int32_t want = expected_profile(pattern, tokens, active);
        etrt::ExecutionReport report;
        std::string bad = with_request(pattern, [&] { return forward(module, token_ids(tokens, i)); });
        if (bad.empty()) bad = check_report(report, want, want != active);
        if (!bad.empty()) {
          failures.add(std::string(name_of(pattern)) + ", thread " + std::to_string(t) + ", iteration " +
                       std::to_string(i) + ", " + std::to_string(tokens) + " tokens: " + bad);
          budget.stop();
          break;
        }
        active = want;
      }
      executed[t] = i;
    });
  }
  for (int kind = 0; kind < 3; ++kind)
    threads.emplace_back([&, kind] { background(kind, strategy(), budget, failures, background_done); });
  for (std::thread& t : threads) t.join();
  failures.expect_none();
  for (size_t t = 0; t < executed.size(); ++t) EXPECT_GE(executed[t], kMinIterations) << "thread " << t;
  EXPECT_GE(background_done.load(), kMinIterations);
}

// ---- sessions over one engine (engine_cache.h) ----

// The engine counter `key`, read with get_option as a runner reads it.
int64_t engine_counter(const char* key) {
  et::BackendOption option;
  std::strcpy(option.key, key);
  if (et::get_option(etrt::kBackendId, et::Span<et::BackendOption>(&option, 1)) != et::Error::Ok) return -1;
  return std::get<int>(option.value);
}

// Sessions of one file, each loaded on its own thread at once (the first load makes the engine, the others wait for
// it and share it), run concurrently. Thread 0's every other execution pins profile 0 (one token) for five tokens
// (refused by its delegate, in that session only); thread 1 destroys its session and loads a new one every few steps.
// Every other execution of every session must run on the profile its pattern asks for, with correct logits, throughout.
TEST_P(Stress, SessionsOverOneEngineRunOnWhileOneFailsAndAnotherComesAndGoes) {
  constexpr size_t kThreads = 6;
  const int64_t deserialized = engine_counter(etrt::kCounterEnginesDeserialized);
  Budget budget;
  Failures failures;
  std::vector<long> executed(kThreads, 0);
  std::atomic<size_t> loaded{0}, finished{0};  // every session is held from the first step to the last one's end
  const auto wait_for = [](const std::atomic<size_t>& count) {
    while (count.load() < kThreads) std::this_thread::yield();
  };
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Pattern pattern = kPatterns[t % std::size(kPatterns)];
      std::string error;
      std::unique_ptr<Module> module = load_module(strategy(), kProgram, &error);
      loaded.fetch_add(1);
      wait_for(loaded);
      int32_t active = 0;
      long i = 0;
      for (; module != nullptr && budget.more(i); ++i) {
        if (t == 0 && i % 2 == 1) {
          etrt::OptimizationProfileGuard pin(0);  // exactly one token: 5 are refused by the delegate
          if (forward(*module, token_ids(5, i)).empty()) failures.add("a shape its pinned profile refuses ran");
          continue;
        }
        if (t == 1 && i % 5 == 4) {
          module.reset();  // the engine stays: the other sessions hold it
          module = load_module(strategy(), kProgram, &error);
          active = 0;
          if (module == nullptr) break;
        }
        const int32_t tokens = tokens_for(pattern, i, static_cast<long>(t));
        const int32_t want = expected_profile(pattern, tokens, active);
        etrt::ExecutionReport report;
        std::string bad = with_request(pattern, [&] { return forward(*module, token_ids(tokens, i)); });
        if (bad.empty()) bad = check_report(report, want, want != active);
        if (!bad.empty()) {
          failures.add("session " + std::to_string(t) + ", iteration " + std::to_string(i) + ": " + bad);
          budget.stop();
          break;
        }
        active = want;
      }
      if (module == nullptr) failures.add("session " + std::to_string(t) + ": " + error);
      executed[t] = i;
      finished.fetch_add(1);
      wait_for(finished);
    });
  }
  for (std::thread& t : threads) t.join();
  failures.expect_none();
  for (size_t t = 0; t < kThreads; ++t) EXPECT_GE(executed[t], kMinIterations) << "session " << t;
  // One engine made for all of them (thread 1's new sessions joined it), and gone with the last.
  EXPECT_EQ(engine_counter(etrt::kCounterEnginesDeserialized) - deserialized, 1);
  EXPECT_EQ(engine_counter(etrt::kCounterEngineSessions), 0);
}

// ---- loads sharing one method allocator, and so one scratch pool (load option shared_scratch) ----

// A method allocator that several loads of one Program share -- a runner's own arena -- which makes them one scope
// for etrt (load_scope() in src/backend/glue/delegate.h: one scratch pool, one set of delegate-owned states), as the
// methods of one Module are. ExecuTorch's MallocMemoryAllocator behind a mutex: Methods are loaded on several threads.
class SharedArena final : public et::MemoryAllocator {
 public:
  SharedArena() : et::MemoryAllocator(0, nullptr) {}
  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return arena_.allocate(size, alignment);
  }

 private:
  std::mutex mutex_;
  ::executorch::extension::MallocMemoryAllocator arena_;
};

// One Method of a Program, loaded over a given method allocator with planned memory and a temp allocator of its own
// (what Module does over its own allocator).
class ArenaMethod {
 public:
  // The method `name` of `program` over `arena` with `options`, or null with the reason in `error`.
  static std::unique_ptr<ArenaMethod> load(const et::Program& program, const char* name, et::MemoryAllocator& arena,
                                           const etrt::testing::LoadOptions& options, std::string* error) {
    std::unique_ptr<ArenaMethod> m(new ArenaMethod);
    const auto meta = program.method_meta(name);
    if (!meta.ok()) {
      *error = std::string("no method ") + name;
      return nullptr;
    }
    m->buffers_.resize(meta->num_memory_planned_buffers());
    for (size_t i = 0; i < m->buffers_.size(); ++i) {
      m->buffers_[i].resize(static_cast<size_t>(meta->memory_planned_buffer_size(i).get()));
      m->spans_.emplace_back(m->buffers_[i].data(), m->buffers_[i].size());
    }
    m->planned_ =
        std::make_unique<et::HierarchicalAllocator>(et::Span<et::Span<uint8_t>>(m->spans_.data(), m->spans_.size()));
    m->memory_ = std::make_unique<et::MemoryManager>(&arena, m->planned_.get(), &m->temp_);
    const etrt::testing::LoadOptionsMap map(options);
    etrt::clear_last_error();
    auto method = program.load_method(name, m->memory_.get(), nullptr, nullptr, &map.map());
    if (!method.ok()) {
      *error = std::string("loading ") + name + " failed: " + etrt::last_error_message();
      return nullptr;
    }
    m->method_ = std::make_unique<et::Method>(std::move(method.get()));
    return m;
  }

  // y = the method's output for x ([1, 4]); empty when the execution failed.
  std::vector<float> run(std::vector<float> x) {
    auto input = from_blob(x.data(), {1, 4}, ScalarType::Float);
    if (method_->set_input(et::EValue(*input), 0) != et::Error::Ok || method_->execute() != et::Error::Ok) return {};
    const auto& y = method_->get_output(0).toTensor();
    return std::vector<float>(y.const_data_ptr<float>(), y.const_data_ptr<float>() + y.numel());
  }

 private:
  ArenaMethod() = default;
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<et::Span<uint8_t>> spans_;
  std::unique_ptr<et::HierarchicalAllocator> planned_;
  ::executorch::extension::MallocMemoryAllocator temp_;
  std::unique_ptr<et::MemoryManager> memory_;
  std::unique_ptr<et::Method> method_;
};

// Loads of scratch_methods' "forward" (a chain of four delegates) over one SharedArena, each executed on its own
// thread: one scope, so one pool, whose lock serializes their executions while each keeps its own delegate locks.
// Meanwhile another thread loads the method "big" over the same arena, whose delegate needs more scratch than any of
// the chain's, runs it and destroys it: the pool grows and shrinks under the others, and every delegate moves to the
// new buffer before its next enqueue. Under ThreadSanitizer an execution that ran in the buffer beside another, or in a
// buffer already freed, is a report. (Modules never share a pool: each has a method allocator of its own.)
TEST_P(Stress, LoadsSharingOneMethodAllocatorShareOneScratchPoolAndComputeCorrectlyWhileItGrowsAndShrinks) {
  constexpr size_t kLoads = 4;
  const etrt::testing::LoadOptions options = {{etrt::kOptionProfileStrategy, strategy()},
                                              {etrt::kOptionSharedScratch, true}};
  Module owner(fixture("scratch_methods.pte"));  // owns the Program and its loader; goes last
  ASSERT_EQ(owner.load(), et::Error::Ok);
  const et::Program& program = *owner.program();
  const int64_t before = scratch_bytes();
  SharedArena arena;
  std::vector<std::unique_ptr<ArenaMethod>> loads;
  for (size_t i = 0; i < kLoads; ++i) {
    std::string error;
    loads.push_back(ArenaMethod::load(program, "forward", arena, options, &error));
    ASSERT_NE(loads.back(), nullptr) << error;
  }
  const int64_t largest =
      *std::max_element(std::begin(etrt::fixtures::kScratchChainNeeds), std::end(etrt::fixtures::kScratchChainNeeds));
  EXPECT_EQ(scratch_bytes(), before + largest) << "one pool for the loads of one arena";
  Budget budget;
  Failures failures;
  std::vector<long> executed(loads.size(), 0);
  std::atomic<long> resized{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < loads.size(); ++t) {
    threads.emplace_back([&, t] {
      long i = 0;
      for (; budget.more(i); ++i) {
        const auto v = static_cast<float>(i % 97);
        const std::vector<float> x = {v, static_cast<float>(t), -v, 1.0f};
        if (loads[t]->run(x) != etrt::fixtures::scratch_chain_expected(x)) {
          failures.add("load " + std::to_string(t) + ", iteration " + std::to_string(i) +
                       ": wrong output or failed: " + etrt::last_error_message());
          budget.stop();
          break;
        }
      }
      executed[t] = i;
    });
  }
  threads.emplace_back([&] {
    long i = 0;
    for (; budget.more(i); ++i) {
      std::string error;
      auto big = ArenaMethod::load(program, "big", arena, options, &error);
      if (big == nullptr) {
        failures.add("growing the pool: " + error);
        return;
      }
      std::vector<float> want = {1.0f, 2.0f, 3.0f, 4.0f};
      const std::vector<float> y = big->run(want);
      for (float& v : want) v = 2.0f * v + etrt::fixtures::kScratchBigBias;
      if (y != want) {
        failures.add(std::string("big: wrong output or failed: ") + etrt::last_error_message());
        return;
      }
    }
    resized += i;
  });
  for (std::thread& t : threads) t.join();
  failures.expect_none();
  for (size_t t = 0; t < executed.size(); ++t) EXPECT_GE(executed[t], kMinIterations) << "load " << t;
  EXPECT_GE(resized.load(), kMinIterations);
  loads.clear();
  EXPECT_EQ(scratch_bytes(), before);
}

// ---- one Module, shared; whole executions serialized by the runner ----

TEST_P(Stress, OneModuleSharedUnderARunnerLockRunsEachCallersProfile) {
  Budget budget;
  Failures failures;
  std::string error;
  auto shared = load_module(strategy(), kProgram, &error);
  ASSERT_NE(shared, nullptr) << error;
  std::mutex runner;   // ExecuTorch's Method is not thread-safe: one execution at a time
  int32_t active = 0;  // the profile the shared delegate was left on; guarded by `runner`
  std::vector<long> executed(std::size(kPatterns), 0);
  std::atomic<long> background_done{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < std::size(kPatterns); ++t) {
    threads.emplace_back([&, t] {
      const Pattern pattern = kPatterns[t];
      long i = 0;
      for (; budget.more(i); ++i) {
        const int32_t tokens = tokens_for(pattern, i, static_cast<long>(t));
        std::string bad;
        with_request(pattern, [&] {
          etrt::ExecutionReport report;
          std::lock_guard<std::mutex> lock(runner);
          const int32_t want = expected_profile(pattern, tokens, active);
          bad = forward(*shared, token_ids(tokens, i));
          if (bad.empty()) bad = check_report(report, want, want != active);
          active = want;
          return 0;
        });
        if (!bad.empty()) {
          failures.add(std::string(name_of(pattern)) + ", iteration " + std::to_string(i) + ", " +
                       std::to_string(tokens) + " tokens: " + bad);
          budget.stop();
          break;
        }
      }
      executed[t] = i;
    });
  }
  threads.emplace_back([&] { background(2, strategy(), budget, failures, background_done); });
  for (std::thread& t : threads) t.join();
  failures.expect_none();
  for (size_t t = 0; t < executed.size(); ++t) EXPECT_GE(executed[t], kMinIterations) << name_of(kPatterns[t]);
}

// ---- one delegate, executed by several threads at once through the BackendInterface ----

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_P(Stress, OneDelegateExecutedConcurrentlyRunsEachCallersProfile) {
  et::BackendInterface* backend = et::get_backend_class(etrt::kBackendId);
  ASSERT_NE(backend, nullptr);
  std::vector<uint8_t> blob = read_file(fixture(std::string(kProgram) + ".blob"));
  ASSERT_FALSE(blob.empty());
  // What Method::init gives a delegate: a runtime allocator for its handle, the load options, the blob.
  std::vector<uint8_t> arena(1 << 16);
  et::MemoryAllocator allocator(static_cast<uint32_t>(arena.size()), arena.data());
  et::BackendOptions<1> options;
  ASSERT_EQ(options.set_option(etrt::kOptionProfileStrategy, strategy()), et::Error::Ok);
  const auto view = options.view();
  et::BackendInitContext init(&allocator, nullptr, "forward", nullptr,
                              et::Span<const et::BackendOption>(view.data(), view.size()));
  et::FreeableBuffer processed(blob.data(), blob.size(), nullptr);
  et::Result<et::DelegateHandle*> handle = backend->init(init, &processed, {});
  ASSERT_TRUE(handle.ok()) << etrt::last_error_message();

  // History-free requests only (pins and first-fit): with concurrent callers the order of executions, and so
  // what a sticky request keeps, is up to the scheduler.
  constexpr Pattern kConcurrent[] = {Pattern::kPin0, Pattern::kPin1,     Pattern::kFirstFit,
                                     Pattern::kPin1, Pattern::kFirstFit, Pattern::kPin0};
  Budget budget;
  Failures failures;
  std::vector<long> executed(std::size(kConcurrent), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < std::size(kConcurrent); ++t) {
    threads.emplace_back([&, t] {
      const Pattern pattern = kConcurrent[t];
      // This caller's own argument tensors: input_ids [1, <=2048] and logits [1, <=2048, H], planned at the bound.
      std::vector<int64_t> ids(2048, 0);
      std::vector<float> logits(static_cast<size_t>(2048 * etrt::fixtures::kHidden), 0.0f);
      long i = 0;
      for (; budget.more(i); ++i) {
        const int32_t tokens = tokens_for(pattern, i, static_cast<long>(t));
        const std::vector<int64_t> want_ids = token_ids(tokens, i);
        std::copy(want_ids.begin(), want_ids.end(), ids.begin());
        auto input = from_blob(ids.data(), {1, tokens}, ScalarType::Long);
        auto output =
            from_blob(logits.data(), {1, 2048, static_cast<int32_t>(etrt::fixtures::kHidden)}, ScalarType::Float);
        et::EValue in(*input), out(*output);
        et::EValue* args[] = {&in, &out};
        et::BackendExecutionContext context;
        etrt::ExecutionReport report;
        const et::Error status = with_request(
            pattern, [&] { return backend->execute(context, handle.get(), et::Span<et::EValue*>(args, 2)); });
        std::string bad;
        if (status != et::Error::Ok) {
          bad = std::string("execute failed: ") + etrt::last_error_message();
        } else if (report.entries().size() != 1) {
          bad = "report has " + std::to_string(report.entries().size()) + " entries";
        } else if (report.entries()[0].profile != expected_profile(pattern, tokens, 0)) {
          bad = "ran on profile " + std::to_string(report.entries()[0].profile);
        } else if (output->numel() != tokens * etrt::fixtures::kHidden) {
          bad = "logits resized to " + std::to_string(output->numel()) + " elements";
        } else {
          bad = check_logits(logits.data(), static_cast<size_t>(output->numel()), want_ids);
        }
        if (!bad.empty()) {
          failures.add(std::string(name_of(pattern)) + ", thread " + std::to_string(t) + ", iteration " +
                       std::to_string(i) + ", " + std::to_string(tokens) + " tokens: " + bad);
          budget.stop();
          break;
        }
      }
      executed[t] = i;
    });
  }
  for (std::thread& t : threads) t.join();
  backend->destroy(handle.get());
  failures.expect_none();
  for (size_t t = 0; t < executed.size(); ++t) EXPECT_GE(executed[t], kMinIterations) << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(Strategies, Stress, ::testing::Values(etrt::kStrategySwitch, etrt::kStrategyContextPerProfile),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param) == etrt::kStrategySwitch ? "Switch" : "ContextPerProfile";
                         });

}  // namespace
