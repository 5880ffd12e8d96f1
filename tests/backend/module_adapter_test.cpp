// The TensorRT adapter's contract with NvInfer, as the GPU-free NvInfer
// implementation traces it while ExecuTorch's Module runs .pte fixtures:
//  * call order: after a profile switch, setOptimizationProfileAsync comes
//    before every setInputShape of that execution and on the enqueue's stream
//    (nullptr for host engines); one-profile engines never switch;
//  * IO addresses: every address the engine accepted is 256-byte aligned
//    (TensorRT's rule), and a misaligned runner buffer is staged, not refused;
//  * an IO tensor TensorRT places on the host (getTensorLocation kHOST) is
//    refused at load.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace gpufree = ::etrt::gpufree;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using gpufree::TraceKind;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace ::etrt::module_test;  // token_ids, run_ids, read_output, expect_logits, expect_values, count

constexpr int32_t kDecode = 0;
constexpr int32_t kPrefill = 1;
// TensorRT's rule for IO tensor addresses.
constexpr uintptr_t kAlignment = 256;

std::unique_ptr<Module> load(const std::string& name, const etrt::testing::LoadOptions& options = {}) {
  et::Error status = et::Error::Ok;
  auto module = etrt::testing::load_module(fixture(name), options, &status);
  EXPECT_EQ(status, et::Error::Ok) << etrt::last_error_message();
  return module;
}

std::unique_ptr<Module> load_context_per_profile(const std::string& name) {
  return load(name, context_per_profile_options());
}

// The switch strategy, asked for by name: the call-order cases below are about its setOptimizationProfileAsync.
std::unique_ptr<Module> load_switch(const std::string& name) { return load(name, switch_options()); }

// ---- (a) call order ----

// One execution's calls, as the trace of `label` shows them (the trace was cleared before it).
struct Execution {
  std::vector<gpufree::TraceEvent> switches, shapes, enqueues;
};
Execution execution_of(const std::string& label) {
  Execution x;
  for (const auto& e : gpufree::trace_events(label)) {
    EXPECT_TRUE(e.ok) << gpufree::to_string(e);
    if (e.kind == TraceKind::kSetOptimizationProfile) x.switches.push_back(e);
    if (e.kind == TraceKind::kSetInputShape) x.shapes.push_back(e);
    if (e.kind == TraceKind::kEnqueue) x.enqueues.push_back(e);
  }
  return x;
}

// Checks one execution that ran on `profile`, having switched there from `from` if `switched`.
void expect_ordered(const std::string& label, int32_t profile, bool switched, int32_t from = -1) {
  SCOPED_TRACE(trace_text(label));
  const Execution x = execution_of(label);
  ASSERT_EQ(x.enqueues.size(), 1u);
  const gpufree::TraceEvent& enqueue = x.enqueues[0];
  EXPECT_EQ(enqueue.profile, profile);
  EXPECT_EQ(enqueue.stream, nullptr);  // a host engine: no stream, for the switch and the enqueue alike
  for (const auto& s : x.shapes) {
    EXPECT_LT(s.sequence, enqueue.sequence);
    EXPECT_EQ(s.profile, profile) << "a shape was set under another profile than the one that ran";
  }
  if (!switched) {
    EXPECT_TRUE(x.switches.empty());
    return;
  }
  ASSERT_EQ(x.switches.size(), 1u);
  const gpufree::TraceEvent& sw = x.switches[0];
  EXPECT_EQ(sw.profile, profile);
  EXPECT_EQ(sw.previous_profile, from);
  EXPECT_EQ(sw.stream, enqueue.stream);
  EXPECT_EQ(sw.context_id, enqueue.context_id);
  EXPECT_LT(sw.sequence, enqueue.sequence);
  // TensorRT forgets every input shape on a switch: they must all be set after it.
  EXPECT_FALSE(x.shapes.empty());
  for (const auto& s : x.shapes) EXPECT_GT(s.sequence, sw.sequence);
}

struct Step {
  int32_t pin;  // -1: automatic (sticky first fit)
  size_t tokens;
  int32_t profile;  // the profile it must run on
  bool switched;    // whether that takes a switch
};

