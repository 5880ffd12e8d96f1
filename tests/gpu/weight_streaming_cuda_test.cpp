// Weight streaming in CUDA mode, through the adapter: TensorRT's "If the Engine is streaming weights, enqueueV3 will
// become synchronous, and the graph will not be capturable." A streaming engine's enqueue returns with its stream's
// work done, and refuses a capturing stream even once its deferred work is done; the same engine with every weight
// resident does neither. (The memory rules, which host mode shares: tests/engine/weight_streaming_test.cpp.)

#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/tensorrt/tensorrt_engine.h"
#include "etrt_gpufree/builder.h"

namespace {

using etrt::Diagnostic;
using etrt::Error;
using etrt::engine::Engine;
using etrt::engine::ExecutionContext;

constexpr int64_t kStreamable = 64;  // W, a [4, 4] float32 constant

// x [1, 4] -> y = x W, W = 3 I, in CUDA mode with streamable weights, under `budget`.
std::unique_ptr<Engine> streaming_engine(const std::string& label, int64_t budget) {
  etrt::gpufree::Builder b(label);
  std::vector<float> w(16, 0.0f);
  for (size_t i = 0; i < 4; ++i) w[i * 4 + i] = 3.0f;
  b.add_input("x", etrt::gpufree::DataType::kFloat32, etrt::make_shape({1, 4}))
      .add_output("y", etrt::gpufree::DataType::kFloat32, etrt::make_shape({1, 4}))
      .add_constant("w", etrt::make_shape({4, 4}), w)
      .matmul("x", "w", "y")
      .enable_weight_streaming()
      .set_memory_kind(etrt::gpufree::MemoryKind::kDevice);
  std::string error;
  const std::vector<uint8_t> bytes = b.build(&error);
  EXPECT_FALSE(bytes.empty()) << error;
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  EXPECT_EQ(etrt::engine::tensorrt::deserialize(bytes.data(), bytes.size(), 0, &engine, why), Error::Ok) << why.c_str();
  if (engine == nullptr) return engine;
  EXPECT_EQ(engine->streamable_weights_size(), kStreamable);
  EXPECT_EQ(engine->set_weight_streaming_budget(budget, why), Error::Ok) << why.c_str();
  return engine;
}

// A context of `engine` with x and y bound to device memory (x = [1, 2, 3, 4]), and a non-blocking stream.
class Bound {
 public:
  explicit Bound(Engine& engine) {
    const float x[4] = {1, 2, 3, 4};
    Diagnostic why;
    ok_ = cudaMalloc(&x_, sizeof(x)) == cudaSuccess && cudaMalloc(&y_, sizeof(x)) == cudaSuccess &&
          cudaMemcpy(x_, x, sizeof(x), cudaMemcpyHostToDevice) == cudaSuccess &&
          cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess &&
          engine.create_context({}, &context_, why) == Error::Ok &&
          context_->set_tensor_address(0, x_, why) == Error::Ok &&
          context_->set_tensor_address(1, y_, why) == Error::Ok;
    EXPECT_TRUE(ok_) << why.c_str();
  }
  ~Bound() {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    context_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaFree(x_);
    cudaFree(y_);
  }
  Bound(const Bound&) = delete;
  Bound& operator=(const Bound&) = delete;

  bool ok() const { return ok_; }
  ExecutionContext& context() { return *context_; }
  cudaStream_t stream() const { return stream_; }

