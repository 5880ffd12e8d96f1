// CUDA graphs (load option cuda_graphs) on a GPU: a 64-kernel decoder's steps replayed from graphs produce exactly
// what plain enqueues produce, KV caches included, under both strategies and across profile changes; and a
// capture the engine refuses turns graphs off while the delegate keeps working; and none is tried for an engine
// that streams its weights.

#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "etrt_gpufree/faults.h"
#include "etrt_gpufree/trace.h"
#include "module_loading.h"

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr int32_t kVocab = 64, kWidth = 32, kCache = 256, kMaxTokens = 64;

std::string fixture(const std::string& name) {
  const char* dir = std::getenv("ETRT_GPU_FIXTURE_DIR");
  return std::string(dir != nullptr ? dir : ETRT_GPU_FIXTURE_DIR) + "/" + name + ".pte";
}

// bench_graph's IO in device memory (or another program of the same model), and a module loaded with or without
// graphs.
class Decoder {
 public:
  Decoder(const char* strategy, bool graphs, const std::string& program = "bench_graph") {
    for (void** p : {&tokens_, &pos_, &k_cache_, &v_cache_, &logits_}) *p = nullptr;
    ok_ = cudaMalloc(&tokens_, kMaxTokens * sizeof(int64_t)) == cudaSuccess &&
          cudaMalloc(&pos_, sizeof(int64_t)) == cudaSuccess &&
          cudaMalloc(&k_cache_, kCache * kWidth * sizeof(float)) == cudaSuccess &&
          cudaMalloc(&v_cache_, kCache * kWidth * sizeof(float)) == cudaSuccess &&
          cudaMalloc(&logits_, kMaxTokens * kVocab * sizeof(float)) == cudaSuccess &&
          cudaMemset(k_cache_, 0, kCache * kWidth * sizeof(float)) == cudaSuccess &&
          cudaMemset(v_cache_, 0, kCache * kWidth * sizeof(float)) == cudaSuccess &&
          cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess;
    et::Error loaded = et::Error::Ok;
    module_ = etrt::testing::load_module(
        fixture(program), {{etrt::kOptionProfileStrategy, strategy}, {etrt::kOptionCudaGraphs, graphs}}, &loaded);
    ok_ = ok_ && loaded == et::Error::Ok &&
          module_->set_output(from_blob(logits_, {1, kMaxTokens, kVocab}, ScalarType::Float)) == et::Error::Ok;
  }
  ~Decoder() {
    module_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    for (void* p : {tokens_, pos_, k_cache_, v_cache_, logits_}) cudaFree(p);
  }
  bool ok() const { return ok_; }

