// Scratch ("device") memory: what the engine asks for, that it really uses it,
// and the rules for contexts whose memory the caller manages -- some enforced
// by etrt's TensorRT adapter before NvInfer is called (too small, none at all),
// the rest by the GPU-free implementation's setDeviceMemoryV2 and enqueueV3.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "etrt_gpufree/faults.h"

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

TEST(ReferenceMemory, DeviceMemorySizeCoversEveryIntermediateAtTheLargestProfile) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  // embedded and biased are [1, 8, 4] floats (128 bytes), projected [1, 8, 3] (96 bytes): each rounded to 256.
  EXPECT_EQ(engine->device_memory_size(), 3u * 256u);
}

TEST(ReferenceMemory, RequestedDeviceMemorySizeIsReportedWhenLarger) {
  Builder b = llm_builder(test_label());
  b.set_device_memory_size(5000);
  EXPECT_EQ(load(build_or_fail(b))->device_memory_size(), 5000u);
  b.set_device_memory_size(10);
  EXPECT_EQ(load(build_or_fail(b))->device_memory_size(), 768u);
}

TEST(ReferenceMemory, EngineWithoutIntermediatesNeedsNoScratch) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  b.scale("x", 3.0f, "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  EXPECT_EQ(engine->device_memory_size(), 0u);
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  alignas(256) float x[2] = {1, 2};
  alignas(256) float y[2] = {};
  ASSERT_TRUE(context->set_input_shape(0, make_shape({2})));
  ASSERT_TRUE(context->set_tensor_address(0, x) && context->set_tensor_address(1, y));
  ASSERT_TRUE(context->set_device_memory(nullptr, 0)) << context->last_error();
  ASSERT_TRUE(context->enqueue(nullptr)) << context->last_error();
  EXPECT_FLOAT_EQ(y[1], 6.0f);
}

TEST(ReferenceMemory, EngineOwnedContextRunsWithoutDeviceMemoryAndRefusesSome) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  AlignedBuffer scratch(engine->device_memory_size());
  EXPECT_FALSE(context->set_device_memory(scratch.data, scratch.size));
  EXPECT_TRUE(has(context->last_error(), "set_device_memory on a context TensorRT allocates for itself"))
      << context->last_error();
  EXPECT_TRUE(has(context->last_error(), "user_managed_memory = true")) << context->last_error();
  EXPECT_TRUE(events_of(test_label(), TraceKind::kSetDeviceMemory).empty()) << "refused before setDeviceMemoryV2";
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  EXPECT_TRUE(run_llm(*context, ids, &logits)) << context->last_error();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(ReferenceMemory, UserManagedContextCannotEnqueueWithoutDeviceMemory) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  EXPECT_FALSE(run_llm(*context, ids, &logits));
  EXPECT_TRUE(
      has(context->last_error(), "enqueue before set_device_memory on a context created with user-managed memory"))
      << context->last_error();
  EXPECT_EQ(trace_counters(label).enqueues + trace_counters(label).failed_enqueues, 0)
      << "the adapter refuses before enqueueV3\n"
      << dump(label);
  EXPECT_EQ(logits, AlignedVector<float>(kLogits, -99.0f)) << "nothing ran";
}

TEST(ReferenceMemory, DeviceMemorySmallerThanTheEngineNeedsIsRefused) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size());
  EXPECT_FALSE(context->set_device_memory(scratch.data, scratch.size - 1));
  EXPECT_TRUE(has(context->last_error(), "scratch memory of 767 bytes")) << context->last_error();
  EXPECT_TRUE(has(context->last_error(), "the engine needs 768 bytes (getDeviceMemorySizeV2)"))
      << context->last_error();
  EXPECT_TRUE(events_of(label, TraceKind::kSetDeviceMemory).empty()) << "refused before setDeviceMemoryV2";
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  EXPECT_FALSE(run_llm(*context, ids, &logits)) << "the refused memory must not have been taken";
  EXPECT_TRUE(has(context->last_error(), "enqueue before set_device_memory")) << context->last_error();
  ASSERT_TRUE(context->set_device_memory(scratch.data, scratch.size)) << context->last_error();
  EXPECT_TRUE(run_llm(*context, ids, &logits)) << context->last_error();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(ReferenceMemory, MisalignedDeviceMemoryIsRefused) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size() + 16);
  EXPECT_FALSE(context->set_device_memory(scratch.data + 16, engine->device_memory_size()));
  EXPECT_TRUE(has(context->last_error(), "setDeviceMemoryV2(768 bytes) failed: ")) << context->last_error();
  EXPECT_TRUE(has(context->last_error(), "not 256-byte aligned")) << context->last_error();
  const TraceEvent last = trace_events(label).back();
  EXPECT_EQ(last.kind, TraceKind::kSetDeviceMemory);
  EXPECT_FALSE(last.ok);
  EXPECT_EQ(last.address, scratch.data + 16);
  EXPECT_EQ(last.size, 768u);
  AlignedVector<int64_t> ids = {3};
  AlignedVector<float> logits;
  EXPECT_FALSE(run_llm(*context, ids, &logits)) << "the refused memory must not have been taken";

  EXPECT_FALSE(context->set_device_memory(nullptr, engine->device_memory_size()));
  EXPECT_TRUE(has(context->last_error(), "at nullptr is not enough")) << context->last_error();
}

