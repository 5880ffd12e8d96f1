// The backend's NvInfer error paths, driven through ExecuTorch's Module: a
// fault is injected (etrt_gpufree/faults.h) at each NvInfer call the backend
// makes, at load and at execute, and the test checks what the caller sees (a
// non-Ok Error, last_error_message() naming the call), what the engine saw
// (its trace: the refused call, and that a failed load released everything it
// made), and that the delegate recovers: the next forward of the same Module,
// or the next load of the same file, succeeds with the fault-free outputs.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt_gpufree/faults.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace gpufree = ::etrt::gpufree;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using gpufree::Call;
using gpufree::TraceKind;
using ::testing::HasSubstr;
using namespace ::etrt::module_test;  // token_ids, run_ids, read_output, expect_logits, count, Outcome

// llm.pte's delegate: its engine is labelled "llm"; profile 0 = decode [1,1], profile 1 = prefill [1,32..2048].
constexpr char kLlm[] = "llm";
constexpr int32_t kDecode = 0;
constexpr int32_t kPrefill = 1;

// Loads the program and its forward method, with the context_per_profile strategy or the switch strategy.
et::Error load_forward(Module& module, bool context_per_profile) {
  return etrt::testing::load_with_options(module,
                                          context_per_profile ? context_per_profile_options() : switch_options());
}

// Whatever a delegate made of `label`'s engine is gone: every context created was destroyed, and every engine
// loaded was destroyed without a context left alive (a destruction that found live contexts is traced refused).
void expect_all_released(const std::string& label) {
  const gpufree::TraceCounters c = gpufree::trace_counters(label);
  EXPECT_EQ(c.contexts_destroyed, c.contexts_created) << trace_text(label);
  EXPECT_EQ(count(label, TraceKind::kDestroyEngine), c.engines_loaded) << trace_text(label);
  EXPECT_TRUE(events_of(label, TraceKind::kDestroyEngine, false).empty()) << trace_text(label);
}

// What a Module that never saw a fault computes for `ids` on `profile` (the same engine, loaded afresh).
Outcome fault_free(const std::vector<int64_t>& ids, int32_t profile, bool context_per_profile) {
  Module module(fixture(kLlm));
  Outcome out;
  out.error = load_forward(module, context_per_profile);
  if (out.error != et::Error::Ok) return out;
  etrt::OptimizationProfileGuard guard(profile);
  return run_ids(module, ids);
}

class ModuleFaultTest : public ::testing::Test {
 protected:
  void SetUp() override { gpufree::clear_faults(); }
  // A fault that did not fire must not leak into the next test (they share the process under plain gtest).
  void TearDown() override { gpufree::clear_faults(); }
};

// ---- execute-time faults: the forward fails, the next forward of the same Module succeeds ----

struct ExecuteFault {
  const char* name;
  gpufree::Call call;
  int64_t nth;      // which call of that kind in the forward fails (1 = its first)
  int32_t profile;  // pinned; kPrefill makes the switch strategy switch away from the load's profile 0
  size_t tokens;
  bool context_per_profile;  // one context per profile, bound at load: no switch at execute
  // The trace kind of the call; none for getTensorShape, which the GPU-free NvInfer does not trace.
  std::optional<gpufree::TraceKind> kind;
};

void PrintTo(const ExecuteFault& f, std::ostream* os) { *os << f.name; }

class ModuleExecuteFaultTest : public ModuleFaultTest, public ::testing::WithParamInterface<ExecuteFault> {};

