// The trace: what a hidden engine really did, readable by label -- here an
// engine driven through etrt's TensorRT adapter, as the backend drives it.

#include <gtest/gtest.h>
#include <malloc.h>

#include "gpufree_fixtures.h"

#if defined(__SANITIZE_ADDRESS__)
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace etrt::gpufree::testing {
namespace {

TEST(GpufreeTrace, RecordsEveryCallInOrderWithItsArguments) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  int stream = 0;
  AlignedVector<int64_t> ids = {1, 2};
  AlignedVector<float> logits(2 * kLogits);
  {
    std::unique_ptr<ExecutionContext> context = new_context(*engine);
    Diagnostic why;
    ASSERT_EQ(context->set_optimization_profile(kPrefill, &stream, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_input_shape(0, make_shape({1, 2}), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_tensor_address(0, ids.data(), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_tensor_address(1, logits.data(), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->enqueue(&stream, why), Error::Ok) << why.c_str();
  }
  std::vector<TraceEvent> events = trace_events(label);
  const TraceKind kExpected[] = {
      TraceKind::kLoadEngine,    TraceKind::kCreateContext,    TraceKind::kSetOptimizationProfile,
      TraceKind::kSetInputShape, TraceKind::kSetTensorAddress, TraceKind::kSetTensorAddress,
      TraceKind::kEnqueue,       TraceKind::kDestroyContext};
  ASSERT_EQ(events.size(), std::size(kExpected)) << dump(label);
  const uint64_t engine_id = events[0].engine_id;
  EXPECT_NE(engine_id, 0u);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].kind, kExpected[i]) << to_string(events[i]);
    EXPECT_TRUE(events[i].ok) << to_string(events[i]);
    EXPECT_EQ(events[i].engine_id, engine_id);
    if (i > 0) {
      EXPECT_GT(events[i].sequence, events[i - 1].sequence);
    }
  }
  EXPECT_EQ(events[0].context_id, 0u);
  EXPECT_EQ(events[0].size, engine->device_memory_size());
  const uint64_t context_id = events[1].context_id;
  EXPECT_NE(context_id, 0u);
  for (size_t i = 2; i < events.size(); ++i) EXPECT_EQ(events[i].context_id, context_id);
  EXPECT_EQ(events[2].previous_profile, kDecode);
  EXPECT_EQ(events[2].profile, kPrefill);
  EXPECT_EQ(events[2].stream, &stream);
  EXPECT_EQ(events[3].io_index, 0);
  EXPECT_EQ(events[3].shape, make_shape({1, 2}));
  EXPECT_EQ(events[4].io_index, 0);
  EXPECT_EQ(events[4].address, ids.data());
  EXPECT_EQ(events[5].io_index, 1);
  EXPECT_EQ(events[5].address, logits.data());
  EXPECT_EQ(events[6].profile, kPrefill);
  EXPECT_EQ(events[6].stream, &stream);
  ASSERT_EQ(events[6].input_shapes.size(), 1u);
  EXPECT_EQ(events[6].input_shapes[0], make_shape({1, 2}));
}

TEST(GpufreeTrace, CountersCountSwitchesEnqueuesAndTheLastEnqueueProfile) {
  const std::string label = test_label();
  // TensorRT 8.6 rules, so that a switch can be refused below (a profile another context holds).
  std::unique_ptr<Engine> engine = load(build_or_fail(llm_builder(label).set_tensorrt_version(TensorRTVersion::k8_6)));
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  AlignedVector<int64_t> prompt = {1, 2, 3}, token = {4};
  AlignedVector<float> logits;
  Diagnostic why;
  EXPECT_EQ(last_enqueue_profile(label), -1);
  // An LLM trace: prefill then three decode steps, twice: 4 regime changes, so 4 switches.
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
    ASSERT_EQ(run_llm(*context, prompt, &logits, why), Error::Ok) << why.c_str();
    EXPECT_EQ(last_enqueue_profile(label), kPrefill);
    ASSERT_EQ(context->set_optimization_profile(kDecode, nullptr, why), Error::Ok) << why.c_str();
    for (int step = 0; step < 3; ++step) ASSERT_EQ(run_llm(*context, token, &logits, why), Error::Ok) << why.c_str();
    EXPECT_EQ(last_enqueue_profile(label), kDecode);
  }
  // A switch the GPU-free implementation refuses (another live context holds the profile) counts as failed.
  std::unique_ptr<ExecutionContext> other = new_context(*engine);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->set_optimization_profile(kDecode, nullptr, why), Error::Internal);
  // One the adapter refuses (no such profile) never reaches it.
  EXPECT_EQ(context->set_optimization_profile(7, nullptr, why), Error::InvalidArgument);
  const TraceCounters c = trace_counters(label);
  EXPECT_EQ(c.switches, 4);
  EXPECT_EQ(count_switches(label), 4);
  EXPECT_EQ(c.failed_switches, 1);
  EXPECT_EQ(c.enqueues, 8);
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(c.engines_loaded, 1);
  EXPECT_EQ(c.contexts_created, 2);
  EXPECT_EQ(c.contexts_destroyed, 0);
}

