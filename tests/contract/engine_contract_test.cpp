// The NvInfer contract the TensorRT adapter relies on, written once and run against both implementations: the
// GPU-free NvInfer (CI, plans_gpufree.cpp) and NVIDIA's TensorRT on a GPU (plans_nvidia.cpp). Every test drives the
// adapter (engine/tensorrt) over plans built from one model description (models.h), so a rule that holds here holds
// for the backend on either. Lines starting "[observed]" record what the implementation did where TensorRT's
// documentation leaves room (nvinfer/README.md keeps the table).

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decoder_reference.h"
#include "engine/tensorrt/tensorrt_engine.h"
#include "expect_near.h"
#include "plans.h"

namespace etrt::contract {
namespace {

using engine::Engine;
using engine::ExecutionContext;

void observe(const char* rule, const std::string& what) {
  std::printf("[observed] %s | %s | %s\n", implementation().c_str(), rule, what.c_str());
}

// Plans are built once per process (NVIDIA's builder takes seconds per model), through the plan cache (plans.h).
const std::vector<uint8_t>& plan_of(const ModelSpec& model) {
  static std::map<std::string, std::vector<uint8_t>> plans;
  auto found = plans.find(model.label);
  if (found != plans.end()) return found->second;
  std::string error;
  std::vector<uint8_t> plan = cached_plan(model, &error);
  if (!error.empty()) std::fprintf(stderr, "contract suite: %s\n", error.c_str());
  return plans.emplace(model.label, std::move(plan)).first->second;
}

std::unique_ptr<Engine> load(const ModelSpec& model) {
  const std::vector<uint8_t>& plan = plan_of(model);
  if (plan.empty()) return nullptr;
  std::unique_ptr<Engine> engine;
  Diagnostic why;
  if (engine::tensorrt::deserialize(plan.data(), plan.size(), 0, &engine, why) != Error::Ok) {
    std::fprintf(stderr, "contract suite: deserialize(%s): %s\n", model.label.c_str(), why.c_str());
    return nullptr;
  }
  return engine;
}

std::unique_ptr<ExecutionContext> new_context(Engine& engine, bool user_managed = false) {
  std::unique_ptr<ExecutionContext> context;
  Diagnostic why;
  engine::ContextOptions options;
  options.user_managed_memory = user_managed;
  if (engine.create_context(options, &context, why) != Error::Ok)
    std::fprintf(stderr, "contract suite: create_context: %s\n", why.c_str());
  return context;
}

std::string shape_string(const Shape& s) {
  std::string text = "[";
  for (int32_t i = 0; i < s.rank; ++i) text += (i > 0 ? ", " : "") + std::to_string(s.d[i]);
  return text + "]";
}

// Input and output memory of the llm models, for up to kMaxPrefill tokens.
struct LlmBuffers {
  Memory ids{kMaxPrefill * sizeof(int32_t)};
  Memory logits{kMaxPrefill * kHidden * sizeof(float)};

  Error bind(ExecutionContext& context, Diagnostic& why) {
    Error e = context.set_tensor_address(0, ids.data(), why);
    return e != Error::Ok ? e : context.set_tensor_address(1, logits.data(), why);
  }
  // Sets the shape for `tokens`, binds, enqueues and reads the logits back.
  Error run(ExecutionContext& context, const std::vector<int32_t>& tokens, std::vector<float>* out, Diagnostic& why,
            bool bind_first = true) {
    ids.upload(tokens.data(), tokens.size() * sizeof(int32_t));
    Error e = context.set_input_shape(0, make_shape<int64_t>({1, static_cast<int64_t>(tokens.size())}), why);
    if (e == Error::Ok && bind_first) e = bind(context, why);
    if (e == Error::Ok) e = context.enqueue(stream(), why);
    if (e != Error::Ok) return e;
    out->assign(tokens.size() * kHidden, 0.0f);
    logits.download(out->data(), out->size() * sizeof(float));
    return Error::Ok;
  }
};

void expect_near_reference(const std::vector<int32_t>& ids, const std::vector<float>& got) {
  expect_near(got, llm_reference(ids), 1e-5f);
}

class NvInferContract : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = load(two_profile_llm());
    ASSERT_NE(engine_, nullptr) << implementation();
    context_ = new_context(*engine_);
    ASSERT_NE(context_, nullptr);
  }
  void TearDown() override { synchronize(); }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  LlmBuffers io_;
  Diagnostic why_;
  std::vector<float> out_;
};