// Runs the steps in order on `module`, checking each execution's calls in `label`'s trace.
void run_steps(Module& module, const std::string& label, const std::vector<Step>& steps) {
  int32_t on = kDecode;  // a fresh load's context is on profile 0
  for (const Step& step : steps) {
    SCOPED_TRACE("pin " + std::to_string(step.pin) + ", " + std::to_string(step.tokens) + " tokens");
    gpufree::clear_all_traces();
    const auto ids = token_ids(step.tokens);
    if (step.pin < 0) {
      auto automatic = etrt::OptimizationProfileGuard::automatic();
      expect_logits(run_ids(module, ids), ids);
    } else {
      etrt::OptimizationProfileGuard guard(step.pin);
      expect_logits(run_ids(module, ids), ids);
    }
    expect_ordered(label, step.profile, step.switched, on);
    on = step.profile;
  }
}

TEST(ModuleAdapterTest, AfterASwitchTheSwitchComesBeforeEverySetInputShapeOnTheEnqueuesStream) {
  auto module = load_switch("llm");
  // Pinned and automatic requests, each regime change a switch; steady runs in between switch nothing.
  run_steps(*module, "llm",
            {{kDecode, 1, kDecode, false},
             {kPrefill, 40, kPrefill, true},
             {kPrefill, 41, kPrefill, false},
             {kDecode, 1, kDecode, true},
             {-1, 100, kPrefill, true},
             {-1, 2048, kPrefill, false},
             {-1, 1, kDecode, true},
             {kDecode, 1, kDecode, false},
             {kPrefill, 2048, kPrefill, true}});
}

TEST(ModuleAdapterTest, ASwitchBetweenOverlappingProfilesSetsTheUnchangedShapeAgainAfterIt) {
  // overlap: profile 0 = exactly one token, profile 1 = 1..2048. A switch with the input shape unchanged still
  // loses the shape TensorRT held, so the backend must set it again, after the switch.
  auto module = load_switch("overlap");
  run_steps(*module, "overlap",
            {{0, 1, 0, false},
             {1, 1, 1, true},
             {1, 1, 1, false},
             {0, 1, 0, true},
             {1, 1, 1, true},
             {-1, 1, 1, false},  // sticky: profile 1 still fits
             {0, 1, 0, true}});
}

TEST(ModuleAdapterTest, ACallersStreamDoesNotSplitAHostEnginesSwitchFromItsEnqueue) {
  // Host engines run on the calling thread: whatever stream the caller hands over, the switch and the enqueue
  // both get nullptr, so the engine never sees a switch issued on one stream and an enqueue on another.
  auto module = load_switch("llm");
  int not_a_stream = 0;
  etrt::CudaStreamGuard stream(&not_a_stream);
  for (int32_t profile : {kPrefill, kDecode}) {
    gpufree::clear_all_traces();
    etrt::OptimizationProfileGuard guard(profile);
    const auto ids = token_ids(profile == kPrefill ? 64 : 1);
    expect_logits(run_ids(*module, ids), ids);
    expect_ordered("llm", profile, true, profile == kPrefill ? kDecode : kPrefill);
  }
}

TEST(ModuleAdapterTest, ContextPerProfileBindsEachContextBeforeItsShapesAndNeverSwitchesAtExecute) {
  gpufree::clear_all_traces();
  auto module = load_context_per_profile("llm");
  // At load: profile 1's context is bound (on the load stream, nullptr here) before any shape is set on it.
  {
    SCOPED_TRACE(trace_text("llm"));
    const auto events = gpufree::trace_events("llm");
    uint64_t bound_context = 0, bound_at = 0;
    for (const auto& e : events) {
      if (e.kind != TraceKind::kSetOptimizationProfile) continue;
      EXPECT_TRUE(e.ok);
      EXPECT_EQ(e.profile, kPrefill);
      EXPECT_EQ(e.stream, nullptr);
      EXPECT_EQ(bound_context, 0u) << "one switch at load, for profile 1's context";
      bound_context = e.context_id;
      bound_at = e.sequence;
    }
    ASSERT_NE(bound_context, 0u);
    for (const auto& e : events) {
      if (e.kind == TraceKind::kSetInputShape && e.context_id == bound_context) {
        EXPECT_GT(e.sequence, bound_at);
      }
    }
  }
  for (int32_t profile : {kPrefill, kDecode, kPrefill}) {
    gpufree::clear_all_traces();
    etrt::OptimizationProfileGuard guard(profile);
    const auto ids = token_ids(profile == kPrefill ? 50 : 1);
    expect_logits(run_ids(*module, ids), ids);
    expect_ordered("llm", profile, false);
  }
}