TEST(GpufreeTrace, RefusalsCarryTheMessageTheAdapterGave) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Diagnostic why;
  EXPECT_EQ(context->set_input_shape(0, make_shape({1, 3}), why), Error::InvalidArgument);
  const TraceEvent last = trace_events(label).back();
  EXPECT_EQ(last.kind, TraceKind::kSetInputShape);
  EXPECT_FALSE(last.ok);
  EXPECT_FALSE(last.error.empty());
  // The adapter passes the GPU-free implementation's reason on after naming the NvInfer call.
  EXPECT_EQ(std::string(why.c_str()), "setInputShape('ids', [1, 3]) under profile 0 failed: " + last.error);
  EXPECT_EQ(last.shape, make_shape({1, 3}));
  EXPECT_NE(to_string(last).find("FAILED: "), std::string::npos);
}

TEST(GpufreeTrace, SwitchCostIsBusyWaitedAndRecorded) {
  const std::string label = test_label();
  Builder b = llm_builder(label);
  b.set_switch_cost_ns(20000).set_tensorrt_version(TensorRTVersion::k8_6);  // a held profile is refused
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  std::unique_ptr<ExecutionContext> other = new_context(*engine);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->set_optimization_profile(kPrefill, nullptr, why), Error::Internal) << "context holds profile 1";
  std::vector<TraceEvent> switches = events_of(label, TraceKind::kSetOptimizationProfile);
  ASSERT_EQ(switches.size(), 2u);
  EXPECT_TRUE(switches[0].ok);
  EXPECT_EQ(switches[0].switch_cost_ns, 20000) << "a successful switch pays the modeled cost";
  EXPECT_FALSE(switches[1].ok);
  EXPECT_EQ(switches[1].switch_cost_ns, 0) << "a refused switch costs nothing";
}

TEST(GpufreeTrace, ClearTraceForgetsEventsAndCounters) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  clear_trace(label);
  EXPECT_TRUE(trace_events(label).empty());
  EXPECT_EQ(count_switches(label), 0);
  ASSERT_EQ(context->set_optimization_profile(kDecode, nullptr, why), Error::Ok) << why.c_str();
  EXPECT_EQ(count_switches(label), 1) << "the engine keeps recording after a clear";
}

TEST(GpufreeTrace, LabelsKeepSeparateRecords) {
  const std::string a = test_label() + ".a", b = test_label() + ".b";
  std::unique_ptr<Engine> engine_a = load_llm(a);
  std::unique_ptr<Engine> engine_b = load_llm(b);
  std::unique_ptr<ExecutionContext> context = new_context(*engine_a);
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  EXPECT_EQ(count_switches(a), 1);
  EXPECT_EQ(count_switches(b), 0);
  EXPECT_EQ(trace_events(b).size(), 1u) << "only its load";
  EXPECT_TRUE(trace_events("no such label").empty());
  EXPECT_EQ(last_enqueue_profile("no such label"), -1);
}

TEST(GpufreeTrace, EnginesSharingALabelAreToldApartByEngineId) {
  const std::string label = test_label();
  std::unique_ptr<Engine> first = load_llm(label);
  std::unique_ptr<Engine> second = load_llm(label);
  std::vector<TraceEvent> loads = events_of(label, TraceKind::kLoadEngine);
  ASSERT_EQ(loads.size(), 2u) << dump(label);
  EXPECT_NE(loads[0].engine_id, loads[1].engine_id);
  std::unique_ptr<ExecutionContext> c1 = new_context(*first);
  std::unique_ptr<ExecutionContext> c2 = new_context(*second);
  std::vector<TraceEvent> created = events_of(label, TraceKind::kCreateContext);
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0].engine_id, loads[0].engine_id);
  EXPECT_EQ(created[1].engine_id, loads[1].engine_id);
  EXPECT_NE(created[0].context_id, created[1].context_id);
  EXPECT_EQ(trace_counters(label).engines_loaded, 2);
}

TEST(GpufreeTrace, TracingCanBeTurnedOffGlobally) {
  const std::string label = test_label();
  std::unique_ptr<Engine> engine = load_llm(label);
  set_tracing_enabled(false);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Diagnostic why;
  const Error switched = context->set_optimization_profile(kPrefill, nullptr, why);
  set_tracing_enabled(true);
  ASSERT_EQ(switched, Error::Ok) << why.c_str();
  EXPECT_EQ(trace_events(label).size(), 1u) << dump(label);
  EXPECT_EQ(count_switches(label), 0);
}

