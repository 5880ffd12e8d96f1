// The engine cache on its own (src/backend/registry/engine_cache.h; docs/design.md, "One engine, many sessions"):
// what a load of a key finds while another load of it is making the engine, when that make fails or throws, while
// a load of another key is made, and when the last hold goes. The engines are the GPU-free NvInfer's, made through
// etrt's TensorRT adapter as the backend makes them; the makes are the test's, so that it decides when one ends.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/registry/engine_cache.h"
#include "gpufree_fixtures.h"

namespace etrt::backend {
namespace {

using gpufree::testing::build_or_fail;
using gpufree::testing::llm_builder;

// The engine bytes of the test's two keys: one engine each.
const std::vector<uint8_t>& bytes_of(int which) {
  static const std::vector<uint8_t> a = build_or_fail(llm_builder("cache_a"));
  static const std::vector<uint8_t> b = build_or_fail(llm_builder("cache_b"));
  return which == 0 ? a : b;
}
EngineKey key_of(int which) {
  const std::vector<uint8_t>& bytes = bytes_of(which);
  return engine_key(bytes.data(), bytes.size(), 0, -1, false, "");
}

// A make that deserializes `which` and counts its calls.
struct Make {
  int which = 0;
  std::atomic<int>* calls = nullptr;
  Error operator()(std::unique_ptr<engine::Engine>* out, Diagnostic& why) const {
    if (calls != nullptr) ++*calls;
    const std::vector<uint8_t>& bytes = bytes_of(which);
    return engine::tensorrt::deserialize(bytes.data(), bytes.size(), 0, out, why);
  }
};

// A make that says it started, then waits until released and fails (or throws).
class BlockedMake {
 public:
  Error operator()(std::unique_ptr<engine::Engine>*, Diagnostic& why) {
    std::unique_lock<std::mutex> lock(mutex_);
    started_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return released_; });
    returned_ = true;
    if (throw_) throw std::runtime_error("the make threw");
    why.append("the make failed");
    return Error::Internal;
  }
  void wait_until_started() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return started_; });
  }
  void release(bool throws) {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    throw_ = throws;
    changed_.notify_all();
  }
  bool returned() {
    std::lock_guard<std::mutex> lock(mutex_);
    return returned_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool started_ = false, released_ = false, returned_ = false, throw_ = false;
};

EngineCacheTotals minus(const EngineCacheTotals& after, const EngineCacheTotals& before) {
  return {after.deserialized - before.deserialized, after.resident - before.resident,
          after.bytes_resident - before.bytes_resident, after.sessions - before.sessions};
}
void expect_totals(const EngineCacheTotals& got, int64_t deserialized, int64_t resident, int64_t sessions) {
  EXPECT_EQ(got.deserialized, deserialized);
  EXPECT_EQ(got.resident, resident);
  EXPECT_EQ(got.sessions, sessions);
}

Error acquire(int which, const MakeEngine& make, EngineHold* out, Diagnostic& why) {
  return acquire_engine(key_of(which), bytes_of(which).size(), true, make, out, why);
}

class EngineCache : public ::testing::TestWithParam<bool> {};  // the blocked make fails (false) or throws (true)

