// Scratch ("device") memory: what the engine asks for, that it really uses it,
// and the rules for contexts whose memory the caller manages -- some enforced
// by etrt's TensorRT adapter before NvInfer is called (too small, none at all),
// the rest by the GPU-free implementation's setDeviceMemoryV2 and enqueueV3.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "etrt_gpufree/faults.h"

#include "gpufree_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

TEST(GpufreeMemory, DeviceMemorySizeCoversEveryIntermediateAtTheLargestProfile) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  // embedded and biased are [1, 8, 4] floats (128 bytes), projected [1, 8, 3] (96 bytes): each rounded to 256.
  EXPECT_EQ(engine->device_memory_size(), 3u * 256u);
}

TEST(GpufreeMemory, RequestedDeviceMemorySizeIsReportedWhenLarger) {
  Builder b = llm_builder(test_label());
  b.set_device_memory_size(5000);
  EXPECT_EQ(load(build_or_fail(b))->device_memory_size(), 5000u);
  b.set_device_memory_size(10);
  EXPECT_EQ(load(build_or_fail(b))->device_memory_size(), 768u);
}

TEST(GpufreeMemory, EngineWithoutIntermediatesNeedsNoScratch) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  b.scale("x", 3.0f, "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  EXPECT_EQ(engine->device_memory_size(), 0u);
  std::unique_ptr<ExecutionContext> context = new_context(*engine, {/*user_managed_memory=*/true});
  alignas(256) float x[2] = {1, 2};
  alignas(256) float y[2] = {};
  Diagnostic why;
  ASSERT_EQ(context->set_input_shape(0, make_shape({2}), why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(0, x, why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(1, y, why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_device_memory(nullptr, 0, why), Error::Ok) << why.c_str();
  ASSERT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
  EXPECT_FLOAT_EQ(y[1], 6.0f);
}

TEST(GpufreeMemory, EngineOwnedContextRunsWithoutDeviceMemoryAndRefusesSome) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  AlignedBuffer scratch(engine->device_memory_size());
  Diagnostic why;
  EXPECT_EQ(context->set_device_memory(scratch.data, scratch.size, why), Error::InvalidState);
  EXPECT_TRUE(has(why.c_str(), "set_device_memory on a context TensorRT allocates for itself")) << why.c_str();
  EXPECT_TRUE(has(why.c_str(), "user_managed_memory = true")) << why.c_str();
  EXPECT_TRUE(events_of(test_label(), TraceKind::kSetDeviceMemory).empty()) << "refused before setDeviceMemoryV2";
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  EXPECT_EQ(run_llm(*context, ids, &logits, why), Error::Ok) << why.c_str();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(GpufreeMemory, UserManagedContextCannotEnqueueWithoutDeviceMemory) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = new_context(*engine, {/*user_managed_memory=*/true});
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  Diagnostic why;
  EXPECT_EQ(run_llm(*context, ids, &logits, why), Error::InvalidState);
  EXPECT_TRUE(has(why.c_str(), "enqueue before set_device_memory on a context created with user-managed memory"))
      << why.c_str();
  EXPECT_EQ(trace_counters(label).enqueues + trace_counters(label).failed_enqueues, 0)
      << "the adapter refuses before enqueueV3\n"
      << dump(label);
  EXPECT_EQ(logits, AlignedVector<float>(kLogits, -99.0f)) << "nothing ran";
}

TEST(GpufreeMemory, DeviceMemorySmallerThanTheEngineNeedsIsRefused) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = new_context(*engine, {/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size());
  Diagnostic why;
  EXPECT_EQ(context->set_device_memory(scratch.data, scratch.size - 1, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "scratch memory of 767 bytes")) << why.c_str();
  EXPECT_TRUE(has(why.c_str(), "the engine needs 768 bytes (getDeviceMemorySizeV2)")) << why.c_str();
  EXPECT_TRUE(events_of(label, TraceKind::kSetDeviceMemory).empty()) << "refused before setDeviceMemoryV2";
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  EXPECT_EQ(run_llm(*context, ids, &logits, why), Error::InvalidState) << "the refused memory must not have been taken";
  EXPECT_TRUE(has(why.c_str(), "enqueue before set_device_memory")) << why.c_str();
  ASSERT_EQ(context->set_device_memory(scratch.data, scratch.size, why), Error::Ok) << why.c_str();
  EXPECT_EQ(run_llm(*context, ids, &logits, why), Error::Ok) << why.c_str();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(GpufreeMemory, MisalignedDeviceMemoryIsRefused) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = new_context(*engine, {/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size() + 16);
  Diagnostic why;
  EXPECT_EQ(context->set_device_memory(scratch.data + 16, engine->device_memory_size(), why), Error::Internal);
  EXPECT_TRUE(has(why.c_str(), "setDeviceMemoryV2(768 bytes) failed: ")) << why.c_str();
  EXPECT_TRUE(has(why.c_str(), "not 256-byte aligned")) << why.c_str();
  const TraceEvent last = trace_events(label).back();
  EXPECT_EQ(last.kind, TraceKind::kSetDeviceMemory);
  EXPECT_FALSE(last.ok);
  EXPECT_EQ(last.address, scratch.data + 16);
  EXPECT_EQ(last.size, 768u);
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  EXPECT_EQ(run_llm(*context, ids, &logits, why), Error::InvalidState) << "the refused memory must not have been taken";

  EXPECT_EQ(context->set_device_memory(nullptr, engine->device_memory_size(), why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "at nullptr is not enough")) << why.c_str();
}

TEST(GpufreeMemory, EnqueueReallyUsesTheDeviceMemoryItWasGiven) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = new_context(*engine, {/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size());
  std::fill(scratch.data, scratch.data + scratch.size, uint8_t{0xEE});
  Diagnostic why;
  ASSERT_EQ(context->set_device_memory(scratch.data, scratch.size, why), Error::Ok) << why.c_str();
  AlignedVector<int64_t> ids = {2};
  AlignedVector<float> logits;
  ASSERT_EQ(run_llm(*context, ids, &logits, why), Error::Ok) << why.c_str();
  // The last intermediate ('projected', at offset 512) holds x W before the scale: twice the logits.
  float projected[3];
  std::memcpy(projected, scratch.data + 512, sizeof(projected));
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(projected[j], 2.0f * logits[static_cast<size_t>(j)]) << j;
  EXPECT_NE(scratch.data[scratch.size - 1], 0xEE) << "the whole region is touched";
}

// The LLM engine with a decode context (profile 0) and a prefill context (profile 1) sharing one scratch buffer:
// both contexts have the buffer and prefill's is bound to its profile before each test body runs.
class SharedScratch : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(decode->set_device_memory(scratch.data, scratch.size, why), Error::Ok) << why.c_str();
    ASSERT_EQ(prefill->set_device_memory(scratch.data, scratch.size, why), Error::Ok) << why.c_str();
    ASSERT_EQ(prefill->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  }

  std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  AlignedBuffer scratch{engine->device_memory_size()};
  std::unique_ptr<ExecutionContext> decode = new_context(*engine, {/*user_managed_memory=*/true});
  std::unique_ptr<ExecutionContext> prefill = new_context(*engine, {/*user_managed_memory=*/true});
  Diagnostic why;
};

TEST_F(SharedScratch, TwoContextsShareOneScratchBufferOneAfterTheOther) {
  AlignedVector<int64_t> prompt = {5, 4, 3, 2, 1, 0, 1, 2}, token = {3};
  AlignedVector<float> logits;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(run_llm(*prefill, prompt, &logits, why), Error::Ok) << why.c_str();
    EXPECT_EQ(logits, expected_logits(prompt));
    ASSERT_EQ(run_llm(*decode, token, &logits, why), Error::Ok) << why.c_str();
    EXPECT_EQ(logits, expected_logits(token));
  }
  for (const TraceEvent& created : events_of(label, TraceKind::kCreateContext))
    EXPECT_TRUE(created.user_managed_memory);
  std::vector<TraceEvent> memory = events_of(label, TraceKind::kSetDeviceMemory);
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory[0].address, memory[1].address);
  EXPECT_NE(memory[0].context_id, memory[1].context_id);
}