// A one-profile engine never issues setOptimizationProfileAsync: not at load, not for a pin, not under auto, not
// with the context_per_profile strategy.
TEST(ModuleAdapterTest, AOneProfileEngineNeverIssuesSetOptimizationProfileAsync) {
  for (bool per_profile : {false, true}) {
    SCOPED_TRACE(per_profile ? "context_per_profile" : "switch");
    gpufree::clear_all_traces();
    auto fixed = per_profile ? load_context_per_profile("single_static") : load_switch("single_static");
    auto dynamic = per_profile ? load_context_per_profile("single_dynamic") : load_switch("single_dynamic");
    std::vector<float> x = {1, 2, 3, 4};
    for (int32_t pin : {0, 1, 7}) {
      etrt::OptimizationProfileGuard guard(pin);
      auto out = read_output(fixed->forward(from_blob(x.data(), {1, 4}, ScalarType::Float)));
      ASSERT_EQ(out.error, et::Error::Ok) << etrt::last_error_message();
      EXPECT_EQ(out.values, (std::vector<float>{2, 4, 6, 8}));
      // The dynamic one refuses a pin it does not have, before touching the engine.
      const auto ids = token_ids(5);
      const Outcome result = run_ids(*dynamic, ids);
      if (pin == 0) {
        expect_logits(result, ids);
      } else {
        EXPECT_EQ(result.error, et::Error::InvalidArgument);
      }
    }
    {
      auto automatic = etrt::OptimizationProfileGuard::automatic();
      for (size_t n : {1u, 64u, 3u}) expect_logits(run_ids(*dynamic, token_ids(n)), token_ids(n));
    }
    for (const char* label : {"single_static", "single_dynamic"}) {
      EXPECT_EQ(count(label, TraceKind::kSetOptimizationProfile), 0) << trace_text(label);
      EXPECT_EQ(gpufree::trace_counters(label).contexts_created, 1) << trace_text(label);
      EXPECT_EQ(gpufree::trace_counters(label).failures, 0) << trace_text(label);
    }
    EXPECT_EQ(gpufree::count_enqueues("single_static"), 3);
    EXPECT_EQ(gpufree::count_enqueues("single_dynamic"), 4);
  }
}

// ---- (b) IO address alignment ----

using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;
// `bytes` of 256-byte-aligned memory plus `slack` bytes, so a view offset by up to `slack` still has `bytes`.
Buffer aligned_bytes(size_t bytes, size_t slack = 256) {
  const size_t total = (bytes + slack + kAlignment - 1) / kAlignment * kAlignment;
  return Buffer(static_cast<unsigned char*>(std::aligned_alloc(kAlignment, total)));
}

// Every address any engine of `labels` accepted, with a check that there were some.
void expect_every_bound_address_aligned(const std::vector<std::string>& labels) {
  int64_t bound = 0;
  for (const std::string& label : labels) {
    for (const auto& e : gpufree::trace_events(label)) {
      if (e.kind != TraceKind::kSetTensorAddress) continue;
      EXPECT_TRUE(e.ok) << label << ": " << gpufree::to_string(e);
      if (!e.ok) continue;
      ++bound;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(e.address) % kAlignment, 0u) << label << ": " << gpufree::to_string(e);
    }
    EXPECT_EQ(gpufree::trace_counters(label).failures, 0) << trace_text(label);
  }
  EXPECT_GT(bound, 0);
}

TEST(ModuleAdapterTest, EveryAddressTheEngineAcceptsIs256ByteAligned) {
  gpufree::clear_all_traces();
  // The switch strategy's one context first; context per profile's below.
  {
    auto module = load_switch("llm");
    for (size_t n : {1u, 40u, 2048u, 1u}) {
      etrt::OptimizationProfileGuard guard(n == 1 ? kDecode : kPrefill);
      expect_logits(run_ids(*module, token_ids(n)), token_ids(n));
    }
  }
  {
    auto module = load_switch("big_output");
    etrt::OptimizationProfileGuard guard(1);
    expect_logits(run_ids(*module, token_ids(64)), token_ids(64));
  }
  {
    auto module = load_switch("mixed");
    auto ids = token_ids(33);
    std::vector<float> x = {1, 2, 3, 4};
    etrt::OptimizationProfileGuard guard(kPrefill);
    auto result = module->forward(
        {from_blob(ids.data(), {1, 33}, ScalarType::Long), from_blob(x.data(), {1, 4}, ScalarType::Float)});
    ASSERT_TRUE(result.ok()) << etrt::last_error_message();
    expect_logits(read_output(result, 0), ids);
    EXPECT_EQ(read_output(result, 1).values, (std::vector<float>{2, 4, 6, 8}));
  }
  {
    // Context per profile: the shared scratch memory, too, is where TensorRT wants it.
    auto module = load_context_per_profile("overlap");
    for (size_t n : {1u, 300u}) {
      etrt::OptimizationProfileGuard guard(n == 1 ? 0 : 1);
      expect_logits(run_ids(*module, token_ids(n)), token_ids(n));
    }
    int64_t given = 0;
    for (const auto& e : gpufree::trace_events("overlap")) {
      if (e.kind != TraceKind::kSetDeviceMemory) continue;
      ++given;
      EXPECT_TRUE(e.ok) << gpufree::to_string(e);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(e.address) % kAlignment, 0u) << gpufree::to_string(e);
    }
    EXPECT_EQ(given, 2);  // one per profile's context
  }
  expect_every_bound_address_aligned({"llm", "big_output", "mixed_multi", "mixed_static", "overlap"});
}

