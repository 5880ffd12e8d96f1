// The GPU-free CUDA mode holds a capturer to TensorRT's rule: the first enqueue after a shape change does
// deferred work and cannot be captured; after a plain enqueue it can.

#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/tensorrt/tensorrt_engine.h"
#include "etrt_gpufree/builder.h"

namespace {

// The engine itself: the first enqueue after a shape change cannot be captured; after a plain one it can.
TEST(GraphCudaEngine, FirstEnqueueAfterAShapeChangeRefusesCaptureAndTheNextCaptures) {
  etrt::gpufree::Builder b("graph_capture_rule");
  b.add_input("x", etrt::gpufree::DataType::kFloat32, etrt::gpufree::make_shape({1, -1}))
      .add_output("y", etrt::gpufree::DataType::kFloat32, etrt::gpufree::make_shape({1, -1}))
      .scale("x", 2.0f, "y")
      .set_memory_kind(etrt::gpufree::MemoryKind::kDevice);
  b.set_profile_shape(b.add_profile(), "x", etrt::gpufree::make_shape({1, 1}), etrt::gpufree::make_shape({1, 4}),
                      etrt::gpufree::make_shape({1, 8}));
  std::string error;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(b.build(&bytes, &error)) << error;
  etrt::Diagnostic why;
  std::unique_ptr<etrt::engine::Engine> engine;
  ASSERT_EQ(etrt::engine::tensorrt::deserialize(bytes.data(), bytes.size(), 0, &engine, why), etrt::Error::Ok)
      << why.c_str();
  std::unique_ptr<etrt::engine::ExecutionContext> context;
  ASSERT_EQ(engine->create_context({}, &context, why), etrt::Error::Ok) << why.c_str();
  void *x = nullptr, *y = nullptr;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaMalloc(&x, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&y, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(x, 0, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(context->set_input_shape(0, etrt::make_shape({1, 4}), why), etrt::Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(0, x, why), etrt::Error::Ok) << why.c_str();
  ASSERT_EQ(context->set_tensor_address(1, y, why), etrt::Error::Ok) << why.c_str();

  auto capture = [&](etrt::Error* enqueued) {
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    *enqueued = context->enqueue(stream, why);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    (void)cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    return ended;
  };
  etrt::Error enqueued = etrt::Error::Ok;
  (void)capture(&enqueued);
  EXPECT_EQ(enqueued, etrt::Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_NE(std::string(why.c_str()).find("first enqueue since the input shapes or the optimization profile changed"),
            std::string::npos)
      << why.c_str();
  ASSERT_EQ(context->enqueue(stream, why), etrt::Error::Ok) << why.c_str();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(capture(&enqueued), cudaSuccess);
  EXPECT_EQ(enqueued, etrt::Error::Ok) << why.c_str();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  context.reset();
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(y);
}

}  // namespace
