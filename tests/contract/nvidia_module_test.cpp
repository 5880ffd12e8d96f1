// The Module suite on NVIDIA's TensorRT: programs whose engines NVIDIA's builder made from the contract suite's
// model descriptions (make_nvidia_programs.cpp, packed by run_nvidia.sh), loaded through ExecuTorch's Module and
// run through etrt, against the CPU reference, under both profile strategies: pins, automatic selection under both
// policies, one-profile engines, two delegates in one program, refusals, a caller's stream, CUDA graphs on and off,
// and the attention decoder with its KV caches fed back from outputs to inputs step to step.

#include <NvInferVersion.h>
#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "decoder_reference.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "counters.h"
#include "expect_near.h"
#include "models.h"
#include "module_loading.h"

namespace etrt::contract {
namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using ::testing::HasSubstr;

std::string program(const std::string& name) {
  const char* dir = std::getenv("ETRT_NVIDIA_PROGRAM_DIR");
  return std::string(dir != nullptr ? dir : "nvidia_programs") + "/" + name + ".pte";
}

struct Outcome {
  et::Error error = et::Error::Ok;
  std::vector<float> values;
};

class NvidiaModule : public ::testing::TestWithParam<const char*> {
 protected:
  // `name` loaded under this test's strategy, with the extra options given.
  std::unique_ptr<Module> load(const std::string& name, bool graphs = false, const char* policy = nullptr) {
    etrt::testing::LoadOptions options = {{kOptionProfileStrategy, GetParam()}, {kOptionCudaGraphs, graphs}};
    if (policy != nullptr) options.emplace_back(kOptionAutoPolicy, policy);
    et::Error loaded = et::Error::Ok;
    auto module = etrt::testing::load_module(program(name), options, &loaded);
    EXPECT_EQ(loaded, et::Error::Ok) << program(name) << ": " << last_error_message();
    return module;
  }

  static Outcome run(Module& module, std::vector<int32_t> ids) {
    Outcome out;
    auto input = from_blob(ids.data(), {1, static_cast<int32_t>(ids.size())}, ScalarType::Int);
    auto result = module.forward(input);
    if (!result.ok()) {
      out.error = result.error();
      return out;
    }
    const auto& t = result.get()[0].toTensor();
    out.values.assign(t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel());
    return out;
  }

  static void expect_reference(const Outcome& out, const std::vector<int32_t>& ids) {
    ASSERT_EQ(out.error, et::Error::Ok) << last_error_message();
    expect_near(out.values, llm_reference(ids), 1e-5f);
  }
};

// The attention decoder's program (nv_decoder): its caches are the method's inputs k_cache, v_cache and outputs
// k_cache_out, v_cache_out, the outputs of one forward the inputs of the next.
class DecoderSteps {
 public:
  DecoderSteps(float k_salt, float v_salt)
      : k_(stale_cache(k_salt)), v_(stale_cache(v_salt)), reference_(stale_cache(k_salt), stale_cache(v_salt)) {}

  // `tokens` at `start_pos` through `module` and through the reference: logits and both caches compared.
  void step(Module& module, std::vector<int32_t> tokens, int32_t start_pos) {
    SCOPED_TRACE(std::to_string(tokens.size()) + " tokens at " + std::to_string(start_pos));
    const auto n = static_cast<int32_t>(tokens.size());
    const auto rows = static_cast<int32_t>(decoder::kContext), width = static_cast<int32_t>(decoder::kHeadDim);
    auto result =
        module.forward({from_blob(tokens.data(), {1, n}, ScalarType::Int), from_blob(&start_pos, {1}, ScalarType::Int),
                        from_blob(k_.data(), {1, rows, width}, ScalarType::Float),
                        from_blob(v_.data(), {1, rows, width}, ScalarType::Float)});
    ASSERT_TRUE(result.ok()) << last_error_message();
    ASSERT_EQ(result.get().size(), 3u);
    const std::vector<float> logits = values(result.get()[0].toTensor());
    k_ = values(result.get()[1].toTensor());
    v_ = values(result.get()[2].toTensor());
    ASSERT_NO_FATAL_FAILURE(expect_near(logits, reference_.step(tokens, start_pos), kDecoderTolerance, "logits"));
    ASSERT_NO_FATAL_FAILURE(expect_near(k_, reference_.k_cache(), kDecoderTolerance, "k_cache_out"));
    ASSERT_NO_FATAL_FAILURE(expect_near(v_, reference_.v_cache(), kDecoderTolerance, "v_cache_out"));
  }

