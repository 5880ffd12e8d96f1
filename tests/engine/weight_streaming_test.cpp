// Weight streaming through the adapter (and, where the adapter has no call for it, through NvInfer itself): what
// an engine built with streamable weights reports, the budget's range, and TensorRT's rules for a streaming engine
// (nvinfer/README.md, "Weight streaming"): the device memory a context needs depends on the budget, since each
// context stages streamed weights in getWeightStreamingScratchMemorySize() bytes more; the budget cannot move while
// a context exists. (That a streaming engine's enqueue is synchronous and refuses a capturing stream is CUDA mode's:
// tests/gpu/graph_capture_test.cpp.)

#include <gtest/gtest.h>

#include <NvInferRuntime.h>

#include <cstdlib>
#include <mutex>

#include "gpufree_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

// x [1, 4] -> x W, W a [4, 4] constant: 64 bytes of weights.
Builder weights_builder(const std::string& label, bool streaming) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, 4}))
      .add_output("y", DataType::kFloat32, make_shape({1, 4}))
      .add_constant("w", make_shape({4, 4}), std::vector<float>(16, 1.0f))
      .matmul("x", "w", "y")
      .enable_weight_streaming(streaming);
  return b;
}

TEST(WeightStreaming, StreamingEngineReportsItsWeightsAndStartsWithAllOfThemResident) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->streamable_weights_size(), 64);
  EXPECT_EQ(engine->weight_streaming_budget(), 64);
  EXPECT_EQ(engine->weight_streaming_automatic_budget(), 32);
  Diagnostic why;
  EXPECT_EQ(engine->set_weight_streaming_budget(0, why), Error::Ok) << why.c_str();
  EXPECT_EQ(engine->weight_streaming_budget(), 0);
}

TEST(WeightStreaming, BudgetOutsideZeroToTheStreamableSizeIsRefusedAndChangesNothing) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  Diagnostic why;
  EXPECT_EQ(engine->set_weight_streaming_budget(65, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(),
                  "setWeightStreamingBudgetV2(65) failed: setWeightStreamingBudgetV2(65): the "
                  "budget must be in [0, 64]"))
      << why.c_str();
  EXPECT_EQ(engine->set_weight_streaming_budget(-1, why), Error::InvalidArgument);
  EXPECT_EQ(engine->weight_streaming_budget(), 64);
}

TEST(WeightStreaming, BudgetCannotChangeWhileAContextExists) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), true)));
  ASSERT_NE(engine, nullptr);
  Diagnostic why;
  {
    std::unique_ptr<ExecutionContext> context = new_context(*engine);
    ASSERT_NE(context, nullptr);
    // The adapter reports every refused budget as InvalidArgument, this one included.
    EXPECT_EQ(engine->set_weight_streaming_budget(16, why), Error::InvalidArgument);
    EXPECT_TRUE(has(why.c_str(), "has 1 execution context(s); the budget can change only before the first"))
        << why.c_str();
  }
  EXPECT_EQ(engine->set_weight_streaming_budget(16, why), Error::Ok) << why.c_str();
}

TEST(WeightStreaming, EngineWithoutStreamableWeightsRefusesABudget) {
  std::unique_ptr<Engine> engine = load(build_or_fail(weights_builder(test_label(), false)));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->streamable_weights_size(), 0);
  Diagnostic why;
  EXPECT_EQ(engine->set_weight_streaming_budget(0, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "was not built with weight streaming")) << why.c_str();
}

// The LLM-shaped engine (gpufree_fixtures.h) with streamable weights: table [6, 4], bias [4] and W [4, 3], float32,
// so 160 streamable bytes, the largest weight 96 (the table).
constexpr int64_t kLlmStreamable = 160;
constexpr int64_t kLlmLargestWeight = 96;
std::vector<uint8_t> streaming_llm(const std::string& label) {
  Builder b = llm_builder(label);
  b.enable_weight_streaming();
  return build_or_fail(b);
}

constexpr int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// What the adapter reports before any budget is set: the intermediates' scratch alone (every weight resident).
int64_t resident_memory(Engine& engine) {
  EXPECT_EQ(engine.weight_streaming_budget(), engine.streamable_weights_size());
  return static_cast<int64_t>(engine.device_memory_size());
}

Error set_budget(Engine& engine, int64_t bytes) {
  Diagnostic why;
  const Error status = engine.set_weight_streaming_budget(bytes, why);
  EXPECT_EQ(status, Error::Ok) << why.c_str();
  return status;
}

