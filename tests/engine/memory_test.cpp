// Scratch ("device") memory: what the engine asks for, that it really uses it,
// and the rules for contexts whose memory the caller manages.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

bool has(const char* text, const std::string& part) { return std::string(text).find(part) != std::string::npos; }

TEST(ReferenceMemory, DeviceMemorySizeCoversEveryIntermediateAtTheLargestProfile) {
  std::unique_ptr<ReferenceEngine> engine = load_llm(test_label());
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
  std::unique_ptr<ReferenceEngine> engine = load(build_or_fail(b));
  EXPECT_EQ(engine->device_memory_size(), 0u);
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  float x[2] = {1, 2}, y[2] = {};
  ASSERT_TRUE(context->set_input_shape(0, make_shape({2})));
  ASSERT_TRUE(context->set_tensor_address(0, x) && context->set_tensor_address(1, y));
  ASSERT_TRUE(context->set_device_memory(nullptr, 0)) << context->last_error();
  ASSERT_TRUE(context->enqueue(nullptr)) << context->last_error();
  EXPECT_FLOAT_EQ(y[1], 6.0f);
}

TEST(ReferenceMemory, EngineOwnedContextRunsWithoutDeviceMemoryAndRefusesSome) {
  std::unique_ptr<ReferenceEngine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  AlignedBuffer scratch(engine->device_memory_size());
  EXPECT_FALSE(context->set_device_memory(scratch.data, scratch.size));
  EXPECT_TRUE(has(context->last_error(), "this context owns its scratch memory")) << context->last_error();
  std::vector<int64_t> ids = {3};
  std::vector<float> logits;
  EXPECT_TRUE(run_llm(*context, ids, &logits)) << context->last_error();
}

TEST(ReferenceMemory, UserManagedContextCannotEnqueueWithoutDeviceMemory) {
  const std::string label = test_label();
  std::unique_ptr<ReferenceEngine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  std::vector<int64_t> ids = {3};
  std::vector<float> logits;
  EXPECT_FALSE(run_llm(*context, ids, &logits));
  EXPECT_TRUE(has(context->last_error(), "user-managed memory and has none; call set_device_memory with at least 768"))
      << context->last_error();
  EXPECT_FALSE(trace_events(label).back().ok);
  EXPECT_EQ(trace_events(label).back().kind, TraceKind::kEnqueue);
}

TEST(ReferenceMemory, DeviceMemorySmallerThanTheEngineNeedsIsRefused) {
  const std::string label = test_label();
  std::unique_ptr<ReferenceEngine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size());
  EXPECT_FALSE(context->set_device_memory(scratch.data, scratch.size - 1));
  EXPECT_TRUE(has(context->last_error(), "needs 768 bytes (device_memory_size())")) << context->last_error();
  const TraceEvent last = trace_events(label).back();
  EXPECT_EQ(last.kind, TraceKind::kSetDeviceMemory);
  EXPECT_FALSE(last.ok);
  EXPECT_EQ(last.size, scratch.size - 1);
  std::vector<int64_t> ids = {3};
  std::vector<float> logits;
  EXPECT_FALSE(run_llm(*context, ids, &logits)) << "the refused memory must not have been taken";
}

TEST(ReferenceMemory, MisalignedDeviceMemoryIsRefused) {
  std::unique_ptr<ReferenceEngine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size() + 16);
  EXPECT_FALSE(context->set_device_memory(scratch.data + 16, engine->device_memory_size()));
  EXPECT_TRUE(has(context->last_error(), "not 256-byte aligned")) << context->last_error();
  EXPECT_FALSE(context->set_device_memory(nullptr, engine->device_memory_size()));
}

TEST(ReferenceMemory, EnqueueReallyUsesTheDeviceMemoryItWasGiven) {
  std::unique_ptr<ReferenceEngine> engine = load_llm(test_label());
  std::unique_ptr<ExecutionContext> context = engine->create_context({/*user_managed_memory=*/true});
  AlignedBuffer scratch(engine->device_memory_size());
  std::fill(scratch.data, scratch.data + scratch.size, uint8_t{0xEE});
  ASSERT_TRUE(context->set_device_memory(scratch.data, scratch.size));
  std::vector<int64_t> ids = {2};
  std::vector<float> logits;
  ASSERT_TRUE(run_llm(*context, ids, &logits)) << context->last_error();
  // The last intermediate ('projected', at offset 512) holds x W before the scale: twice the logits.
  float projected[3];
  std::memcpy(projected, scratch.data + 512, sizeof(projected));
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(projected[j], 2.0f * logits[static_cast<size_t>(j)]) << j;
  EXPECT_NE(scratch.data[scratch.size - 1], 0xEE) << "the whole region is touched";
}

TEST(ReferenceMemory, TwoContextsShareOneScratchBufferOneAfterTheOther) {
  const std::string label = test_label();
  std::unique_ptr<ReferenceEngine> engine = load_llm(label);
  AlignedBuffer scratch(engine->device_memory_size());
  std::unique_ptr<ExecutionContext> decode = engine->create_context({/*user_managed_memory=*/true});
  std::unique_ptr<ExecutionContext> prefill = engine->create_context({/*user_managed_memory=*/true});
  ASSERT_TRUE(decode->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_optimization_profile(kPrefill, nullptr));

  std::vector<int64_t> prompt = {5, 4, 3, 2, 1, 0, 1, 2}, token = {3};
  std::vector<float> logits;
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
  std::unique_ptr<ReferenceEngine> engine = load_llm(label);
  AlignedBuffer scratch(engine->device_memory_size());
  std::unique_ptr<ExecutionContext> decode = engine->create_context({/*user_managed_memory=*/true});
  std::unique_ptr<ExecutionContext> prefill = engine->create_context({/*user_managed_memory=*/true});
  ASSERT_TRUE(decode->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_device_memory(scratch.data, scratch.size));
  ASSERT_TRUE(prefill->set_optimization_profile(kPrefill, nullptr));
  std::vector<int64_t> prompt = {1, 2}, token = {3};
  std::vector<float> prompt_logits, token_logits;
  ASSERT_TRUE(prefill->set_input_shape(0, make_shape({1, 2})));
  ASSERT_TRUE(prefill->set_tensor_address(0, prompt.data()));
  prompt_logits.resize(2 * kLogits);
  ASSERT_TRUE(prefill->set_tensor_address(1, prompt_logits.data()));

  bool competing_ok = true;
  std::string competing_error;
  engine->set_enqueue_hook_for_testing([&](ExecutionContext& running) {
    if (&running != decode.get()) return;
    // While decode's enqueue is in progress, prefill -- on the same buffer -- tries to run from another thread.
    std::thread([&] {
      competing_ok = prefill->enqueue(nullptr);
      competing_error = prefill->last_error();
    }).join();
  });
  ASSERT_TRUE(run_llm(*decode, token, &token_logits)) << decode->last_error();
  EXPECT_FALSE(competing_ok);
  EXPECT_NE(competing_error.find("scratch memory overlaps that of execution context #"), std::string::npos)
      << competing_error;
  engine->set_enqueue_hook_for_testing(nullptr);
  EXPECT_TRUE(prefill->enqueue(nullptr)) << "once decode is done the buffer is free: " << prefill->last_error();
  EXPECT_EQ(prompt_logits, expected_logits(prompt));
}

}  // namespace
}  // namespace etrt::gpufree::testing