TEST_F(NvInferContract, IoIsDescribedAsBuilt) {
  ASSERT_EQ(engine_->num_io_tensors(), 2);
  const engine::TensorDesc& ids = engine_->io_tensor(0);
  const engine::TensorDesc& logits = engine_->io_tensor(1);
  EXPECT_EQ(ids.name, "input_ids");
  EXPECT_TRUE(ids.is_input);
  EXPECT_EQ(ids.dtype, DataType::kInt32);
  EXPECT_EQ(ids.shape, make_shape<int64_t>({1, -1}));
  EXPECT_EQ(logits.name, "logits");
  EXPECT_FALSE(logits.is_input);
  EXPECT_EQ(logits.dtype, DataType::kFloat32);
  // The engine-level shape of an output whose extent follows a dynamic input is not part of the contract: the GPU-free
  // NvInfer reports -1, TensorRT 8.6 reported profile 0's extent (1). The backend reads output shapes from the
  // context (tensor_shape) after setting the inputs, never from here.
  ASSERT_EQ(logits.shape.rank, 3);
  EXPECT_EQ(logits.shape.d[0], 1);
  EXPECT_EQ(logits.shape.d[2], kHidden);
  observe("engine-level shape of an output with a dynamic extent", shape_string(logits.shape));
  EXPECT_EQ(logits.aliased_input, -1);
  EXPECT_EQ(engine_->memory_kind(), is_nvidia() ? engine::MemoryKind::kDevice : engine::MemoryKind::kHost);
  EXPECT_EQ(engine_->streamable_weights_size(), 0) << "built without weight streaming";
}

TEST_F(NvInferContract, ProfileBoundsAreAsBuilt) {
  for (const ModelSpec& model : {two_profile_llm(), three_profile_llm()}) {
    std::unique_ptr<Engine> engine = load(model);
    ASSERT_NE(engine, nullptr);
    ASSERT_EQ(engine->num_profiles(), static_cast<int32_t>(model.profiles.size())) << model.label;
    for (int32_t p = 0; p < engine->num_profiles(); ++p) {
      Shape min, opt, max;
      ASSERT_EQ(engine->profile_shape(p, 0, &min, &opt, &max, why_), Error::Ok) << why_.c_str();
      const Bounds& b = model.profiles[static_cast<size_t>(p)][0];
      EXPECT_EQ(min, make_shape<int64_t>({b.min[0], b.min[1]})) << model.label << " profile " << p;
      EXPECT_EQ(opt, make_shape<int64_t>({b.opt[0], b.opt[1]})) << model.label << " profile " << p;
      EXPECT_EQ(max, make_shape<int64_t>({b.max[0], b.max[1]})) << model.label << " profile " << p;
    }
    EXPECT_NE(engine->profile_shape(engine->num_profiles(), 0, nullptr, nullptr, nullptr, why_), Error::Ok);
    EXPECT_NE(engine->profile_shape(0, 1, nullptr, nullptr, nullptr, why_), Error::Ok) << "an output has no bounds";
  }
}