TEST_F(SharedScratch, ContextsSharingScratchMustNotEnqueueAtTheSameTime) {
  AlignedVector<int64_t> prompt = {1, 2}, token = {3};
  AlignedVector<float> prompt_logits, token_logits;
  ASSERT_EQ(prefill->set_input_shape(0, make_shape({1, 2}), why), Error::Ok) << why.c_str();
  ASSERT_EQ(prefill->set_tensor_address(0, prompt.data(), why), Error::Ok) << why.c_str();
  prompt_logits.resize(2 * kLogits);
  ASSERT_EQ(prefill->set_tensor_address(1, prompt_logits.data(), why), Error::Ok) << why.c_str();

  Error competing = Error::Ok;
  std::string competing_error;
  int hook_calls = 0;
  set_enqueue_hook(label, [&] {
    if (hook_calls++ > 0) return;  // only decode's enqueue, the first to get this far
    // While decode's enqueue is in progress, prefill -- on the same buffer -- tries to run from another thread.
    std::thread([&] {
      Diagnostic competing_why;
      competing = prefill->enqueue(nullptr, competing_why);
      competing_error = competing_why.c_str();
    }).join();
  });
  const Error decoded = run_llm(*decode, token, &token_logits, why);
  set_enqueue_hook(label, {});
  ASSERT_EQ(decoded, Error::Ok) << why.c_str();
  EXPECT_EQ(token_logits, expected_logits(token));
  EXPECT_EQ(hook_calls, 1) << "the refused enqueue must not get as far as the hook";
  EXPECT_EQ(competing, Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(competing_error, "enqueueV3 under profile 1 failed: ")) << competing_error;
  EXPECT_TRUE(has(competing_error, "scratch memory overlaps that of execution context #")) << competing_error;
  EXPECT_EQ(prefill->enqueue(nullptr, why), Error::Ok) << "once decode is done the buffer is free: " << why.c_str();
  EXPECT_EQ(prompt_logits, expected_logits(prompt));
}

}  // namespace
}  // namespace etrt::gpufree::testing