  // Runs `ids` at position `at` on the caller's stream; returns the logits, empty on failure.
  std::vector<float> step(const std::vector<int64_t>& ids, int64_t at) {
    if (cudaMemcpy(tokens_, ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(pos_, &at, sizeof(at), cudaMemcpyHostToDevice) != cudaSuccess)
      return {};
    etrt::CudaStreamGuard on(stream_);
    etrt::OptimizationProfileGuard pin(ids.size() == 1 ? 0 : 1);
    const auto n = static_cast<int32_t>(ids.size());
    auto result = module_->forward({from_blob(tokens_, {1, n}, ScalarType::Long), from_blob(pos_, {1}, ScalarType::Long),
                                    from_blob(k_cache_, {1, kCache, kWidth}, ScalarType::Float),
                                    from_blob(v_cache_, {1, kCache, kWidth}, ScalarType::Float)});
    if (!result.ok()) {
      ADD_FAILURE() << etrt::last_error_message();
      return {};
    }
    std::vector<float> out(static_cast<size_t>(n) * kVocab);
    if (cudaStreamSynchronize(stream_) != cudaSuccess ||
        cudaMemcpy(out.data(), logits_, out.size() * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
      return {};
    return out;
  }

  std::vector<float> caches() const {
    std::vector<float> out(2 * kCache * kWidth);
    cudaMemcpy(out.data(), k_cache_, kCache * kWidth * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(out.data() + kCache * kWidth, v_cache_, kCache * kWidth * sizeof(float), cudaMemcpyDeviceToHost);
    return out;
  }

 private:
  bool ok_ = false;
  void *tokens_, *pos_, *k_cache_, *v_cache_, *logits_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Module> module_;
};

// A run of requests: a prefill of `prompt` tokens, then decode steps, twice over (so prefill and decode alternate
// and graphs are reused after a profile change).
void run_requests(Decoder& d, std::vector<std::vector<float>>* logits) {
  int64_t at = 0;
  for (int request = 0; request < 2; ++request) {
    std::vector<int64_t> prompt(8 + 4 * request);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int64_t>((i * 5 + 1) % kVocab);
    logits->push_back(d.step(prompt, at));
    at += static_cast<int64_t>(prompt.size());
    for (int s = 0; s < 10; ++s) logits->push_back(d.step({(at * 3 + 1) % kVocab}, at)), ++at;
  }
}

class GraphCuda : public ::testing::TestWithParam<const char*> {};

TEST_P(GraphCuda, ReplayedStepsEqualPlainEnqueuesBitForBit) {
  Decoder plain(GetParam(), false), graphs(GetParam(), true);
  ASSERT_TRUE(plain.ok() && graphs.ok()) << etrt::last_error_message();
  std::vector<std::vector<float>> a, b;
  run_requests(plain, &a);
  run_requests(graphs, &b);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_FALSE(a[i].empty());
    EXPECT_EQ(a[i], b[i]) << "step " << i;
  }
  EXPECT_EQ(plain.caches(), graphs.caches());
}

// A graph is replayed only while its context is unchanged since the capture: TensorRT reconfigures a context at the
// first enqueue after a switch or a new shape, and the graph holds the configuration it captured. Counted with the
// GPU-free NvInfer's enqueue hook, which runs in every enqueueV3 call (a capture is one) and in no replay. Three decode
// steps, a prefill, three decode steps: under `switch` the prefill reconfigures the one context, so the second decode
// run enqueues plainly, captures anew and replays (2 calls), as the first did; under `context_per_profile` the
// prefill runs on its own context and the decode context's graph is replayed at once (0 calls).
void count_graph_enqueues(const char* strategy, const std::string& program, std::vector<int>* counts) {
  int calls = 0;
  etrt::gpufree::set_enqueue_hook(program, [&calls] { ++calls; });
  {
    Decoder d(strategy, true, program);
    ASSERT_TRUE(d.ok()) << etrt::last_error_message();
    int64_t at = 0;
    for (int s = 0; s < 3; ++s, ++at) ASSERT_FALSE(d.step({(at * 3 + 1) % kVocab}, at).empty());
    counts->push_back(calls);
    ASSERT_FALSE(d.step({1, 2, 3, 4, 5, 6, 7, 8}, at).empty());
    at += 8;
    counts->push_back(calls);
    for (int s = 0; s < 3; ++s, ++at) ASSERT_FALSE(d.step({(at * 3 + 1) % kVocab}, at).empty());
    counts->push_back(calls);
  }
  etrt::gpufree::set_enqueue_hook(program, {});
}

TEST_P(GraphCuda, AGraphIsReplayedOnlyWhileItsContextIsUnchangedSinceTheCapture) {
  const bool per_profile = std::string(GetParam()) == "context_per_profile";
  std::vector<int> counts;
  count_graph_enqueues(GetParam(), "bench_graph", &counts);
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts[0], 2) << "plain, capture, replay";
  EXPECT_EQ(counts[1], 3) << "the prefill enqueues plainly";
  EXPECT_EQ(counts[2], per_profile ? 3 : 5) << (per_profile ? "the decode context was not touched: its graph replays"
                                                            : "the switch made the graph stale: plain, capture, replay");
}

TEST_P(GraphCuda, RefusedCaptureTurnsGraphsOffAndTheDelegateKeepsWorking) {
  Decoder plain(GetParam(), false), graphs(GetParam(), true);
  ASSERT_TRUE(plain.ok() && graphs.ok()) << etrt::last_error_message();
  std::vector<std::vector<float>> want;
  for (int64_t at = 0; at < 5; ++at) want.push_back(plain.step({at + 1}, at));
  // Both modules' engines carry one label, so the fault is armed once only the graphs module runs. Its step 0
  // enqueues plainly; step 1 is the first steady one, whose capture makes the second enqueueV3 call.
  etrt::gpufree::clear_faults();
  const int64_t fired_before = etrt::gpufree::faults_fired();  // a process-wide count
  etrt::gpufree::inject_fault(etrt::gpufree::Call::kEnqueueV3, 2, "bench_graph");
  for (int64_t at = 0; at < 5; ++at) EXPECT_EQ(graphs.step({at + 1}, at), want[static_cast<size_t>(at)]) << "step " << at;
  EXPECT_EQ(etrt::gpufree::faults_fired() - fired_before, 1);
  etrt::gpufree::clear_faults();
  EXPECT_EQ(plain.caches(), graphs.caches());
}

// TensorRT: "If the Engine is streaming weights, enqueueV3 will become synchronous, and the graph will not be
// capturable." ws_cuda streams (no budget: the automatic one, half its weights), so the delegate never tries a
// capture: every enqueue is a plain one and none is refused. Trying would cost a refused enqueue at the first
// steady call.
TEST(GraphCudaWeightStreaming, NoCaptureIsTriedForAStreamingEngine) {
  etrt::gpufree::clear_trace("ws_cuda");
  Module module(fixture("ws_cuda"));
  ASSERT_EQ(etrt::testing::load_with_options(module, {{etrt::kOptionCudaGraphs, true}}), et::Error::Ok)
      << etrt::last_error_message();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::vector<float> x = {1, 2, 3, 4};
  for (int step = 0; step < 3; ++step) {
    etrt::CudaStreamGuard on(stream);
    auto input = from_blob(x.data(), {1, 4}, ScalarType::Float);
    auto result = module.forward(input);
    ASSERT_TRUE(result.ok()) << etrt::last_error_message();
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const float* y = result.get()[0].toTensor().const_data_ptr<float>();
    EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{3, 6, 9, 12})) << "step " << step;
  }
  const etrt::gpufree::TraceCounters counters = etrt::gpufree::trace_counters("ws_cuda");
  EXPECT_EQ(counters.enqueues, 3);
  EXPECT_EQ(counters.failed_enqueues, 0) << "a capture was tried";
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Strategies, GraphCuda,
                         ::testing::Values(etrt::kStrategySwitch, etrt::kStrategyContextPerProfile),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param) == etrt::kStrategySwitch ? "Switch" : "ContextPerProfile";
                         });

}  // namespace