TEST_F(NvInferContract, AStaticEngineHasOneProfileOfItsOwnShapesAndRunsWithoutSetInputShape) {
  std::unique_ptr<Engine> engine = load(static_scale());
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->num_profiles(), 1);
  Shape min, opt, max;
  ASSERT_EQ(engine->profile_shape(0, 0, &min, &opt, &max, why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(min, make_shape<int64_t>({1, 4}));
  EXPECT_EQ(max, make_shape<int64_t>({1, 4}));
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  Memory x(4 * sizeof(float)), y(4 * sizeof(float));
  const float in[4] = {1.0f, -2.0f, 0.5f, 3.0f};
  x.upload(in, sizeof(in));
  ASSERT_EQ(context->set_tensor_address(0, x.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context->set_tensor_address(1, y.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context->enqueue(stream(), why_), Error::Ok) << why_.c_str();
  float out[4] = {};
  y.download(out, sizeof(out));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], 2.0f * in[i]);
}

TEST_F(NvInferContract, ANewContextStartsOnProfileZero) { EXPECT_EQ(context_->optimization_profile(), 0); }

TEST_F(NvInferContract, DecodeAndPrefillMatchTheReferenceInOneContext) {
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
  expect_near_reference(tokens(1), out_);
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  for (size_t n : {32u, 37u, 2048u}) {
    ASSERT_EQ(io_.run(*context_, tokens(n), &out_, why_), Error::Ok) << n << ": " << why_.c_str();
    expect_near_reference(tokens(n), out_);
  }
  ASSERT_EQ(context_->set_optimization_profile(kDecode, stream(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(io_.run(*context_, {5}, &out_, why_), Error::Ok) << why_.c_str();
  expect_near_reference({5}, out_);
}

TEST_F(NvInferContract, EveryProfileOfThreeOverlappingOnesRunsItsRange) {
  std::unique_ptr<Engine> engine = load(three_profile_llm());
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  const size_t sizes[3][2] = {{1, 1}, {1, 64}, {1, 2048}};
  for (int32_t p = 0; p < 3; ++p) {
    if (p > 0) {
      ASSERT_EQ(context->set_optimization_profile(p, stream(), why_), Error::Ok) << why_.c_str();
    }
    for (size_t n : sizes[p]) {
      ASSERT_EQ(io_.run(*context, tokens(n), &out_, why_), Error::Ok) << "profile " << p << ": " << why_.c_str();
      expect_near_reference(tokens(n), out_);
    }
  }
}

// Before an input shape is set under the active profile, the output's shape is not part of the contract (the GPU-free
// NvInfer reports -1; TensorRT 8.6 kept the shape the input had under profile 0); once it is set, it is inferred.
TEST_F(NvInferContract, TheOutputShapeFollowsTheInputShapeSetUnderTheActiveProfile) {
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  Shape logits;
  ASSERT_EQ(context_->tensor_shape(1, &logits, why_), Error::Ok) << why_.c_str();
  observe("output shape after a switch, before setInputShape", shape_string(logits));
  for (int64_t n : {40, 2048, 32}) {
    ASSERT_EQ(context_->set_input_shape(0, make_shape<int64_t>({1, n}), why_), Error::Ok) << why_.c_str();
    ASSERT_EQ(context_->tensor_shape(1, &logits, why_), Error::Ok) << why_.c_str();
    EXPECT_EQ(logits, make_shape<int64_t>({1, n, kHidden}));
  }
}

TEST_F(NvInferContract, AShapeOutsideTheActiveProfileIsRefusedAndTheContextStaysUsable) {
  EXPECT_EQ(context_->set_input_shape(0, make_shape<int64_t>({1, 4}), why_), Error::InvalidArgument);
  observe("setInputShape outside the active profile", why_.c_str());
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->set_input_shape(0, make_shape<int64_t>({1, 2049}), why_), Error::InvalidArgument);
  EXPECT_EQ(context_->set_input_shape(0, make_shape<int64_t>({1, 31}), why_), Error::InvalidArgument);
  ASSERT_EQ(io_.run(*context_, tokens(33), &out_, why_), Error::Ok) << why_.c_str();
  expect_near_reference(tokens(33), out_);
}

TEST_F(NvInferContract, AfterASwitchTheInputShapeIsUnsetAndEnqueueFailsUntilItIsSetAgain) {
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  Shape ids;
  ASSERT_EQ(context_->tensor_shape(0, &ids, why_), Error::Ok) << why_.c_str();
  observe("input shape right after a switch", shape_string(ids));
  const Error e = context_->enqueue(stream(), why_);
  observe("enqueue after a switch without setInputShape", e == Error::Ok ? "accepted" : why_.c_str());
  EXPECT_NE(e, Error::Ok);
  ASSERT_EQ(io_.run(*context_, tokens(32), &out_, why_), Error::Ok) << why_.c_str();
  expect_near_reference(tokens(32), out_);
}

TEST_F(NvInferContract, TensorAddressesSurviveASwitch) {
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(io_.run(*context_, tokens(50), &out_, why_, /*bind_first=*/false), Error::Ok) << why_.c_str();
  expect_near_reference(tokens(50), out_);
}

TEST_F(NvInferContract, SwitchingToTheActiveProfileIsAccepted) {
  ASSERT_EQ(context_->set_optimization_profile(kDecode, stream(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->optimization_profile(), kDecode);
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
}

TEST_F(NvInferContract, AnOutOfRangeProfileIsRefusedAndChangesNothing) {
  for (int32_t bad : {2, -1, 99}) {
    EXPECT_EQ(context_->set_optimization_profile(bad, stream(), why_), Error::InvalidArgument) << bad;
  }
  EXPECT_EQ(context_->optimization_profile(), kDecode);
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
}

// TensorRT 8.6 without kPROFILE_SHARING_0806 (the default plan).
TEST_F(NvInferContract, AProfileAnotherLiveContextHoldsCannotBeChosen) {
  if (shares_profiles(two_profile_llm()))
    GTEST_SKIP() << "TensorRT >= 10 shares every profile; AProfileAnotherContextHoldsIsShared... holds it to that";
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(io_.run(*context_, tokens(32), &out_, why_), Error::Ok) << why_.c_str();
  std::unique_ptr<ExecutionContext> second = new_context(*engine_);
  ASSERT_NE(second, nullptr);
  const Error e = second->set_optimization_profile(kPrefill, stream(), why_);
  observe("choosing a profile another live context holds", e == Error::Ok ? "accepted" : why_.c_str());
  EXPECT_EQ(e, Error::Internal);
  EXPECT_NE(second->optimization_profile(), kPrefill);
}

// TensorRT 8.6 gives a context created while another holds profile 0 no profile (-1): "Could not set default
// profile 0 for execution context. Profile index must be set explicitly." So does the GPU-free NvInfer.
TEST_F(NvInferContract, ASecondContextStartsWithoutAProfileWhileTheFirstHoldsProfileZero) {
  if (shares_profiles(two_profile_llm()))
    GTEST_SKIP() << "TensorRT >= 10 shares every profile; AProfileAnotherContextHoldsIsShared... holds it to that";
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
  std::unique_ptr<ExecutionContext> second = new_context(*engine_);
  ASSERT_NE(second, nullptr);
  observe("initial profile of a second context while the first holds 0",
          std::to_string(second->optimization_profile()));
  EXPECT_EQ(second->optimization_profile(), -1);
  EXPECT_NE(second->enqueue(stream(), why_), Error::Ok) << "no profile, nothing runs";
  ASSERT_EQ(second->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  LlmBuffers other;
  ASSERT_EQ(other.run(*second, tokens(40), &out_, why_), Error::Ok) << why_.c_str();
  expect_near_reference(tokens(40), out_);
}

// Profile sharing, both ways: TensorRT 8.6 refuses a profile another live context holds unless the plan was built
// with PreviewFeature::kPROFILE_SHARING_0806; from 10.0 on every plan shares. The adapter reports which
// (profiles_shared_across_contexts, asked before any context exists, as the backend asks it), and with sharing two
// contexts run one profile, each with its own memory, each correctly.
TEST_F(NvInferContract, AProfileAnotherContextHoldsIsSharedExactlyWhenThePlanWasBuiltForIt) {
  for (const ModelSpec& model : {two_profile_llm(), two_profile_llm_sharing()}) {
    const bool shares = shares_profiles(model);
    std::unique_ptr<Engine> engine = load(model);
    ASSERT_NE(engine, nullptr) << model.label;
    const bool reported = engine->profiles_shared_across_contexts();
    observe(("profiles shared across contexts, " + model.label).c_str(), reported ? "yes" : "no");
    EXPECT_EQ(reported, shares) << model.label;
    std::unique_ptr<ExecutionContext> first = new_context(*engine), second = new_context(*engine);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    observe(("initial profile of a second context, " + model.label).c_str(),
            std::to_string(second->optimization_profile()));
    // 8.6 documents -1 without sharing and nothing with it; 8.6.0 gave 0 on the H200 (2026-12-06). The adapter's probe
    // does not rely on it (nvinfer_compat.h), so a release that differs fails here, not in the sessions.
    EXPECT_EQ(second->optimization_profile(), shares ? kDecode : -1) << model.label;
    ASSERT_EQ(first->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
    ASSERT_EQ(io_.run(*first, tokens(32), &out_, why_), Error::Ok) << why_.c_str();
    const Error e = second->set_optimization_profile(kPrefill, stream(), why_);
    observe(("choosing the profile another context holds, " + model.label).c_str(),
            e == Error::Ok ? "accepted" : why_.c_str());
    if (!shares) {
      EXPECT_EQ(e, Error::Internal) << model.label;
      continue;
    }
    ASSERT_EQ(e, Error::Ok) << model.label << ": " << why_.c_str();
    LlmBuffers other;
    ASSERT_EQ(other.run(*second, tokens(40), &out_, why_), Error::Ok) << why_.c_str();
    expect_near_reference(tokens(40), out_);
    ASSERT_EQ(io_.run(*first, tokens(64), &out_, why_), Error::Ok) << why_.c_str();
    expect_near_reference(tokens(64), out_);
    ASSERT_EQ(first->set_optimization_profile(kDecode, stream(), why_), Error::Ok) << why_.c_str();
    ASSERT_EQ(io_.run(*first, {3}, &out_, why_), Error::Ok) << why_.c_str();
    expect_near_reference({3}, out_);
    ASSERT_EQ(other.run(*second, tokens(33), &out_, why_), Error::Ok) << why_.c_str();
    expect_near_reference(tokens(33), out_);
  }
}

TEST_F(NvInferContract, DestroyingAContextFreesItsProfile) {
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(io_.run(*context_, tokens(32), &out_, why_), Error::Ok) << why_.c_str();
  synchronize();
  context_.reset();
  std::unique_ptr<ExecutionContext> second = new_context(*engine_);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(second->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(io_.run(*second, tokens(64), &out_, why_), Error::Ok) << why_.c_str();
  expect_near_reference(tokens(64), out_);
}

TEST_F(NvInferContract, AContextPerProfileSharingOneScratchBufferRunsBothRegimes) {
  context_.reset();
  const size_t scratch_bytes = engine_->device_memory_size();
  observe("device memory size of the two-profile llm", std::to_string(scratch_bytes) + " bytes");
  Memory scratch(scratch_bytes);
  std::unique_ptr<ExecutionContext> decode = new_context(*engine_, true);
  std::unique_ptr<ExecutionContext> prefill = new_context(*engine_, true);
  ASSERT_NE(decode, nullptr);
  ASSERT_NE(prefill, nullptr);
  ASSERT_EQ(decode->set_device_memory(scratch.data(), scratch_bytes, why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(prefill->set_device_memory(scratch.data(), scratch_bytes, why_), Error::Ok) << why_.c_str();
  observe("profile of the second kUSER_MANAGED context", std::to_string(prefill->optimization_profile()));
  EXPECT_EQ(prefill->optimization_profile(), shares_profiles(two_profile_llm()) ? kDecode : -1);
  ASSERT_EQ(decode->set_optimization_profile(kDecode, stream(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(prefill->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  LlmBuffers other;
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(other.run(*prefill, tokens(100), &out_, why_), Error::Ok) << why_.c_str();
    expect_near_reference(tokens(100), out_);
    for (int step = 0; step < 3; ++step) {
      ASSERT_EQ(io_.run(*decode, {static_cast<int32_t>(step + 1)}, &out_, why_), Error::Ok) << why_.c_str();
      expect_near_reference({static_cast<int32_t>(step + 1)}, out_);
    }
  }
}

TEST_F(NvInferContract, ScratchSmallerThanTheEngineNeedsIsRefused) {
  const size_t needed = engine_->device_memory_size();
  if (needed == 0) GTEST_SKIP() << "the engine needs no scratch memory, so none can be too small";
  std::unique_ptr<ExecutionContext> context = new_context(*engine_, true);
  ASSERT_NE(context, nullptr);
  Memory scratch(needed);
  EXPECT_EQ(context->set_device_memory(scratch.data(), needed - 1, why_), Error::InvalidArgument);
  const Error e = context->enqueue(stream(), why_);
  EXPECT_EQ(e, Error::InvalidState) << "no scratch was accepted, so the context must not run";
}

TEST_F(NvInferContract, EnqueueFailsUntilEveryTensorAddressIsSet) {
  ASSERT_EQ(context_->set_input_shape(0, make_shape<int64_t>({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(0, io_.ids.data(), why_), Error::Ok) << why_.c_str();
  const Error e = context_->enqueue(stream(), why_);
  observe("enqueue with the output's address unset", e == Error::Ok ? "accepted" : why_.c_str());
  EXPECT_NE(e, Error::Ok);
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
}

TEST_F(NvInferContract, EnqueueFailsUntilTheInputShapeIsSet) {
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(io_.bind(*context_, why_), Error::Ok) << why_.c_str();
  const Error e = context_->enqueue(stream(), why_);
  observe("enqueue with a dynamic input's shape unset", e == Error::Ok ? "accepted" : why_.c_str());
  EXPECT_NE(e, Error::Ok);
}

// NVIDIA documents 256-byte alignment for IO addresses; TensorRT 8.6 accepted (and ran with) an address 16 bytes
// off. The GPU-free NvInfer refuses it, stricter on purpose: the backend stages what is not aligned
// (engine::io_address_aligned), and an adapter or backend change that binds a misaligned address fails in CI.
TEST_F(NvInferContract, AnAddressNotAlignedTo256BytesIsRefusedByTheGpuFreeNvInferOnly) {
  auto* misaligned = static_cast<uint8_t*>(io_.ids.data()) + 16;
  const Error e = context_->set_tensor_address(0, misaligned, why_);
  observe("setTensorAddress 16 bytes past a 256-byte boundary", e == Error::Ok ? "accepted" : why_.c_str());
  if (!is_nvidia()) {
    EXPECT_EQ(e, Error::Internal);
    return;
  }
  ASSERT_EQ(e, Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_input_shape(0, make_shape<int64_t>({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(1, io_.logits.data(), why_), Error::Ok) << why_.c_str();
  const Error enqueued = context_->enqueue(stream(), why_);
  observe("enqueue with an input 16 bytes off", enqueued == Error::Ok ? "accepted" : why_.c_str());
  EXPECT_EQ(enqueued, Error::Ok) << why_.c_str();
}

TEST_F(NvInferContract, AnEmptyInputStillNeedsANonNullAddress) {
  std::unique_ptr<Engine> engine = load(empty_capable_scale());
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  ASSERT_EQ(context->set_input_shape(0, make_shape<int64_t>({1, 0}), why_), Error::Ok) << why_.c_str();
  const Error input = context->set_tensor_address(0, nullptr, why_);
  observe("setTensorAddress(nullptr) for an empty input", input == Error::Ok ? "accepted" : why_.c_str());
  const Error output = context->set_tensor_address(1, nullptr, why_);
  observe("setTensorAddress(nullptr) for an empty output", output == Error::Ok ? "accepted" : why_.c_str());
  const Error e = input == Error::Ok && output == Error::Ok ? context->enqueue(stream(), why_) : Error::Internal;
  observe("enqueue with empty tensors bound to nullptr", e == Error::Ok ? "accepted" : why_.c_str());
  EXPECT_NE(e, Error::Ok) << "every input needs a non-null address, even an empty one";
  // With real addresses the empty execution runs.
  Memory x(256), y(256);
  ASSERT_EQ(context->set_tensor_address(0, x.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context->set_tensor_address(1, y.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context->enqueue(stream(), why_), Error::Ok) << why_.c_str();
}

TEST_F(NvInferContract, TokenIdsOutsideTheVocabularyGatherZeros) {
  const std::vector<int32_t> ids = {3, static_cast<int32_t>(kVocab), static_cast<int32_t>(kVocab + 100), 4};
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  std::vector<int32_t> padded = ids;
  padded.resize(32, 1);
  const Error e = io_.run(*context_, padded, &out_, why_);
  if (e != Error::Ok) {
    observe("ids outside the vocabulary", why_.c_str());
  } else {
    std::string row1, row2;
    for (int64_t h = 0; h < 3; ++h) row1 += std::to_string(out_[static_cast<size_t>(kHidden + h)]) + " ";
    for (int64_t h = 0; h < 3; ++h) row2 += std::to_string(out_[static_cast<size_t>(2 * kHidden + h)]) + " ";
    observe("ids V and V+100 gather", "row 1: " + row1 + "row 2: " + row2);
  }
  ASSERT_EQ(e, Error::Ok) << "TensorRT's gather does not refuse an index: " << why_.c_str();
  for (int64_t h = 0; h < kHidden; ++h) {
    EXPECT_EQ(out_[static_cast<size_t>(kHidden + h)], 0.0f) << "id V, element " << h;
    EXPECT_EQ(out_[static_cast<size_t>(2 * kHidden + h)], 0.0f) << "id V+100, element " << h;
  }
  const std::vector<float> first = llm_reference({3});
  for (int64_t h = 0; h < kHidden; ++h) EXPECT_NEAR(out_[static_cast<size_t>(h)], first[static_cast<size_t>(h)], 1e-5f);
}

TEST_F(NvInferContract, DestroyingTheEngineBeforeItsContextLeavesTheContextUsable) {
  engine_.reset();
  ASSERT_EQ(io_.run(*context_, tokens(1), &out_, why_), Error::Ok) << why_.c_str();
  expect_near_reference(tokens(1), out_);
}

// ---- the attention decoder, its KV caches fed back step to step ----

// The attention decoder's memory (models.h: attention_decoder). A cache output that aliases its input (the GPU-free
// NvInfer's kv_cache_update, like TensorRT 10.15's IKVCacheUpdateLayer) is bound to the input's buffer and updated in
// place; one that does not (TensorRT 8.6: no aliasing) gets a buffer of its own, which the next step reads as its
// input: two buffers a cache, swapped after each step. The engine's report (aliased_input) decides which.
// The engine's IO tensors are found by name: TensorRT 8.6 lists the decoder's outputs in another order than they were
// marked (k_cache_out, v_cache_out, logits).
class DecoderIo {
 public:
  // The tensors in the model's order (attention_decoder(): inputs, then outputs).
  static constexpr int32_t kTokens = 0, kStartPos = 1, kKCache = 2, kVCache = 3, kLogits = 4, kKCacheOut = 5,
                           kVCacheOut = 6, kCount = 7;
  // The engine's index of the model's tensor `role`, or -1.
  static int32_t engine_index(const Engine& engine, int32_t role) {
    const ModelSpec model = attention_decoder();
    const std::string& name =
        role < 4 ? model.inputs[static_cast<size_t>(role)].name : model.outputs[static_cast<size_t>(role - 4)].name;
    for (int32_t i = 0; i < engine.num_io_tensors(); ++i)
      if (engine.io_tensor(i).name == name) return i;
    return -1;
  }

  DecoderIo(const Engine& engine, const std::vector<float>& k_cache, const std::vector<float>& v_cache)
      : in_place_(engine.io_tensor(engine_index(engine, kKCacheOut)).aliased_input == engine_index(engine, kKCache)) {
    for (int32_t role = 0; role < kCount; ++role) index_[role] = engine_index(engine, role);
    k_[0].upload(k_cache.data(), kBytes);
    v_[0].upload(v_cache.data(), kBytes);
    // What the other buffers hold before a step writes them is neither cache: rows a step must carry over from its
    // input are seen to be carried.
    const std::vector<float> filler = stale_cache(9.0f);
    k_[1].upload(filler.data(), kBytes);
    v_[1].upload(filler.data(), kBytes);
  }

  // Runs `tokens` at `start_pos` on the caches the previous step left; the logits in *logits.
  Error step(ExecutionContext& context, const std::vector<int32_t>& tokens, int32_t start_pos,
             std::vector<float>* logits, Diagnostic& why) {
    tokens_.upload(tokens.data(), tokens.size() * sizeof(int32_t));
    start_pos_.upload(&start_pos, sizeof(start_pos));
    const size_t out = in_place_ ? current_ : 1 - current_;
    void* const addresses[] = {tokens_.data(), start_pos_.data(), k_[current_].data(), v_[current_].data(),
                               logits_.data(), k_[out].data(),    v_[out].data()};
    const auto rows = static_cast<int64_t>(tokens.size());
    Error e = context.set_input_shape(index_[kTokens], make_shape<int64_t>({1, rows}), why);
    for (int32_t role = 0; role < kCount && e == Error::Ok; ++role)
      e = context.set_tensor_address(index_[role], addresses[role], why);
    if (e == Error::Ok) e = context.enqueue(stream(), why);
    if (e != Error::Ok) return e;
    logits->assign(tokens.size() * decoder::kVocab, 0.0f);
    logits_.download(logits->data(), logits->size() * sizeof(float));
    current_ = out;
    return Error::Ok;
  }
  // The caches as the last step left them.
  std::vector<float> k_cache() const { return read(k_[current_]); }
  std::vector<float> v_cache() const { return read(v_[current_]); }

 private:
  static constexpr size_t kBytes = kDecoderCacheElements * sizeof(float);
  static std::vector<float> read(const Memory& m) {
    std::vector<float> values(kDecoderCacheElements);
    m.download(values.data(), kBytes);
    return values;
  }

  bool in_place_;
  int32_t index_[kCount] = {};
  size_t current_ = 0;
  Memory tokens_{decoder::kMaxPrompt * sizeof(int32_t)};
  Memory start_pos_{sizeof(int32_t)};
  Memory logits_{decoder::kMaxPrompt * decoder::kVocab * sizeof(float)};
  Memory k_[2] = {Memory{kBytes}, Memory{kBytes}};
  Memory v_[2] = {Memory{kBytes}, Memory{kBytes}};
};

class DecoderContract : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = load(attention_decoder());
    ASSERT_NE(engine_, nullptr) << implementation();
    context_ = new_context(*engine_);
    ASSERT_NE(context_, nullptr);
  }
  void TearDown() override { synchronize(); }

  // `tokens` at `start_pos` through `context`, on the profile their count calls for (kDecode for one token), and
  // through the reference: logits and both caches compared.
  void step(ExecutionContext& context, DecoderIo& io, DecoderReference& reference, const std::vector<int32_t>& tokens,
            int32_t start_pos) {
    SCOPED_TRACE(std::to_string(tokens.size()) + " tokens at " + std::to_string(start_pos));
    const int32_t profile = tokens.size() == 1 ? kDecode : kPrefill;
    if (context.optimization_profile() != profile) {
      ASSERT_EQ(context.set_optimization_profile(profile, stream(), why_), Error::Ok) << why_.c_str();
    }
    std::vector<float> logits;
    ASSERT_EQ(io.step(context, tokens, start_pos, &logits, why_), Error::Ok) << why_.c_str();
    ASSERT_NO_FATAL_FAILURE(expect_near(logits, reference.step(tokens, start_pos), kDecoderTolerance, "logits"));
    ASSERT_NO_FATAL_FAILURE(expect_near(io.k_cache(), reference.k_cache(), kDecoderTolerance, "k_cache"));
    ASSERT_NO_FATAL_FAILURE(expect_near(io.v_cache(), reference.v_cache(), kDecoderTolerance, "v_cache"));
  }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  Diagnostic why_;
};

TEST_F(DecoderContract, IoIsDescribedAsBuiltAndTheCachesAliasTheirInputsOnlyWhereTheImplementationCan) {
  const ModelSpec model = attention_decoder();
  ASSERT_EQ(engine_->num_io_tensors(), DecoderIo::kCount);
  for (int32_t role = 0; role < DecoderIo::kCount; ++role) {
    const bool is_input = role < 4;
    const TensorSpec& spec =
        is_input ? model.inputs[static_cast<size_t>(role)] : model.outputs[static_cast<size_t>(role - 4)];
    const int32_t i = DecoderIo::engine_index(*engine_, role);
    ASSERT_GE(i, 0) << spec.name << " is not among the engine's IO tensors";
    const engine::TensorDesc& desc = engine_->io_tensor(i);
    EXPECT_EQ(desc.is_input, is_input) << spec.name;
    EXPECT_EQ(desc.dtype, spec.dtype) << spec.name;
    if (spec.name == "logits") continue;  // a dynamic extent: see IoIsDescribedAsBuilt
    ASSERT_EQ(desc.shape.rank, static_cast<int32_t>(spec.shape.size())) << spec.name;
    for (size_t d = 0; d < spec.shape.size(); ++d) EXPECT_EQ(desc.shape.d[d], spec.shape[d]) << spec.name;
  }
  const auto index = [&](int32_t role) { return DecoderIo::engine_index(*engine_, role); };
  const int32_t k_alias = engine_->io_tensor(index(DecoderIo::kKCacheOut)).aliased_input;
  const int32_t v_alias = engine_->io_tensor(index(DecoderIo::kVCacheOut)).aliased_input;
  observe("aliased inputs of k_cache_out, v_cache_out", std::to_string(k_alias) + ", " + std::to_string(v_alias));
  // TensorRT 8.6 has no aliasing: the caches are plain outputs there; the GPU-free kv_cache_update writes in place.
  EXPECT_EQ(k_alias, is_nvidia() ? -1 : index(DecoderIo::kKCache));
  EXPECT_EQ(v_alias, is_nvidia() ? -1 : index(DecoderIo::kVCache));
  EXPECT_EQ(engine_->io_tensor(index(DecoderIo::kLogits)).aliased_input, -1);
}

TEST_F(DecoderContract, PrefillsOfSeveralLengthsThenDecodeStepsFedTheirCachesMatchTheReference) {
  for (int32_t prompt : {16, 37, 256}) {
    SCOPED_TRACE("prompt of " + std::to_string(prompt));
    DecoderIo io(*engine_, stale_cache(1.0f), stale_cache(2.0f));
    DecoderReference reference(stale_cache(1.0f), stale_cache(2.0f));
    ASSERT_NO_FATAL_FAILURE(step(*context_, io, reference, tokens(static_cast<size_t>(prompt), prompt), 0));
    for (int32_t pos = prompt; pos < prompt + 6; ++pos) {
      ASSERT_NO_FATAL_FAILURE(step(*context_, io, reference, tokens(1, pos), pos));
    }
  }
}

TEST_F(DecoderContract, ASecondPromptChunkAttendsToTheFirstChunksRows) {
  DecoderIo io(*engine_, stale_cache(3.0f), stale_cache(4.0f));
  DecoderReference reference(stale_cache(3.0f), stale_cache(4.0f));
  ASSERT_NO_FATAL_FAILURE(step(*context_, io, reference, tokens(20, 1), 0));
  ASSERT_NO_FATAL_FAILURE(step(*context_, io, reference, tokens(30, 2), 20));
  for (int32_t pos = 50; pos < 53; ++pos) ASSERT_NO_FATAL_FAILURE(step(*context_, io, reference, tokens(1, pos), pos));
}

// The context_per_profile strategy's shape: a context on each profile, both on the same caches.
TEST_F(DecoderContract, DecodeStepsInAContextOfTheirOwnReadWhatThePrefillContextWrote) {
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream(), why_), Error::Ok) << why_.c_str();
  std::unique_ptr<ExecutionContext> decode = new_context(*engine_);
  ASSERT_NE(decode, nullptr);
  ASSERT_EQ(decode->set_optimization_profile(kDecode, stream(), why_), Error::Ok) << why_.c_str();
  DecoderIo io(*engine_, stale_cache(5.0f), stale_cache(6.0f));
  DecoderReference reference(stale_cache(5.0f), stale_cache(6.0f));
  for (int32_t round = 0, pos = 0; round < 2; ++round) {
    ASSERT_NO_FATAL_FAILURE(step(*context_, io, reference, tokens(24, round), pos));
    pos += 24;
    for (int32_t end = pos + 4; pos < end; ++pos)
      ASSERT_NO_FATAL_FAILURE(step(*decode, io, reference, tokens(1, pos), pos));
  }
  EXPECT_EQ(context_->optimization_profile(), kPrefill);
  EXPECT_EQ(decode->optimization_profile(), kDecode);
}

}  // namespace
}  // namespace etrt::contract