TEST(GpufreeTrace, TracingCanBeTurnedOffPerEngine) {
  // Two engines under one label, one built with tracing off: only the other's calls are recorded.
  const std::string label = test_label();
  Builder b = llm_builder(label);
  b.set_tracing(false);
  std::unique_ptr<Engine> quiet = load(build_or_fail(b));
  std::unique_ptr<Engine> loud = load_llm(label);
  ASSERT_NE(quiet, nullptr);
  ASSERT_NE(loud, nullptr);
  std::unique_ptr<ExecutionContext> quiet_context = new_context(*quiet);
  std::unique_ptr<ExecutionContext> loud_context = new_context(*loud);
  Diagnostic why;
  ASSERT_EQ(quiet_context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  ASSERT_EQ(loud_context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  EXPECT_EQ(count_switches(label), 1) << dump(label);
  EXPECT_EQ(trace_counters(label).engines_loaded, 1);
  EXPECT_EQ(trace_counters(label).contexts_created, 1);
}

TEST(GpufreeTrace, TracingCanBeTurnedOffInTheEngineBytes) {
  const std::string label = test_label();
  Builder b = llm_builder(label);
  b.set_tracing(false);
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  AlignedVector<int64_t> token = {1};
  AlignedVector<float> logits;
  ASSERT_EQ(context->set_optimization_profile(kDecode, nullptr, why), Error::Ok) << why.c_str();
  EXPECT_EQ(run_llm(*context, token, &logits, why), Error::Ok) << why.c_str();
  EXPECT_EQ(logits, expected_logits(token)) << "an engine that does not trace still runs";
  context.reset();
  engine.reset();
  EXPECT_TRUE(trace_events(label).empty()) << dump(label);
  EXPECT_EQ(trace_counters(label).enqueues, 0);
}

// Bytes the process has allocated from the heap now (ASan's allocator replaces malloc's under the sanitizers).
size_t heap_in_use() {
#if defined(__SANITIZE_ADDRESS__)
  return __sanitizer_get_current_allocated_bytes();
#else
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#endif
}

// One load / forward / unload, as a server reloading a model does.
void load_run_unload(const std::vector<uint8_t>& bytes) {
  std::unique_ptr<Engine> engine = load(bytes);
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  AlignedVector<int64_t> ids = {1, 2};
  AlignedVector<float> logits;
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  ASSERT_EQ(run_llm(*context, ids, &logits, why), Error::Ok) << why.c_str();
}

TEST(GpufreeTraceMemory, ThousandLoadForwardUnloadCyclesDoNotGrowMemory) {
  const std::string label = test_label();
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(label));
  // Warm up past kMaxEventsKeptAcrossReloads, so the trace is at its steady size.
  for (int i = 0; i < 300; ++i) load_run_unload(bytes);
  const size_t events_before = trace_events(label).size();
  const size_t trace_before = trace_memory_bytes();
  const size_t heap_before = heap_in_use();
  for (int i = 0; i < 1000; ++i) load_run_unload(bytes);
  const size_t trace_after = trace_memory_bytes();
  const size_t heap_after = heap_in_use();
  EXPECT_EQ(trace_events(label).size(), events_before);
  EXPECT_LE(events_before, kMaxEventsKeptAcrossReloads + 16);
  // The trace's own bytes: the same events, give or take their strings' capacities.
  EXPECT_LE(trace_after, trace_before + 4096) << trace_before << " -> " << trace_after;
  // The whole heap: before the trace was bounded it grew by about 2 KB per cycle, 2 MB here.
  EXPECT_LE(heap_after, heap_before + 64 * 1024) << heap_before << " -> " << heap_after;
  // The counters still count every cycle; what was released counts as dropped.
  const TraceCounters c = trace_counters(label);
  EXPECT_EQ(c.engines_loaded, 1300);
  EXPECT_EQ(c.enqueues, 1300);
  EXPECT_EQ(c.contexts_destroyed, 1300);
  EXPECT_GT(c.dropped_events, 0);
}

TEST(GpufreeTraceMemory, EventsStayReadableAfterUnloadUntilTheLabelLoadsAgain) {
  const std::string label = test_label();
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(label));
  load_run_unload(bytes);
  const std::vector<TraceEvent> first = trace_events(label);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front().kind, TraceKind::kLoadEngine);
  EXPECT_EQ(first.back().kind, TraceKind::kDestroyEngine);
  // A second engine while the first is alive shares the generation: nothing is trimmed.
  std::unique_ptr<Engine> a = load(bytes);
  std::unique_ptr<Engine> b = load(bytes);
  a.reset();
  b.reset();
  EXPECT_EQ(trace_events(label).size(), first.size() + 4) << dump(label);
  EXPECT_EQ(trace_counters(label).engines_loaded, 3);
}

TEST(GpufreeTraceMemory, LabelsWithNoEngineLeftReleaseTheirEventsBeyondTheRetiredLimit) {
  const std::string first = test_label() + ".0";
  std::vector<std::string> labels;
  for (size_t i = 0; i <= kMaxRetiredTraces + 1; ++i) {
    labels.push_back(test_label() + "." + std::to_string(i));
    load_run_unload(build_or_fail(llm_builder(labels.back())));
  }
  EXPECT_TRUE(trace_events(first).empty()) << "the oldest retired label's events are released";
  EXPECT_EQ(trace_counters(first).engines_loaded, 1) << "its counters are not";
  EXPECT_GT(trace_counters(first).dropped_events, 0);
  EXPECT_FALSE(trace_events(labels.back()).empty()) << "the newest keeps them";
  // Clearing a label's trace releases its events at once.
  clear_trace(labels.back());
  EXPECT_TRUE(trace_events(labels.back()).empty());
}

}  // namespace
}  // namespace etrt::gpufree::testing