// A load of a key that another load is making waits for it; when that make fails or throws, the waiting load makes
// the engine itself, once, and holds it.
TEST_P(EngineCache, ALoadWaitingForAMakeThatFailsMakesTheEngineItself) {
  const bool throws = GetParam();
  const EngineCacheTotals before = engine_cache_totals();
  BlockedMake blocked;
  std::atomic<int> calls{0};
  std::atomic<bool> made_while_blocked{false};
  Error first = Error::Ok;
  bool first_threw = false;
  std::thread maker([&] {
    EngineHold hold;
    Diagnostic why;
    try {
      first = acquire(0, std::ref(blocked), &hold, why);
    } catch (const std::runtime_error&) {
      first_threw = true;  // the make's exception reached the loader
    }
    EXPECT_EQ(hold, nullptr);
  });
  blocked.wait_until_started();

  EngineHold second;
  Error second_status = Error::Internal;
  std::thread waiter([&] {
    Diagnostic why;
    const MakeEngine make = [&](std::unique_ptr<engine::Engine>* out, Diagnostic& reason) {
      if (!blocked.returned()) made_while_blocked = true;
      return Make{0, &calls}(out, reason);
    };
    second_status = acquire(0, make, &second, why);
  });
  // Give the waiter time to reach the cache while the first make is under way (were it to arrive after, it makes
  // the engine all the same, and the checks below still hold).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  blocked.release(throws);
  maker.join();
  waiter.join();

  EXPECT_EQ(first_threw, throws);
  if (!throws) {
    EXPECT_EQ(first, Error::Internal);
  }
  ASSERT_EQ(second_status, Error::Ok);
  ASSERT_NE(second, nullptr);
  EXPECT_FALSE(made_while_blocked) << "a second load made the engine while the first was making it";
  EXPECT_EQ(calls.load(), 1);
  expect_totals(minus(engine_cache_totals(), before), 1, 1, 1);
  second.reset();
  expect_totals(minus(engine_cache_totals(), before), 1, 0, 0);
}

INSTANTIATE_TEST_SUITE_P(FailOrThrow, EngineCache, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "Throws" : "Fails"; });

// While one key's engine is being made, a load of another key is served: the make runs outside the cache's lock.
TEST(EngineCacheKeys, ALoadOfAnotherKeyGoesOnWhileOneIsBeingMade) {
  BlockedMake blocked;
  std::thread maker([&] {
    EngineHold hold;
    Diagnostic why;
    EXPECT_EQ(acquire(0, std::ref(blocked), &hold, why), Error::Internal);
  });
  blocked.wait_until_started();
  EngineHold other;
  Diagnostic why;
  EXPECT_EQ(acquire(1, Make{1}, &other, why), Error::Ok) << why.c_str();
  EXPECT_NE(other, nullptr);
  EXPECT_FALSE(blocked.returned());
  blocked.release(false);
  maker.join();
}

// Loads of one key share the engine the first made; the last hold destroys it, and the next load makes it again.
TEST(EngineCacheKeys, TheLastHoldDestroysTheEngineAndTheNextLoadMakesItAgain) {
  const EngineCacheTotals before = engine_cache_totals();
  std::atomic<int> calls{0};
  Diagnostic why;
  EngineHold a, b;
  ASSERT_EQ(acquire(0, Make{0, &calls}, &a, why), Error::Ok) << why.c_str();
  ASSERT_EQ(acquire(0, Make{0, &calls}, &b, why), Error::Ok) << why.c_str();
  EXPECT_EQ(a.get(), b.get());
  expect_totals(minus(engine_cache_totals(), before), 1, 1, 2);
  EXPECT_EQ(minus(engine_cache_totals(), before).bytes_resident, static_cast<int64_t>(bytes_of(0).size()));
  a.reset();
  expect_totals(minus(engine_cache_totals(), before), 1, 1, 1);
  b.reset();
  expect_totals(minus(engine_cache_totals(), before), 1, 0, 0);
  EngineHold c;
  ASSERT_EQ(acquire(0, Make{0, &calls}, &c, why), Error::Ok) << why.c_str();
  EXPECT_EQ(calls.load(), 2);
  expect_totals(minus(engine_cache_totals(), before), 2, 1, 1);
}

// A load that does not share gets an engine of its own, which no later load finds, while it is counted like any.
TEST(EngineCacheKeys, AnEngineMadeWithoutSharingIsNeverFound) {
  const EngineCacheTotals before = engine_cache_totals();
  Diagnostic why;
  EngineHold own, shared;
  ASSERT_EQ(acquire_engine(key_of(0), bytes_of(0).size(), false, Make{0}, &own, why), Error::Ok) << why.c_str();
  ASSERT_EQ(acquire(0, Make{0}, &shared, why), Error::Ok) << why.c_str();
  EXPECT_NE(own.get(), shared.get());
  expect_totals(minus(engine_cache_totals(), before), 2, 2, 2);
}