TEST_P(ModuleExecuteFaultTest, FailsThatForwardAndTheNextForwardMatchesAFaultFreeOne) {
  const ExecuteFault& f = GetParam();
  const auto ids = token_ids(f.tokens);
  const Outcome want = fault_free(ids, f.profile, f.context_per_profile);
  ASSERT_EQ(want.error, et::Error::Ok) << etrt::last_error_message();

  Module module(fixture(kLlm));
  ASSERT_EQ(load_forward(module, f.context_per_profile), et::Error::Ok) << etrt::last_error_message();
  gpufree::clear_all_traces();
  etrt::OptimizationProfileGuard guard(f.profile);
  const int64_t fired = gpufree::faults_fired();
  gpufree::inject_fault(f.call, f.nth, kLlm);

  const Outcome failed = run_ids(module, ids);
  EXPECT_NE(failed.error, et::Error::Ok);
  const std::string message = etrt::last_error_message();
  EXPECT_THAT(message, HasSubstr(gpufree::to_string(f.call)));
  EXPECT_THAT(message, HasSubstr("injected fault"));
  EXPECT_THAT(message, HasSubstr("TensorRT delegate forward#"));
  EXPECT_EQ(gpufree::faults_fired(), fired + 1);
  EXPECT_EQ(gpufree::count_enqueues(kLlm), 0) << trace_text(kLlm);
  if (f.kind) {
    const auto refused = events_of(kLlm, *f.kind, false);
    ASSERT_EQ(refused.size(), 1u) << trace_text(kLlm);
    EXPECT_EQ(refused[0].error, std::string("injected fault: ") + gpufree::to_string(f.call));
  } else {
    // Untraced (getTensorShape): the trace ends with the input shape set just before it; nothing was bound.
    const auto events = gpufree::trace_events(kLlm);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().kind, TraceKind::kSetInputShape) << trace_text(kLlm);
    EXPECT_EQ(count(kLlm, TraceKind::kSetTensorAddress), 0) << trace_text(kLlm);
  }
  // The injected refusal is the only one: the backend issued nothing the engine had to refuse on its own.
  EXPECT_EQ(gpufree::trace_counters(kLlm).failures, f.kind ? 1 : 0) << trace_text(kLlm);
  if (!f.context_per_profile && f.profile == kPrefill && f.call != Call::kSetOptimizationProfileAsync) {
    // The switch itself went through before the fault.
    EXPECT_EQ(events_of(kLlm, TraceKind::kSetOptimizationProfile, true).size(), 1u) << trace_text(kLlm);
  }

  // No reload: the same Module, the same request.
  gpufree::clear_all_traces();
  const Outcome again = run_ids(module, ids);
  expect_logits(again, ids);
  EXPECT_EQ(again.shape, want.shape);
  EXPECT_EQ(again.values, want.values);
  EXPECT_EQ(gpufree::faults_fired(), fired + 1);
  EXPECT_EQ(gpufree::count_enqueues(kLlm), 1);
  EXPECT_EQ(gpufree::last_enqueue_profile(kLlm), f.profile);
  EXPECT_EQ(gpufree::trace_counters(kLlm).failures, 0) << trace_text(kLlm);
  if (f.kind) {
    // What was refused is issued again, not assumed done.
    EXPECT_FALSE(events_of(kLlm, *f.kind, true).empty()) << trace_text(kLlm);
  }
  if (f.call == Call::kSetTensorAddress) {
    // The tensor whose binding was refused (inputs are bound first: nth 2 is the output, engine IO index 1) is
    // bound again.
    bool rebound = false;
    for (const auto& e : events_of(kLlm, TraceKind::kSetTensorAddress, true)) rebound |= e.io_index == f.nth - 1;
    EXPECT_TRUE(rebound) << trace_text(kLlm);
  }

  // And the delegate goes on working: the other profile, then this one again.
  const int32_t other = f.profile == kDecode ? kPrefill : kDecode;
  const auto other_ids = token_ids(other == kDecode ? 1 : 33);
  {
    etrt::OptimizationProfileGuard switch_guard(other);
    expect_logits(run_ids(module, other_ids), other_ids);
  }
  expect_logits(run_ids(module, ids), ids);
  EXPECT_EQ(gpufree::last_enqueue_profile(kLlm), f.profile);
}