 private:
  static std::vector<float> values(const ::executorch::aten::Tensor& t) {
    return std::vector<float>(t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel());
  }

  std::vector<float> k_, v_;
  DecoderReference reference_;
};

TEST_P(NvidiaModule, PinnedDecodeAndPrefillMatchTheReferenceAndSwitchOnlyWhenTheProfileChanges) {
  auto module = load("nv_llm");
  ExecutionReport report;
  for (int round = 0; round < 2; ++round) {
    {
      OptimizationProfileGuard pin(kPrefill);
      expect_reference(run(*module, tokens(37, round)), tokens(37, round));
    }
    OptimizationProfileGuard pin(kDecode);
    for (int step = 0; step < 3; ++step) expect_reference(run(*module, {step + 1}), {step + 1});
  }
  ASSERT_EQ(report.total(), 8u);
  const int32_t expected[] = {1, 0, 0, 0, 1, 0, 0, 0};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(report.entries()[i].profile, expected[i]) << "execution " << i;
  // Every change of profile counts, the first prefill included (a delegate starts on profile 0), under either
  // strategy; only `switch` calls setOptimizationProfileAsync for it.
  EXPECT_EQ(report.switches(), 4u);
}

TEST_P(NvidiaModule, WithoutAGuardTheInputShapeChoosesTheProfile) {
  auto module = load("nv_llm");
  ExecutionReport report;
  expect_reference(run(*module, tokens(1)), tokens(1));
  expect_reference(run(*module, tokens(2048)), tokens(2048));
  expect_reference(run(*module, tokens(32)), tokens(32));
  expect_reference(run(*module, tokens(1)), tokens(1));
  ASSERT_EQ(report.total(), 4u);
  const int32_t expected[] = {0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(report.entries()[i].profile, expected[i]) << "execution " << i;
}

TEST_P(NvidiaModule, OverlappingProfilesFirstFitTakesTheLowestStickyKeepsTheActiveOne) {
  for (const char* policy : {kPolicyFirstFit, kPolicyStickyFirstFit}) {
    auto module = load("nv_overlap", false, policy);
    ExecutionReport report;
    expect_reference(run(*module, tokens(100)), tokens(100));  // only profile 2 (1..2048) fits
    expect_reference(run(*module, tokens(1)), tokens(1));      // all three fit
    expect_reference(run(*module, tokens(40)), tokens(40));    // profiles 1 and 2 fit
    ASSERT_EQ(report.total(), 3u) << policy;
    const bool sticky = std::string(policy) == kPolicyStickyFirstFit;
    EXPECT_EQ(report.entries()[0].profile, 2) << policy;
    EXPECT_EQ(report.entries()[1].profile, sticky ? 2 : 0) << policy;
    EXPECT_EQ(report.entries()[2].profile, sticky ? 2 : 1) << policy;
  }
}

TEST_P(NvidiaModule, EveryPinOfThreeOverlappingProfilesRunsItsRange) {
  auto module = load("nv_overlap");
  for (int32_t p : {2, 0, 1, 2}) {
    OptimizationProfileGuard pin(p);
    const size_t n = p == 0 ? 1 : 64;
    ExecutionReport report;
    expect_reference(run(*module, tokens(n)), tokens(n));
    ASSERT_EQ(report.total(), 1u);
    EXPECT_EQ(report.entries()[0].profile, p);
  }
}

TEST_P(NvidiaModule, APinTheShapeDoesNotFitIsRefusedNamingTheBoundsAndTheModuleStaysUsable) {
  auto module = load("nv_llm");
  {
    OptimizationProfileGuard pin(kPrefill);
    EXPECT_NE(run(*module, tokens(5)).error, et::Error::Ok);
    EXPECT_THAT(last_error_message(), HasSubstr("profile 1"));
    EXPECT_THAT(last_error_message(), HasSubstr("32"));
  }
  {
    OptimizationProfileGuard pin(kDecode);
    EXPECT_NE(run(*module, tokens(2)).error, et::Error::Ok);
  }
  expect_reference(run(*module, tokens(33)), tokens(33));
  expect_reference(run(*module, tokens(1)), tokens(1));
}

TEST_P(NvidiaModule, AOneProfileStaticEngineRunsAndIgnoresAPin) {
  auto module = load("nv_static");
  std::vector<float> x = {1.0f, -2.0f, 0.25f, 8.0f};
  OptimizationProfileGuard pin(1);
  ExecutionReport report;
  auto result = module->forward(from_blob(x.data(), {1, 4}, ScalarType::Float));
  ASSERT_TRUE(result.ok()) << last_error_message();
  const auto& y = result.get()[0].toTensor();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.const_data_ptr<float>()[i], 2.0f * x[static_cast<size_t>(i)]);
  ASSERT_EQ(report.total(), 1u);
  EXPECT_TRUE(report.entries()[0].pin_ignored);
}

TEST_P(NvidiaModule, TwoDelegatesInOneProgramEachRunTheirEngine) {
  auto module = load("nv_mixed");
  for (size_t n : {1u, 300u, 1u}) {
    std::vector<int32_t> ids = tokens(n);
    std::vector<float> x = {0.5f, 1.5f, -3.0f, 4.0f};
    auto result = module->forward({from_blob(ids.data(), {1, static_cast<int32_t>(n)}, ScalarType::Int),
                                   from_blob(x.data(), {1, 4}, ScalarType::Float)});
    ASSERT_TRUE(result.ok()) << last_error_message();
    const auto& logits = result.get()[0].toTensor();
    Outcome out;
    out.values.assign(logits.const_data_ptr<float>(), logits.const_data_ptr<float>() + logits.numel());
    expect_reference(out, ids);
    const auto& y = result.get()[1].toTensor();
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y.const_data_ptr<float>()[i], 2.0f * x[static_cast<size_t>(i)]);
  }
}