TEST(WeightStreaming, DeviceMemorySizeGrowsByTheStreamingScratchTheBudgetCallsFor) {
  std::unique_ptr<Engine> engine = load(streaming_llm(test_label()));
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->streamable_weights_size(), kLlmStreamable);
  const int64_t resident = resident_memory(*engine);
  ASSERT_GT(resident, 0);  // the engine has intermediates, so the streaming scratch starts at an aligned offset
  // Streamed-out bytes, bounded by the largest weight (one op's weights are staged at a time).
  ASSERT_EQ(set_budget(*engine, 140), Error::Ok);
  EXPECT_EQ(static_cast<int64_t>(engine->device_memory_size()), align256(resident) + 20);
  ASSERT_EQ(set_budget(*engine, 0), Error::Ok);
  EXPECT_EQ(static_cast<int64_t>(engine->device_memory_size()), align256(resident) + kLlmLargestWeight);
  // Every weight resident again: no streaming, no scratch for it.
  ASSERT_EQ(set_budget(*engine, kLlmStreamable), Error::Ok);
  EXPECT_EQ(static_cast<int64_t>(engine->device_memory_size()), resident);
}

TEST(WeightStreaming, EngineWithoutStreamableWeightsNeedsWhatItsIntermediatesNeed) {
  std::unique_ptr<Engine> streaming = load(streaming_llm(test_label()));
  std::unique_ptr<Engine> plain = load_llm(test_label() + ".plain");
  ASSERT_NE(streaming, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->streamable_weights_size(), 0);
  EXPECT_EQ(plain->weight_streaming_budget(), 0);  // TensorRT: getStreamableWeightsSize() when not streaming
  EXPECT_EQ(plain->device_memory_size(), streaming->device_memory_size());
}