INSTANTIATE_TEST_SUITE_P(
    EveryCall, ModuleExecuteFaultTest,
    ::testing::Values(
        // The switch strategy: a decode forward needs no switch; a prefill forward switches 0 -> 1 first.
        ExecuteFault{"SwitchToPrefill", Call::kSetOptimizationProfileAsync, 1, kPrefill, 40, false,
                     TraceKind::kSetOptimizationProfile},
        ExecuteFault{"SetInputShapeDecode", Call::kSetInputShape, 1, kDecode, 1, false, TraceKind::kSetInputShape},
        ExecuteFault{"SetInputShapeAfterSwitch", Call::kSetInputShape, 1, kPrefill, 40, false,
                     TraceKind::kSetInputShape},
        ExecuteFault{"GetTensorShapeDecode", Call::kGetTensorShape, 1, kDecode, 1, false, std::nullopt},
        ExecuteFault{"GetTensorShapeAfterSwitch", Call::kGetTensorShape, 1, kPrefill, 40, false, std::nullopt},
        ExecuteFault{"SetTensorAddressInputDecode", Call::kSetTensorAddress, 1, kDecode, 1, false,
                     TraceKind::kSetTensorAddress},
        ExecuteFault{"SetTensorAddressOutputDecode", Call::kSetTensorAddress, 2, kDecode, 1, false,
                     TraceKind::kSetTensorAddress},
        ExecuteFault{"SetTensorAddressInputAfterSwitch", Call::kSetTensorAddress, 1, kPrefill, 40, false,
                     TraceKind::kSetTensorAddress},
        ExecuteFault{"SetTensorAddressOutputAfterSwitch", Call::kSetTensorAddress, 2, kPrefill, 40, false,
                     TraceKind::kSetTensorAddress},
        ExecuteFault{"EnqueueDecode", Call::kEnqueueV3, 1, kDecode, 1, false, TraceKind::kEnqueue},
        ExecuteFault{"EnqueueAfterSwitch", Call::kEnqueueV3, 1, kPrefill, 40, false, TraceKind::kEnqueue},
        // context_per_profile: profile 1 runs on its own context (user-managed scratch memory), bound at load.
        ExecuteFault{"PerProfileSetInputShape", Call::kSetInputShape, 1, kPrefill, 40, true, TraceKind::kSetInputShape},
        ExecuteFault{"PerProfileGetTensorShape", Call::kGetTensorShape, 1, kPrefill, 40, true, std::nullopt},
        ExecuteFault{"PerProfileSetTensorAddress", Call::kSetTensorAddress, 2, kPrefill, 40, true,
                     TraceKind::kSetTensorAddress},
        ExecuteFault{"PerProfileEnqueue", Call::kEnqueueV3, 1, kPrefill, 40, true, TraceKind::kEnqueue}),
    [](const ::testing::TestParamInfo<ExecuteFault>& param) { return std::string(param.param.name); });

// A fault in a steady state, where the context already holds the shapes and addresses from the forward before:
// the refused enqueue changes nothing the backend relies on.
TEST_F(ModuleFaultTest, ARefusedEnqueueInASteadyStateLeavesTheNextForwardAnEnqueueAlone) {
  Module module(fixture(kLlm));
  ASSERT_EQ(load_forward(module, false), et::Error::Ok) << etrt::last_error_message();
  const auto ids = token_ids(1);
  expect_logits(run_ids(module, ids), ids);
  gpufree::clear_all_traces();
  gpufree::inject_fault(Call::kEnqueueV3, 1, kLlm);
  EXPECT_EQ(run_ids(module, ids).error, et::Error::Internal);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("enqueueV3 under profile 0 failed: injected fault: enqueueV3"));
  expect_logits(run_ids(module, ids), ids);
  // Two enqueues (one refused) and nothing else: the context kept what it was given.
  EXPECT_EQ(count(kLlm, TraceKind::kEnqueue), 2) << trace_text(kLlm);
  EXPECT_EQ(gpufree::trace_events(kLlm).size(), 2u) << trace_text(kLlm);
  EXPECT_EQ(gpufree::trace_counters(kLlm).failed_enqueues, 1);
}

