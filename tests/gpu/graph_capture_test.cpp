// The GPU-free CUDA mode holds a capturer to TensorRT's rule: the first enqueue after a shape change does
// deferred work and cannot be captured; after a plain enqueue it can.

#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/tensorrt/tensorrt_engine.h"
#include "etrt_gpufree/builder.h"

namespace {

// The engine itself: the first enqueue after a shape change cannot be captured; after a plain one it can.
TEST(GraphCudaEngine, FirstEnqueueAfterAShapeChangeRefusesCaptureAndTheNextCaptures) {
  etrt::gpufree::Builder b("graph_capture_rule");
  b.add_input("x", etrt::gpufree::DataType::kFloat32, etrt::make_shape({1, -1}))
      .add_output("y", etrt::gpufree::DataType::kFloat32, etrt::make_shape({1, -1}))
      .scale("x", 2.0f, "y")
      .set_memory_kind(etrt::gpufree::MemoryKind::kDevice);
  b.set_profile_shape(b.add_profile(), "x", etrt::make_shape({1, 1}), etrt::make_shape({1, 4}),
                      etrt::make_shape({1, 8}));
  std::string error;
  const std::vector<uint8_t> bytes = b.build(&error);
  ASSERT_FALSE(bytes.empty()) << error;
  auto engine = etrt::engine::tensorrt::deserialize(bytes.data(), bytes.size(), 0, &error);
  ASSERT_NE(engine, nullptr) << error;
  auto context = engine->create_context({});
  ASSERT_NE(context, nullptr) << engine->last_error();
  void *x = nullptr, *y = nullptr;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaMalloc(&x, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&y, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(x, 0, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_TRUE(context->set_input_shape(0, etrt::make_shape({1, 4})));
  ASSERT_TRUE(context->set_tensor_address(0, x) && context->set_tensor_address(1, y));

  auto capture = [&](bool* enqueued) {
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    *enqueued = context->enqueue(stream);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    (void)cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    return ended;
  };
  bool enqueued = true;
  (void)capture(&enqueued);
  EXPECT_FALSE(enqueued);
  EXPECT_NE(std::string(context->last_error()).find("first enqueue since the input shapes or the optimization profile "
                                                    "changed"),
            std::string::npos)
      << context->last_error();
  ASSERT_TRUE(context->enqueue(stream)) << context->last_error();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(capture(&enqueued), cudaSuccess);
  EXPECT_TRUE(enqueued) << context->last_error();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  context.reset();
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(y);
}

}  // namespace