// The unplanned_io program takes the runner's buffers as they are, so what the delegate is handed is exactly the
// memory below.
class ModuleAdapterIoTest : public ::testing::Test {
 protected:
  static constexpr int32_t kMaxTokens = 2048;
  static constexpr int32_t kH = static_cast<int32_t>(etrt::fixtures::kHidden);
  static constexpr char kLabel[] = "unplanned_io";

  void SetUp() override {
    module_ = load(kLabel);
    ids_ = aligned_bytes(kMaxTokens * sizeof(int64_t));
    out_ = aligned_bytes(static_cast<size_t>(kMaxTokens * kH) * sizeof(float));
    ASSERT_TRUE(ids_ && out_);
    gpufree::clear_all_traces();
  }

  // Runs `ids` from `ids_ + ids_offset` into `out_ + out_offset`; returns the output values read from there.
  std::vector<float> run(const std::vector<int64_t>& ids, size_t ids_offset, size_t out_offset) {
    auto* in = reinterpret_cast<int64_t*>(ids_.get() + ids_offset);
    auto* out = reinterpret_cast<float*>(out_.get() + out_offset);
    for (size_t i = 0; i < ids.size(); ++i) in[i] = ids[i];
    in_address_ = in;
    out_address_ = out;
    // set_output wants room for the planned bound, [1, 2048, H]; the delegate resizes it to what the engine made.
    EXPECT_EQ(module_->set_output(from_blob(out, {1, kMaxTokens, kH}, ScalarType::Float)), et::Error::Ok);
    auto result = module_->forward(from_blob(in, {1, static_cast<int32_t>(ids.size())}, ScalarType::Long));
    if (!result.ok()) {
      ADD_FAILURE() << etrt::last_error_message();
      return {};
    }
    const auto& t = result.get()[0].toTensor();
    EXPECT_EQ(t.const_data_ptr<float>(), out) << "the output is the runner's buffer";
    EXPECT_EQ(t.dim(), 3);
    EXPECT_EQ(t.size(1), static_cast<int32_t>(ids.size()));
    return std::vector<float>(out, out + ids.size() * static_cast<size_t>(kH));
  }

  // The address the engine was last given for IO index `io` (input_ids 0, logits 1) since the trace was cleared;
  // nullptr if none.
  static const void* bound(int32_t io) {
    const void* address = nullptr;
    for (const auto& e : gpufree::trace_events(kLabel))
      if (e.kind == TraceKind::kSetTensorAddress && e.ok && e.io_index == io) address = e.address;
    return address;
  }

  std::unique_ptr<Module> module_;
  Buffer ids_, out_;
  const void* in_address_ = nullptr;
  const void* out_address_ = nullptr;
};

TEST_F(ModuleAdapterIoTest, AlignedRunnerBuffersAreBoundInPlace) {
  const auto ids = token_ids(1);
  expect_values(run(ids, 0, 0), ids);
  EXPECT_EQ(bound(0), in_address_) << trace_text(kLabel);
  EXPECT_EQ(bound(1), out_address_) << trace_text(kLabel);
  expect_every_bound_address_aligned({kLabel});
}