// A logger that keeps the errors NvInfer reports, for the calls the adapter does not make.
class KeepErrors final : public nvinfer1::ILogger {
 public:
  void log(Severity severity, char const* msg) noexcept override {
    if (severity > Severity::kERROR) return;
    std::lock_guard<std::mutex> lock(mutex_);
    text_ += msg;
    text_ += "\n";
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

// NvInfer's own objects, in TensorRT's order of destruction.
struct Raw {
  KeepErrors logger;
  std::unique_ptr<nvinfer1::IRuntime> runtime;
  std::unique_ptr<nvinfer1::ICudaEngine> engine;

  explicit Raw(const std::vector<uint8_t>& bytes) : runtime(nvinfer1::createInferRuntime(logger)) {
    if (runtime) engine.reset(runtime->deserializeCudaEngine(bytes.data(), bytes.size()));
  }
};

TEST(WeightStreaming, ScratchMemorySizeIsNonzeroExactlyWhileTheEngineStreams) {
  Raw raw(streaming_llm(test_label()));
  ASSERT_NE(raw.engine, nullptr) << raw.logger.text();
  nvinfer1::ICudaEngine& e = *raw.engine;
  EXPECT_EQ(e.getWeightStreamingScratchMemorySize(), 0);  // the budget starts at the streamable size
  const int64_t resident = e.getDeviceMemorySizeV2();
  ASSERT_TRUE(e.setWeightStreamingBudgetV2(kLlmStreamable - 1)) << raw.logger.text();
  EXPECT_EQ(e.getWeightStreamingScratchMemorySize(), 1);
  ASSERT_TRUE(e.setWeightStreamingBudgetV2(0)) << raw.logger.text();
  EXPECT_EQ(e.getWeightStreamingScratchMemorySize(), kLlmLargestWeight);
  // getDeviceMemorySizeV2() includes it, for every profile: TensorRT's "the user can provide the additional memory
  // through getDeviceMemorySizeV2() and IExecutionContext::setDeviceMemoryV2()".
  EXPECT_EQ(e.getDeviceMemorySizeV2(), align256(resident) + kLlmLargestWeight);
  EXPECT_EQ(e.getDeviceMemorySizeForProfileV2(kDecode), e.getDeviceMemorySizeV2());
  EXPECT_EQ(e.getDeviceMemorySizeForProfileV2(kPrefill), e.getDeviceMemorySizeV2());

  Raw plain(build_or_fail(llm_builder(test_label() + ".plain")));
  ASSERT_NE(plain.engine, nullptr) << plain.logger.text();
  EXPECT_EQ(plain.engine->getWeightStreamingScratchMemorySize(), 0);
  EXPECT_EQ(raw.logger.text(), "");
}

// A 256-byte-aligned host buffer of `bytes` (host engines take host memory as their "device" memory).
struct Scratch {
  explicit Scratch(size_t bytes) : data(static_cast<uint8_t*>(std::aligned_alloc(256, (bytes + 255) / 256 * 256))) {}
  ~Scratch() { std::free(data); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  uint8_t* data;
};

TEST(WeightStreaming, UserManagedContextOfAStreamingEngineIsRefusedMemoryWithoutTheStreamingScratch) {
  Raw raw(streaming_llm(test_label()));
  ASSERT_NE(raw.engine, nullptr) << raw.logger.text();
  nvinfer1::ICudaEngine& e = *raw.engine;
  const int64_t resident = e.getDeviceMemorySizeV2();
  ASSERT_TRUE(e.setWeightStreamingBudgetV2(0)) << raw.logger.text();
  const int64_t needed = e.getDeviceMemorySizeV2();
  Scratch scratch(static_cast<size_t>(needed));
  std::unique_ptr<nvinfer1::IExecutionContext> context(
      e.createExecutionContext(nvinfer1::ExecutionContextAllocationStrategy::kUSER_MANAGED));
  ASSERT_NE(context, nullptr) << raw.logger.text();
  // Enough for the intermediates, not for the staged weights: refused by NvInfer itself, naming both.
  context->setDeviceMemoryV2(scratch.data, resident);
  EXPECT_TRUE(has(raw.logger.text(), "needs " + std::to_string(needed) +
                                         " bytes (device_memory_size()) for its largest profile, of which 96 bytes "
                                         "stage streamed weights (getWeightStreamingScratchMemorySize(): the budget "
                                         "is 0 of 160 streamable bytes)"))
      << raw.logger.text();
  // Everything else in place, the enqueue fails for want of memory: the short buffer was not taken.
  AlignedVector<int64_t> ids = {1};
  AlignedVector<float> logits(kLogits, 0.0f);
  nvinfer1::Dims shape{};
  shape.nbDims = 2;
  shape.d[0] = 1;
  shape.d[1] = 1;
  ASSERT_TRUE(context->setInputShape("ids", shape)) << raw.logger.text();
  ASSERT_TRUE(context->setTensorAddress("ids", ids.data())) << raw.logger.text();
  ASSERT_TRUE(context->setTensorAddress("logits", logits.data())) << raw.logger.text();
  EXPECT_FALSE(context->enqueueV3(nullptr));
  EXPECT_TRUE(has(raw.logger.text(), "call set_device_memory with at least " + std::to_string(needed) + " bytes"))
      << raw.logger.text();
  context->setDeviceMemoryV2(scratch.data, needed);
  EXPECT_TRUE(context->enqueueV3(nullptr)) << raw.logger.text();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(WeightStreaming, AdapterRefusesScratchWithoutTheStreamingPartSayingHowMuchItIs) {
  std::unique_ptr<Engine> engine = load(streaming_llm(test_label()));
  ASSERT_NE(engine, nullptr);
  const size_t resident = engine->device_memory_size();
  ASSERT_EQ(set_budget(*engine, 0), Error::Ok);
  Scratch scratch(engine->device_memory_size());
  std::unique_ptr<ExecutionContext> context = new_context(*engine, ContextOptions{/*user_managed_memory=*/true});
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  EXPECT_EQ(context->set_device_memory(scratch.data, resident, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "the engine needs " + std::to_string(engine->device_memory_size()) +
                                   " bytes (getDeviceMemorySizeV2), of which 96 stage its streamed weights "
                                   "(getWeightStreamingScratchMemorySize)"))
      << why.c_str();
}

// Streaming changes where weights live, never the results: the static context allocates the streaming scratch, a
// user-managed one runs in a buffer of getDeviceMemorySizeV2() bytes (both ends are touched at every enqueue, so a
// short buffer shows under AddressSanitizer).
TEST(WeightStreaming, StreamingContextsComputeWhatAResidentEngineComputes) {
  std::unique_ptr<Engine> engine = load(streaming_llm(test_label()));
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(set_budget(*engine, 0), Error::Ok);
  Scratch scratch(engine->device_memory_size());
  Diagnostic why;
  AlignedVector<int64_t> ids = {1, 4, 2};
  AlignedVector<float> logits;
  {
    std::unique_ptr<ExecutionContext> owned = new_context(*engine);
    ASSERT_NE(owned, nullptr);
    ASSERT_EQ(owned->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
    ASSERT_EQ(run_llm(*owned, ids, &logits, why), Error::Ok) << why.c_str();
    EXPECT_EQ(logits, expected_logits(ids));
  }
  std::unique_ptr<ExecutionContext> supplied = new_context(*engine, ContextOptions{/*user_managed_memory=*/true});
  ASSERT_NE(supplied, nullptr);
  ASSERT_EQ(supplied->set_device_memory(scratch.data, engine->device_memory_size(), why), Error::Ok) << why.c_str();
  ASSERT_EQ(supplied->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  ASSERT_EQ(run_llm(*supplied, ids, &logits, why), Error::Ok) << why.c_str();
  EXPECT_EQ(logits, expected_logits(ids));
}

TEST(WeightStreaming, RefusedBudgetLeavesTheBudgetAndTheMemorySizeAsTheyWere) {
  std::unique_ptr<Engine> engine = load(streaming_llm(test_label()));
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(set_budget(*engine, 0), Error::Ok);
  const size_t streaming = engine->device_memory_size();
  // A user-managed context (the backend's per-profile contexts, its probes) freezes the budget as well.
  std::unique_ptr<ExecutionContext> context = new_context(*engine, ContextOptions{/*user_managed_memory=*/true});
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  EXPECT_EQ(engine->set_weight_streaming_budget(kLlmStreamable, why), Error::InvalidArgument);
  EXPECT_TRUE(has(why.c_str(), "has 1 execution context(s)")) << why.c_str();
  EXPECT_EQ(engine->weight_streaming_budget(), 0);
  EXPECT_EQ(engine->device_memory_size(), streaming);
}

}  // namespace
}  // namespace etrt::gpufree::testing