// Sessions of one program (docs/design.md, decision 21). A plan built with kPROFILE_SHARING_0806 (nv_llm_sharing)
// is deserialized once for all its sessions; one built without (nv_llm, TensorRT 8.6's default) once per session,
// since a context of one session could not take a profile a context of another holds (from TensorRT 10.0 on every
// plan shares). Either way each session, on a thread and stream of its own, runs its own prompts and decode steps
// like the reference.
TEST_P(NvidiaModule, SessionsShareAnEngineExactlyWhenItsPlanSharesProfilesAndEachRunsItsOwnSteps) {
  constexpr int kSessions = 4;
  for (const std::string name : {"nv_llm_sharing", "nv_llm"}) {
    SCOPED_TRACE(name);
    const bool shares = name == "nv_llm_sharing" || NV_TENSORRT_MAJOR >= 10;
    const int64_t deserialized = etrt::testing::counter(kCounterEnginesDeserialized);
    const int64_t sessions_before = etrt::testing::counter(kCounterEngineSessions);
    std::vector<std::unique_ptr<Module>> sessions;
    for (int s = 0; s < kSessions; ++s) sessions.push_back(load(name));
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(etrt::testing::counter(kCounterEnginesDeserialized) - deserialized, shares ? 1 : kSessions);
    EXPECT_EQ(etrt::testing::counter(kCounterEngineSessions) - sessions_before, kSessions);
    // Streams made and destroyed on this thread (compute-sanitizer once stalled destroying one on a worker).
    std::vector<cudaStream_t> streams(kSessions, nullptr);
    for (cudaStream_t& stream : streams)
      ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    std::vector<std::thread> threads;
    for (int s = 0; s < kSessions; ++s) {
      threads.emplace_back([&, s] {
        CudaStreamGuard on(streams[static_cast<size_t>(s)]);
        for (int round = 0; round < 3; ++round) {
          const std::vector<int32_t> prompt = tokens(static_cast<size_t>(33 + 7 * s + round), s + 1);
          expect_reference(run(*sessions[static_cast<size_t>(s)], prompt), prompt);
          for (int step = 0; step < 4; ++step) {
            const std::vector<int32_t> id = {s * 5 + step + 1};
            expect_reference(run(*sessions[static_cast<size_t>(s)], id), id);
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (cudaStream_t stream : streams) EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
}

TEST_P(NvidiaModule, TokenIdsOutsideTheVocabularyGiveZeroRowsAsTensorRTsGatherDoes) {
  auto module = load("nv_llm");
  std::vector<int32_t> ids = tokens(40);
  ids[7] = static_cast<int32_t>(kVocab + 5);
  const Outcome out = run(*module, ids);
  ASSERT_EQ(out.error, et::Error::Ok) << last_error_message();
  for (int64_t h = 0; h < kHidden; ++h) EXPECT_EQ(out.values[static_cast<size_t>(7 * kHidden + h)], 0.0f) << h;
  ids[7] = 1;
  expect_reference(run(*module, ids), ids);
}

// On a caller's stream (etrt::CudaStreamGuard) the execution is queued there; with cuda_graphs, steady decode steps
// replay a graph. Either way the results are the reference's, across prefills in between.
TEST_P(NvidiaModule, OnACallersStreamWithAndWithoutCudaGraphsTheResultsAreTheReferences) {
  for (bool graphs : {false, true}) {
    auto module = load("nv_llm", graphs);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    {
      CudaStreamGuard on(stream);
      for (int round = 0; round < 2; ++round) {
        Outcome prefill = run(*module, tokens(48, round));
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        expect_reference(prefill, tokens(48, round));
        for (int step = 0; step < 6; ++step) {
          Outcome out = run(*module, {step + 2});
          ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
          expect_reference(out, {step + 2});
        }
      }
    }
    module.reset();
    ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
}

TEST_P(NvidiaModule, AWeightStreamingBudgetIsIgnoredForAnEngineWithoutStreamableWeights) {
  et::Error loaded = et::Error::Ok;
  auto module = etrt::testing::load_module(
      program("nv_llm"), {{kOptionProfileStrategy, GetParam()}, {kOptionWeightStreamingBudget, 0}}, &loaded);
  ASSERT_EQ(loaded, et::Error::Ok) << last_error_message();
  expect_reference(run(*module, tokens(64)), tokens(64));
}

// Automatic selection: a prompt runs on the prefill profile, each one-token step on the decode profile.
TEST_P(NvidiaModule, TheDecoderPrefillsThenDecodesOnItsFedBackCachesAsTheReferenceWithAndWithoutCudaGraphs) {
  for (bool graphs : {false, true}) {
    auto module = load("nv_decoder", graphs);
    for (int32_t prompt : {16, 100}) {
      SCOPED_TRACE(std::string(graphs ? "graphs" : "no graphs") + ", prompt of " + std::to_string(prompt));
      DecoderSteps steps(1.0f, 2.0f);
      ExecutionReport report;
      ASSERT_NO_FATAL_FAILURE(steps.step(*module, tokens(static_cast<size_t>(prompt), prompt), 0));
      for (int32_t pos = prompt; pos < prompt + 6; ++pos) {
        ASSERT_NO_FATAL_FAILURE(steps.step(*module, tokens(1, pos), pos));
      }
      ASSERT_EQ(report.total(), 7u);
      for (size_t i = 0; i < 7; ++i) EXPECT_EQ(report.entries()[i].profile, i == 0 ? kPrefill : kDecode) << i;
    }
  }
}

TEST_P(NvidiaModule, PinnedDecoderPromptChunksAndDecodeStepsMatchTheReference) {
  auto module = load("nv_decoder");
  DecoderSteps steps(3.0f, 4.0f);
  {
    OptimizationProfileGuard pin(kPrefill);
    ASSERT_NO_FATAL_FAILURE(steps.step(*module, tokens(20, 1), 0));
    ASSERT_NO_FATAL_FAILURE(steps.step(*module, tokens(30, 2), 20));
  }
  OptimizationProfileGuard pin(kDecode);
  for (int32_t pos = 50; pos < 54; ++pos) ASSERT_NO_FATAL_FAILURE(steps.step(*module, tokens(1, pos), pos));
}

INSTANTIATE_TEST_SUITE_P(Strategies, NvidiaModule, ::testing::Values(kStrategySwitch, kStrategyContextPerProfile),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param) == kStrategySwitch ? "Switch" : "ContextPerProfile";
                         });

}  // namespace
}  // namespace etrt::contract