// A refused switch leaves the context on its old profile; a forward that stays there runs there, correctly, and
// the delegate's bookkeeping (sticky auto keeps "the profile used last") still says profile 0.
TEST_F(ModuleFaultTest, AfterARefusedSwitchTheOldProfileStillRuns) {
  Module module(fixture(kLlm));
  ASSERT_EQ(load_forward(module, false), et::Error::Ok) << etrt::last_error_message();
  expect_logits(run_ids(module, token_ids(1)), token_ids(1));
  gpufree::clear_all_traces();
  gpufree::inject_fault(Call::kSetOptimizationProfileAsync, 1, kLlm);
  {
    etrt::OptimizationProfileGuard guard(kPrefill);
    EXPECT_EQ(run_ids(module, token_ids(64)).error, et::Error::Internal);
    EXPECT_THAT(etrt::last_error_message(), HasSubstr("switching from profile 0 to profile 1 failed"));
  }
  {
    auto automatic = etrt::OptimizationProfileGuard::automatic();  // sticky: the delegate is still on profile 0
    expect_logits(run_ids(module, token_ids(1)), token_ids(1));
  }
  EXPECT_EQ(gpufree::last_enqueue_profile(kLlm), kDecode);
  EXPECT_EQ(gpufree::trace_counters(kLlm).switches, 0);
  EXPECT_EQ(gpufree::trace_counters(kLlm).failed_switches, 1);
}

// ---- the stale-address hazard: a refused rebind must not leave the old buffer bound ----

TEST_F(ModuleFaultTest, ARefusedRebindOfANewOutputBufferNeverWritesTheOldOne) {
  // unplanned_io: the runner's own buffers are the delegate's IO, bound in place when 256-byte aligned.
  constexpr char kLabel[] = "unplanned_io";
  Module module(fixture(kLabel));
  ASSERT_EQ(load_forward(module, false), et::Error::Ok) << etrt::last_error_message();
  // Output buffers with room for the planned bound, [1, 2048, H], which set_output asks for.
  const size_t room = 2048 * static_cast<size_t>(etrt::fixtures::kHidden);
  auto ids = aligned_buffer<int64_t>(1);
  auto out_a = aligned_buffer<float>(room);
  auto out_b = aligned_buffer<float>(room);
  ASSERT_TRUE(ids && out_a && out_b);
  auto input = from_blob(ids.get(), {1, 1}, ScalarType::Long);
  const int32_t rows = 2048, h = static_cast<int32_t>(etrt::fixtures::kHidden);
  auto output = [&](float* out) { return from_blob(out, {1, rows, h}, ScalarType::Float); };
  auto first_row = [](const float* out) { return std::vector<float>(out, out + etrt::fixtures::kHidden); };

  ids[0] = 5;
  ASSERT_EQ(module.set_output(output(out_a.get())), et::Error::Ok);
  ASSERT_TRUE(module.forward(input).ok()) << etrt::last_error_message();
  expect_values(first_row(out_a.get()), {5});

  // A new output buffer; its binding is refused (the input's address is unchanged, so the output's is the one
  // setTensorAddress the backend issues).
  ids[0] = 9;
  ASSERT_EQ(module.set_output(output(out_b.get())), et::Error::Ok);
  gpufree::clear_all_traces();
  gpufree::inject_fault(Call::kSetTensorAddress, 1, kLabel);
  EXPECT_FALSE(module.forward(input).ok());
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("binding 'logits' failed"));
  const auto refused = events_of(kLabel, TraceKind::kSetTensorAddress, false);
  ASSERT_EQ(refused.size(), 1u) << trace_text(kLabel);
  EXPECT_EQ(gpufree::count_enqueues(kLabel), 0);

  // The next forward binds the new buffer again and writes it; the old one keeps the first forward's values.
  gpufree::clear_all_traces();
  ASSERT_TRUE(module.forward(input).ok()) << etrt::last_error_message();
  expect_values(first_row(out_b.get()), {9});
  expect_values(first_row(out_a.get()), {5});
  bool bound_b = false;
  for (const auto& e : events_of(kLabel, TraceKind::kSetTensorAddress, true)) bound_b |= e.address == out_b.get();
  EXPECT_TRUE(bound_b) << trace_text(kLabel);
}

// ---- load-time faults: the load fails and releases what it made, the next load succeeds ----