// The engine as made, whose answer to profiles_shared_across_contexts() is counted: on TensorRT 8.6 asking creates
// two contexts (seconds for a multi-GB engine), so the cache asks once per key.
class CountedAsk final : public engine::Engine {
 public:
  CountedAsk(std::unique_ptr<engine::Engine> engine, std::atomic<int>* asked)
      : engine_(std::move(engine)), asked_(asked) {}
  int32_t num_io_tensors() const override { return engine_->num_io_tensors(); }
  const engine::TensorDesc& io_tensor(int32_t i) const override { return engine_->io_tensor(i); }
  int32_t num_profiles() const override { return engine_->num_profiles(); }
  Error profile_shape(int32_t profile, int32_t i, Shape* min, Shape* opt, Shape* max, Diagnostic& why) const override {
    return engine_->profile_shape(profile, i, min, opt, max, why);
  }
  engine::MemoryKind memory_kind() const override { return engine_->memory_kind(); }
  size_t device_memory_size() const override { return engine_->device_memory_size(); }
  int64_t streamable_weights_size() const override { return engine_->streamable_weights_size(); }
  int64_t weight_streaming_automatic_budget() const override { return engine_->weight_streaming_automatic_budget(); }
  int64_t weight_streaming_budget() const override { return engine_->weight_streaming_budget(); }
  Error set_weight_streaming_budget(int64_t bytes, Diagnostic& why) override {
    return engine_->set_weight_streaming_budget(bytes, why);
  }
  bool profiles_shared_across_contexts() override {
    ++*asked_;
    return engine_->profiles_shared_across_contexts();
  }
  Error create_context(const engine::ContextOptions& options, std::unique_ptr<engine::ExecutionContext>* out,
                       Diagnostic& why) override {
    return engine_->create_context(options, out, why);
  }

 private:
  std::unique_ptr<engine::Engine> engine_;
  std::atomic<int>* asked_;
};

// An engine whose contexts cannot share profiles (TensorRT 8.6's rule for a plan built without
// kPROFILE_SHARING_0806) gives every load an engine of its own, and is asked whether it shares only at the first:
// later loads of its key, while it lives and after it went, make their own without asking.
TEST(EngineCacheKeys, AKeyWhoseEngineCannotShareIsAskedOnce) {
  gpufree::Builder builder = llm_builder("cache_trt86");
  builder.set_tensorrt_version(gpufree::TensorRTVersion::k8_6);
  const std::vector<uint8_t> bytes = build_or_fail(builder);
  const EngineKey key = engine_key(bytes.data(), bytes.size(), 0, -1, false, "");
  std::atomic<int> made{0}, asked{0};
  const MakeEngine make = [&](std::unique_ptr<engine::Engine>* out, Diagnostic& why) {
    ++made;
    std::unique_ptr<engine::Engine> engine;
    const Error status = engine::tensorrt::deserialize(bytes.data(), bytes.size(), 0, &engine, why);
    if (status == Error::Ok) *out = std::make_unique<CountedAsk>(std::move(engine), &asked);
    return status;
  };
  const EngineCacheTotals before = engine_cache_totals();
  Diagnostic why;
  EngineHold first, second;
  ASSERT_EQ(acquire_engine(key, bytes.size(), true, make, &first, why), Error::Ok) << why.c_str();
  ASSERT_EQ(acquire_engine(key, bytes.size(), true, make, &second, why), Error::Ok) << why.c_str();
  EXPECT_NE(first.get(), second.get());
  expect_totals(minus(engine_cache_totals(), before), 2, 2, 2);
  first.reset();
  second.reset();
  EngineHold third;
  ASSERT_EQ(acquire_engine(key, bytes.size(), true, make, &third, why), Error::Ok) << why.c_str();
  EXPECT_EQ(made.load(), 3);
  EXPECT_EQ(asked.load(), 1);
}

}  // namespace
}  // namespace etrt::backend