TEST_F(ModuleAdapterIoTest, AMisalignedInputIsStagedAndTheResultStaysCorrect) {
  // 16 bytes past 256-byte-aligned memory: fine for int64, refused by TensorRT's rule.
  const auto ids = token_ids(1);
  expect_values(run(ids, 16, 0), ids);
  ASSERT_NE(reinterpret_cast<uintptr_t>(in_address_) % kAlignment, 0u);
  EXPECT_NE(bound(0), nullptr) << trace_text(kLabel);
  EXPECT_NE(bound(0), in_address_) << "a misaligned input must be copied to aligned memory, not bound";
  EXPECT_EQ(bound(1), out_address_) << trace_text(kLabel);
  expect_every_bound_address_aligned({kLabel});

  // The same misaligned buffer with new contents: staged afresh, not the previous call's copy.
  const std::vector<int64_t> other = {17};
  expect_values(run(other, 16, 0), other);
  // A prefill through it, after a switch.
  etrt::OptimizationProfileGuard guard(kPrefill);
  const auto prompt = token_ids(300);
  expect_values(run(prompt, 16, 0), prompt);
  EXPECT_EQ(gpufree::last_enqueue_profile(kLabel), kPrefill);
  expect_every_bound_address_aligned({kLabel});
}

TEST_F(ModuleAdapterIoTest, AMisalignedOutputIsStagedAndCopiedBack) {
  etrt::OptimizationProfileGuard guard(kPrefill);
  const auto prompt = token_ids(77);
  // The output 16 bytes off alignment, the input 8 bytes off: both staged.
  expect_values(run(prompt, 8, 16), prompt);
  EXPECT_NE(bound(0), in_address_);
  EXPECT_NE(bound(1), nullptr) << trace_text(kLabel);
  EXPECT_NE(bound(1), out_address_) << "a misaligned output must be written to aligned memory and copied back";
  // Back to aligned buffers: bound in place again.
  const auto more = token_ids(40);
  expect_values(run(more, 0, 0), more);
  EXPECT_EQ(bound(0), in_address_);
  EXPECT_EQ(bound(1), out_address_);
  expect_every_bound_address_aligned({kLabel});
}

// ---- (c) IO tensors TensorRT places on the host ----

TEST(ModuleAdapterTest, AnIoTensorPlacedOnTheHostIsRefusedAtLoadNamingGetTensorLocation) {
  for (const char* name : {"host_input", "host_output"}) {
    SCOPED_TRACE(name);
    gpufree::clear_all_traces();
    Module module(fixture(name));
    EXPECT_NE(module.load_forward(), et::Error::Ok);
    const std::string message = etrt::last_error_message();
    EXPECT_THAT(message, HasSubstr("getTensorLocation"));
    EXPECT_THAT(message, HasSubstr("kHOST"));
    EXPECT_THAT(message, HasSubstr(std::string(name) == "host_input" ? "'x'" : "'y'"));
    // Refused before any context existed, and the engine released.
    const gpufree::TraceCounters c = gpufree::trace_counters(name);
    EXPECT_EQ(c.engines_loaded, 1) << trace_text(name);
    EXPECT_EQ(c.contexts_created, 0) << trace_text(name);
    EXPECT_EQ(count(name, TraceKind::kDestroyEngine), 1) << trace_text(name);
  }
}

// ---- (d) data-dependent output shapes ----

TEST(ModuleAdapterTest, AnOutputWithUnknownDimsAfterEveryInputShapeIsSetIsRefusedClearly) {
  // data_dependent: y = x, both dims of y data-dependent, so y reads [-1, -1] once x's shape is set -- two unknown
  // dims, whose product is positive.
  gpufree::clear_all_traces();
  auto module = load("data_dependent");
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto result = module->forward(from_blob(x.data(), {2, 3}, ScalarType::Float));
    EXPECT_EQ(result.error(), et::Error::NotSupported);
    const std::string message = etrt::last_error_message();
    EXPECT_THAT(message, HasSubstr("output 'y' has shape [-1,-1]"));
    EXPECT_THAT(message, HasSubstr("data-dependent shape"));
  }
  // Refused before any address was bound or anything ran; the engine saw only shapes.
  EXPECT_EQ(count("data_dependent", TraceKind::kSetTensorAddress), 0) << trace_text("data_dependent");
  EXPECT_EQ(gpufree::count_enqueues("data_dependent"), 0) << trace_text("data_dependent");
  EXPECT_EQ(gpufree::trace_counters("data_dependent").failures, 0) << trace_text("data_dependent");
  // The runtime stays usable: another program runs.
  auto llm = load("llm");
  expect_logits(run_ids(*llm, token_ids(1)), token_ids(1));
}

TEST(ModuleAdapterTest, AShapeTensorIsRefusedInTheBackendsWordsNotAsAHostTensor) {
  // TensorRT reports shape tensors on the host too; they get the backend's own refusal, not the kHOST one.
  Module module(fixture("shape_tensor"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("shape tensor"));
  EXPECT_THAT(etrt::last_error_message(), Not(HasSubstr("kHOST")));
}

}  // namespace