  std::vector<float> y() const {
    std::vector<float> out(4, 0.0f);
    EXPECT_EQ(cudaMemcpy(out.data(), y_, 4 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

  // Enqueues while `stream` captures a graph; the enqueue's status, and the capture's own.
  Error captured_enqueue(Diagnostic& why, cudaError_t* ended) {
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const Error enqueued = context_->enqueue(stream_, why);
    *ended = cudaStreamEndCapture(stream_, &graph);
    (void)cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    return enqueued;
  }

 private:
  bool ok_ = false;
  void* x_ = nullptr;
  void* y_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<ExecutionContext> context_;
};

const std::vector<float> kWant = {3, 6, 9, 12};

TEST(WeightStreamingCuda, StreamingEngineRefusesACapturingStreamEvenAfterAPlainEnqueue) {
  std::unique_ptr<Engine> engine = streaming_engine("ws_cuda_capture", 0);
  ASSERT_NE(engine, nullptr);
  Bound bound(*engine);
  ASSERT_TRUE(bound.ok());
  Diagnostic why;
  // The plain enqueue does the deferred work, after which a resident engine could be captured (below).
  ASSERT_EQ(bound.context().enqueue(bound.stream(), why), Error::Ok) << why.c_str();
  EXPECT_EQ(bound.y(), kWant);
  cudaError_t ended = cudaSuccess;
  EXPECT_EQ(bound.captured_enqueue(why, &ended), Error::Internal);
  EXPECT_NE(std::string(why.c_str())
                .find("streams its weights (budget 0 of 64 streamable bytes), which makes "
                      "enqueueV3 synchronous and uncapturable"),
            std::string::npos)
      << why.c_str();
  // And it still runs plainly.
  ASSERT_EQ(bound.context().enqueue(bound.stream(), why), Error::Ok) << why.c_str();
  EXPECT_EQ(bound.y(), kWant);
}

TEST(WeightStreamingCuda, ResidentEngineCapturesAfterAPlainEnqueue) {
  std::unique_ptr<Engine> engine = streaming_engine("ws_cuda_resident_capture", kStreamable);
  ASSERT_NE(engine, nullptr);
  Bound bound(*engine);
  ASSERT_TRUE(bound.ok());
  Diagnostic why;
  ASSERT_EQ(bound.context().enqueue(bound.stream(), why), Error::Ok) << why.c_str();
  ASSERT_EQ(cudaStreamSynchronize(bound.stream()), cudaSuccess);
  cudaError_t ended = cudaErrorUnknown;
  EXPECT_EQ(bound.captured_enqueue(why, &ended), Error::Ok) << why.c_str();
  EXPECT_EQ(ended, cudaSuccess);
}

// Holds the stream for `ms` milliseconds, on the host, ahead of what is enqueued after it.
void hold(cudaStream_t stream, intptr_t ms) {
  ASSERT_EQ(cudaLaunchHostFunc(
                stream,
                [](void* p) { std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(p))); },
                reinterpret_cast<void*>(ms)),
            cudaSuccess);
}

TEST(WeightStreamingCuda, StreamingEnqueueReturnsWithItsStreamDone) {
  std::unique_ptr<Engine> engine = streaming_engine("ws_cuda_sync", 16);
  ASSERT_NE(engine, nullptr);
  Bound bound(*engine);
  ASSERT_TRUE(bound.ok());
  Diagnostic why;
  hold(bound.stream(), 300);
  ASSERT_EQ(bound.context().enqueue(bound.stream(), why), Error::Ok) << why.c_str();
  // The host waited: for the held work ahead of the enqueue, and for the enqueue's own.
  EXPECT_EQ(cudaStreamQuery(bound.stream()), cudaSuccess);
  EXPECT_EQ(bound.y(), kWant);
}

TEST(WeightStreamingCuda, ResidentEnqueueReturnsWithItsWorkStillQueued) {
  std::unique_ptr<Engine> engine = streaming_engine("ws_cuda_async", kStreamable);
  ASSERT_NE(engine, nullptr);
  Bound bound(*engine);
  ASSERT_TRUE(bound.ok());
  Diagnostic why;
  hold(bound.stream(), 300);
  ASSERT_EQ(bound.context().enqueue(bound.stream(), why), Error::Ok) << why.c_str();
  EXPECT_EQ(cudaStreamQuery(bound.stream()), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(bound.stream()), cudaSuccess);
  EXPECT_EQ(bound.y(), kWant);
}

}  // namespace