struct LoadFault {
  const char* name;
  gpufree::Call call;
  int64_t nth;
  bool context_per_profile;
  // Scoped to the fixture's label (createInferRuntime ignores labels: no engine exists yet).
  bool labelled;
  // Where in the load the backend says it failed.
  const char* stage;
  // The trace kind of the refused call; none where the engine cannot trace it (a runtime or deserialization fault
  // happens before there is an engine; getTensorShape is not traced).
  std::optional<gpufree::TraceKind> kind;
};

void PrintTo(const LoadFault& f, std::ostream* os) { *os << f.name; }

class ModuleLoadFaultTest : public ModuleFaultTest, public ::testing::WithParamInterface<LoadFault> {};

TEST_P(ModuleLoadFaultTest, FailsTheLoadReleasesWhatItMadeAndTheNextLoadSucceeds) {
  const LoadFault& f = GetParam();
  gpufree::clear_all_traces();
  const int64_t fired = gpufree::faults_fired();
  gpufree::inject_fault(f.call, f.nth, f.labelled ? kLlm : "");
  Module module(fixture(kLlm));
  EXPECT_NE(load_forward(module, f.context_per_profile), et::Error::Ok);
  const std::string message = etrt::last_error_message();
  EXPECT_THAT(message, HasSubstr(gpufree::to_string(f.call)));
  EXPECT_THAT(message, HasSubstr("injected fault"));
  EXPECT_THAT(message, HasSubstr(f.stage));
  EXPECT_THAT(message, HasSubstr("TensorRT delegate forward#"));
  EXPECT_EQ(gpufree::faults_fired(), fired + 1);
  const gpufree::TraceCounters c = gpufree::trace_counters(kLlm);
  if (f.call == Call::kCreateInferRuntime || f.call == Call::kDeserializeCudaEngine) {
    EXPECT_EQ(c.engines_loaded, 0) << trace_text(kLlm);
  } else {
    EXPECT_EQ(c.engines_loaded, 1) << trace_text(kLlm);
  }
  if (f.kind) {
    const auto refused = events_of(kLlm, *f.kind, false);
    ASSERT_EQ(refused.size(), 1u) << trace_text(kLlm);
    EXPECT_THAT(refused[0].error, HasSubstr("injected fault"));
  }
  EXPECT_EQ(c.failures, f.kind ? 1 : 0) << trace_text(kLlm);
  expect_all_released(kLlm);

  // The next load of the same file, by a fresh Module and by the one whose load failed.
  auto works = [](Module& m) {
    expect_logits(run_ids(m, token_ids(1)), token_ids(1));
    etrt::OptimizationProfileGuard guard(kPrefill);
    expect_logits(run_ids(m, token_ids(40)), token_ids(40));
  };
  gpufree::clear_all_traces();
  {
    Module again(fixture(kLlm));
    ASSERT_EQ(load_forward(again, f.context_per_profile), et::Error::Ok) << etrt::last_error_message();
    works(again);
  }
  ASSERT_EQ(module.load_forward(), et::Error::Ok) << etrt::last_error_message();
  works(module);
  EXPECT_EQ(gpufree::faults_fired(), fired + 1);
  EXPECT_EQ(gpufree::trace_counters(kLlm).failures, 0) << trace_text(kLlm);
  EXPECT_EQ(gpufree::trace_counters(kLlm).engines_loaded, 2);
  // Both loads kept the strategy: with context_per_profile, each gave its two contexts their scratch memory.
  EXPECT_EQ(count(kLlm, TraceKind::kSetDeviceMemory), f.context_per_profile ? 4 : 0) << trace_text(kLlm);
}