TEST(ReferenceMemory, EnqueueReallyUsesTheDeviceMemoryItWasGiven) {
  std::unique_ptr<Engine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size());
  std::fill(scratch.data, scratch.data + scratch.size, uint8_t{0xEE});
  ASSERT_TRUE(context->set_device_memory(scratch.data, scratch.size));
  AlignedVector<int64_t> ids = {2};
  AlignedVector<float> logits;
  ASSERT_TRUE(run_llm(*context, ids, &logits)) << context->last_error();
  // The last intermediate ('projected', at offset 512) holds x W before the scale: twice the logits.
  float projected[3];
  std::memcpy(projected, scratch.data + 512, sizeof(projected));
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(projected[j], 2.0f * logits[static_cast<size_t>(j)]) << j;
  EXPECT_NE(scratch.data[scratch.size - 1], 0xEE) << "the whole region is touched";
}

TEST(ReferenceMemory, TwoContextsShareOneScratchBufferOneAfterTheOther) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  AlignedBuffer scratch(engine->device_memory_size());
  std::unique_ptr<ExecutionContext> decode = engine->create_context({/*user_managed_memory=*/true});
  std::unique_ptr<ExecutionContext> prefill = engine->create_context({/*user_managed_memory=*/true});
  ASSERT_TRUE(decode->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_optimization_profile(kPrefill, nullptr));

  AlignedVector<int64_t> prompt = {5, 4, 3, 2, 1, 0, 1, 2}, token = {3};
  AlignedVector<float> logits;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(run_llm(*prefill, prompt, &logits)) << prefill->last_error();
    EXPECT_EQ(logits, expected_logits(prompt));
    ASSERT_TRUE(run_llm(*decode, token, &logits)) << decode->last_error();
    EXPECT_EQ(logits, expected_logits(token));
  }
  for (const TraceEvent& created : events_of(label, TraceKind::kCreateContext))
    EXPECT_TRUE(created.user_managed_memory);
  std::vector<TraceEvent> memory = events_of(label, TraceKind::kSetDeviceMemory);
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory[0].address, memory[1].address);
  EXPECT_NE(memory[0].context_id, memory[1].context_id);
}

TEST(ReferenceMemory, ContextsSharingScratchMustNotEnqueueAtTheSameTime) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  AlignedBuffer scratch(engine->device_memory_size());
  std::unique_ptr<ExecutionContext> decode = engine->create_context({/*user_managed_memory=*/true});
  std::unique_ptr<ExecutionContext> prefill = engine->create_context({/*user_managed_memory=*/true});
  ASSERT_TRUE(decode->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_optimization_profile(kPrefill, nullptr));
  AlignedVector<int64_t> prompt = {1, 2}, token = {3};
  AlignedVector<float> prompt_logits, token_logits;
  ASSERT_TRUE(prefill->set_input_shape(0, make_shape({1, 2})));
  ASSERT_TRUE(prefill->set_tensor_address(0, prompt.data()));
  prompt_logits.resize(2 * kLogits);
  ASSERT_TRUE(prefill->set_tensor_address(1, prompt_logits.data()));

  bool competing_ok = true;
  std::string competing_error;
  int hook_calls = 0;
  set_enqueue_hook(label, [&] {
    if (hook_calls++ > 0) return;  // only decode's enqueue, the first to get this far
    // While decode's enqueue is in progress, prefill -- on the same buffer -- tries to run from another thread.
    std::thread([&] {
      competing_ok = prefill->enqueue(nullptr);
      competing_error = prefill->last_error();
    }).join();
  });
  const bool decoded = run_llm(*decode, token, &token_logits);
  set_enqueue_hook(label, {});
  ASSERT_TRUE(decoded) << decode->last_error();
  EXPECT_EQ(token_logits, expected_logits(token));
  EXPECT_EQ(hook_calls, 1) << "the refused enqueue must not get as far as the hook";
  EXPECT_FALSE(competing_ok);
  EXPECT_TRUE(has(competing_error, "enqueueV3 under profile 1 failed: ")) << competing_error;
  EXPECT_TRUE(has(competing_error, "scratch memory overlaps that of execution context #")) << competing_error;
  EXPECT_TRUE(prefill->enqueue(nullptr)) << "once decode is done the buffer is free: " << prefill->last_error();
  EXPECT_EQ(prompt_logits, expected_logits(prompt));
}

}  // namespace
}  // namespace etrt::gpufree::testing