INSTANTIATE_TEST_SUITE_P(
    EveryCall, ModuleLoadFaultTest,
    ::testing::Values(LoadFault{"CreateInferRuntime", Call::kCreateInferRuntime, 1, false, false,
                                "createInferRuntime failed", std::nullopt},
                      LoadFault{"DeserializeCudaEngine", Call::kDeserializeCudaEngine, 1, false, true,
                                "TensorRT could not deserialize the engine", std::nullopt},
                      // The switch strategy: one context, then a probe context (user-managed, never enqueued) switched
                      // to profile 1 to size the output staging buffers.
                      LoadFault{"CreateExecutionContext", Call::kCreateExecutionContext, 1, false, true,
                                "could not create an execution context", TraceKind::kCreateContext},
                      LoadFault{"CreateProbeContext", Call::kCreateExecutionContext, 2, false, true,
                                "could not probe profile 1", TraceKind::kCreateContext},
                      LoadFault{"ProbeSwitch", Call::kSetOptimizationProfileAsync, 1, false, true,
                                "could not probe profile 1", TraceKind::kSetOptimizationProfile},
                      LoadFault{"SizingSetInputShape", Call::kSetInputShape, 1, false, true,
                                "refused input 'input_ids' at profile 0's max shape", TraceKind::kSetInputShape},
                      LoadFault{"ProbeSetInputShape", Call::kSetInputShape, 2, false, true,
                                "refused input 'input_ids' at profile 1's max shape", TraceKind::kSetInputShape},
                      LoadFault{"SizingGetTensorShape", Call::kGetTensorShape, 1, false, true,
                                "cannot infer output 'logits' at profile 0", std::nullopt},
                      LoadFault{"ProbeGetTensorShape", Call::kGetTensorShape, 2, false, true,
                                "cannot infer output 'logits' at profile 1", std::nullopt},
                      // context_per_profile: a context per profile, each given the shared scratch memory
                      // (setDeviceMemoryV2); profile 1's is bound to its profile at load.
                      LoadFault{"PerProfileCreateExecutionContext", Call::kCreateExecutionContext, 2, true, true,
                                "could not create the execution context for profile 1", TraceKind::kCreateContext},
                      LoadFault{"PerProfileSetDeviceMemoryFirst", Call::kSetDeviceMemoryV2, 1, true, true,
                                "could not give profile 0's context its scratch memory", TraceKind::kSetDeviceMemory},
                      LoadFault{"PerProfileSetDeviceMemorySecond", Call::kSetDeviceMemoryV2, 2, true, true,
                                "could not give profile 1's context its scratch memory", TraceKind::kSetDeviceMemory},
                      LoadFault{"PerProfileBind", Call::kSetOptimizationProfileAsync, 1, true, true,
                                "could not bind a context to profile 1", TraceKind::kSetOptimizationProfile},
                      LoadFault{"PerProfileSizingSetInputShape", Call::kSetInputShape, 2, true, true,
                                "refused input 'input_ids' at profile 1's max shape", TraceKind::kSetInputShape}),
    [](const ::testing::TestParamInfo<LoadFault>& param) { return std::string(param.param.name); });

// A fault scoped to another engine's label leaves this one alone (and stays armed for that engine).
TEST_F(ModuleFaultTest, AFaultScopedToAnotherLabelDoesNotFireHere) {
  const int64_t fired = gpufree::faults_fired();
  gpufree::inject_fault(Call::kEnqueueV3, 1, "mixed_static");
  Module module(fixture(kLlm));
  ASSERT_EQ(load_forward(module, false), et::Error::Ok) << etrt::last_error_message();
  expect_logits(run_ids(module, token_ids(1)), token_ids(1));
  EXPECT_EQ(gpufree::faults_fired(), fired);

  // The mixed program: its static delegate is the one refused, and the forward fails as a whole.
  Module mixed(fixture("mixed"));
  ASSERT_EQ(load_forward(mixed, false), et::Error::Ok) << etrt::last_error_message();
  auto ids = token_ids(1);
  std::vector<float> x = {1, 2, 3, 4};
  auto result =
      mixed.forward({from_blob(ids.data(), {1, 1}, ScalarType::Long), from_blob(x.data(), {1, 4}, ScalarType::Float)});
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(gpufree::faults_fired(), fired + 1);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("injected fault: enqueueV3"));
  auto again =
      mixed.forward({from_blob(ids.data(), {1, 1}, ScalarType::Long), from_blob(x.data(), {1, 4}, ScalarType::Float)});
  ASSERT_TRUE(again.ok()) << etrt::last_error_message();
  expect_logits(read_output(again, 0), ids);
  EXPECT_EQ(read_output(again, 1).values, (std::vector<float>{2, 4, 6, 8}));
}

}  // namespace
