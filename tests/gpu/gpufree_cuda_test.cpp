// The GPU-free NvInfer's CUDA mode, engine-level: the same model computes the
// same values as in host mode, with kernels on the given stream over device
// memory; the trace and the contract's refusals read the same in both modes;
// and the checks only device memory needs (host pointers, another device,
// a switch still running on another stream) refuse with a message.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "format.h"
#include "gpu_test_util.h"
#include "gpufree_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

using gpu_test::busy;
using gpu_test::DeviceMemory;
using gpu_test::download;
using gpu_test::spin;
using gpu_test::Stream;
using gpu_test::upload;

std::unique_ptr<Engine> load_cuda_llm(const std::string& label) {
  Builder b = llm_builder(label);
  b.set_memory_kind(MemoryKind::kDevice);
  return load(build_or_fail(b));
}

// expected_logits over a plain vector (device IO tests upload from one).
std::vector<float> expected(const std::vector<int64_t>& ids) {
  const AlignedVector<float> logits = expected_logits(AlignedVector<int64_t>(ids.begin(), ids.end()));
  return std::vector<float>(logits.begin(), logits.end());
}

// ids and logits in device memory, room for the longest prefill.
struct DeviceIo {
  DeviceMemory ids{kMaxPrefill * sizeof(int64_t)};
  DeviceMemory logits{kMaxPrefill * kLogits * sizeof(float)};
};

// Uploads `ids`, sets their shape and both addresses, then enqueues on `stream`: the first failing call's code, its
// reason in `why`.
Error run_on_device(ExecutionContext& context, DeviceIo& io, const std::vector<int64_t>& ids, cudaStream_t stream,
                    Diagnostic& why) {
  EXPECT_EQ(cudaMemcpy(io.ids.data(), ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice), cudaSuccess);
  Error error = context.set_input_shape(0, make_shape({int64_t{1}, static_cast<int64_t>(ids.size())}), why);
  if (error == Error::Ok) error = context.set_tensor_address(0, io.ids.data(), why);
  if (error == Error::Ok) error = context.set_tensor_address(1, io.logits.data(), why);
  if (error == Error::Ok) error = context.enqueue(stream, why);
  return error;
}

class GpufreeCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    label_ = test_label();
    engine_ = load_cuda_llm(label_);
    ASSERT_NE(engine_, nullptr);
    context_ = new_context(*engine_);
    ASSERT_NE(context_, nullptr);
  }
  void TearDown() override {
    context_.reset();
    engine_.reset();
    clear_trace(label_);
  }

  // The last event is a failed `kind` saying `message`.
  void expect_refusal(TraceKind kind, const char* message) {
    const std::vector<TraceEvent> events = trace_events(label_);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().kind, kind) << to_string(events.back());
    EXPECT_FALSE(events.back().ok);
    // The adapter's message is "<NvInfer call> failed: " followed by the implementation's own reason.
    EXPECT_NE(std::string(message).find(events.back().error), std::string::npos) << message;
  }

  std::string label_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  Diagnostic why_;  // the reason of the test's latest failed call
  Stream stream_;
  DeviceIo io_;
};

TEST_F(GpufreeCuda, ACudaModeEngineSaysItRunsInDeviceMemory) {
  EXPECT_EQ(engine_->memory_kind(), engine::MemoryKind::kDevice);
  EXPECT_EQ(load_llm(label_ + ".host")->memory_kind(), engine::MemoryKind::kHost);
}

TEST_F(GpufreeCuda, ItComputesWhatTheHostModeComputesOnTheGivenStream) {
  const std::vector<int64_t> ids = {0, 5, 2, 3};
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream_.get(), why_), Error::Ok) << why_.c_str();
  spin(stream_, 20);  // the enqueue's kernels queue behind this: they run on the stream, not now
  ASSERT_EQ(run_on_device(*context_, io_, ids, stream_, why_), Error::Ok) << why_.c_str();
  EXPECT_STILL_BUSY(stream_, "the enqueue must not wait for its kernels");
  ETRT_CUDA_OK(cudaStreamSynchronize(stream_));
  EXPECT_EQ(download<float>(io_.logits.data(), ids.size() * kLogits), expected(ids));
  std::vector<TraceEvent> enqueues = events_of(label_, TraceKind::kEnqueue);
  ASSERT_EQ(enqueues.size(), 1u);
  EXPECT_EQ(enqueues[0].stream, static_cast<StreamHandle>(stream_.get()));
  EXPECT_EQ(enqueues[0].profile, kPrefill);
}

TEST_F(GpufreeCuda, EveryOpMatchesTheHostMode) {
  // add of two tensors, add of a bias, scale, identity, matmul: one engine per mode, same inputs.
  auto build = [](const std::string& label, MemoryKind kind) {
    Builder b(label);
    b.add_input("a", DataType::kFloat32, make_shape({2, 3}))
        .add_input("b", DataType::kFloat32, make_shape({2, 3}))
        .add_output("sum", DataType::kFloat32, make_shape({2, 3}))
        .add_output("copy", DataType::kFloat32, make_shape({2, 3}))
        .add_output("out", DataType::kFloat32, make_shape({2, 2}))
        .add_constant("bias", make_shape({3}), {1.0f, 2.0f, 3.0f})
        .add_constant("w", make_shape({3, 2}), {1, 2, 3, 4, 5, 6})
        .add("a", "b", "sum")
        .identity("sum", "copy")
        .add("sum", "bias", "biased")
        .scale("biased", -0.5f, "scaled")
        .matmul("scaled", "w", "out")
        .set_memory_kind(kind);
    return load(build_or_fail(b));
  };
  // Binds the five IO tensors in order, sets both inputs' shapes and enqueues: the first failing call's code.
  auto run = [](ExecutionContext& context, void* const* io, StreamHandle stream, Diagnostic& why) {
    Error error = Error::Ok;
    for (int32_t i = 0; i < 5 && error == Error::Ok; ++i) error = context.set_tensor_address(i, io[i], why);
    for (int32_t i = 0; i < 2 && error == Error::Ok; ++i) error = context.set_input_shape(i, make_shape({2, 3}), why);
    return error == Error::Ok ? context.enqueue(stream, why) : error;
  };
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {0.5f, 0, -1, 2, 7, -3};
  // Host mode.
  auto host = build(label_ + ".host", MemoryKind::kHost);
  auto host_context = new_context(*host);
  ASSERT_NE(host_context, nullptr);
  // Host mode binds host memory, held to TensorRT's 256-byte I/O alignment like device memory.
  AlignedVector<float> a_host(a.begin(), a.end()), b_host(b.begin(), b.end()), sum(6), copy(6), out(4);
  void* const host_io[] = {a_host.data(), b_host.data(), sum.data(), copy.data(), out.data()};
  ASSERT_EQ(run(*host_context, host_io, nullptr, why_), Error::Ok) << why_.c_str();
  // CUDA mode.
  auto cuda = build(label_ + ".cuda", MemoryKind::kDevice);
  auto cuda_context = new_context(*cuda);
  ASSERT_NE(cuda_context, nullptr);
  DeviceMemory da(24), db(24), dsum(24), dcopy(24), dout(16);
  upload(da, a);
  upload(db, b);
  void* const cuda_io[] = {da.data(), db.data(), dsum.data(), dcopy.data(), dout.data()};
  ASSERT_EQ(run(*cuda_context, cuda_io, stream_.get(), why_), Error::Ok) << why_.c_str();
  ETRT_CUDA_OK(cudaStreamSynchronize(stream_));
  auto plain = [](const AlignedVector<float>& v) { return std::vector<float>(v.begin(), v.end()); };
  EXPECT_EQ(download<float>(dsum.data(), 6), plain(sum));
  EXPECT_EQ(download<float>(dcopy.data(), 6), plain(copy));
  EXPECT_EQ(download<float>(dout.data(), 4), plain(out));
  cuda_context.reset();
  host_context.reset();
  clear_trace(label_ + ".host");
  clear_trace(label_ + ".cuda");
}

// As TensorRT's gather does (seen on 8.6, tests/contract) and host mode does: an id outside the table gathers a zero
// row, so both out-of-range ids give the model's output for a zero embedding, finite and equal.
TEST_F(GpufreeCuda, AnIdOutsideTheVocabularyGathersAZeroRowInsteadOfFailingTheEnqueue) {
  const std::vector<int64_t> ids = {1, 99, -5};
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream_.get(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(run_on_device(*context_, io_, ids, stream_, why_), Error::Ok) << why_.c_str();
  ETRT_CUDA_OK(cudaStreamSynchronize(stream_));
  const std::vector<float> logits = download<float>(io_.logits.data(), 3 * kLogits);
  EXPECT_EQ(logits[0], expected_logits({1})[0]);
  for (size_t i = kLogits; i < 2 * kLogits; ++i) {
    EXPECT_TRUE(std::isfinite(logits[i])) << i;
    EXPECT_EQ(logits[i], logits[i + kLogits]) << i;
  }
}

TEST_F(GpufreeCuda, HostMemoryBoundToACudaModeEngineIsRefusedAtEnqueue) {
  AlignedVector<int64_t> ids = {1};  // aligned, so it is the enqueue that refuses host memory
  AlignedVector<float> logits(kLogits);
  ASSERT_EQ(context_->set_input_shape(0, make_shape({1, 1}), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(0, ids.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(1, io_.logits.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(stream_.get(), why_), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "'ids' is bound to host memory, but this is a CUDA-mode engine")) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(0, io_.ids.data(), why_), Error::Ok) << why_.c_str();
  ASSERT_EQ(context_->set_tensor_address(1, logits.data(), why_), Error::Ok) << why_.c_str();
  EXPECT_EQ(context_->enqueue(stream_.get(), why_), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "'logits' is bound to host memory")) << why_.c_str();
  EXPECT_EQ(trace_counters(label_).enqueues, 0);
}

// TensorRT's rule "switch and enqueue share a stream (or are synchronized)" cannot be checked on the host once an
// enqueue's stream may wait for the switch's on the device; in CUDA mode the device checks it.
TEST_F(GpufreeCuda, AnEnqueueOnAnotherStreamOrderedAfterTheSwitchIsAccepted) {
  Stream other;
  cudaEvent_t switched = nullptr;
  ETRT_CUDA_OK(cudaEventCreateWithFlags(&switched, cudaEventDisableTiming));
  spin(stream_, 100);
  // Queued behind the spin.
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream_.get(), why_), Error::Ok) << why_.c_str();
  ETRT_CUDA_OK(cudaEventRecord(switched, stream_));
  ETRT_CUDA_OK(cudaStreamWaitEvent(other, switched, 0));
  const std::vector<int64_t> ids = {1, 2};
  ASSERT_EQ(run_on_device(*context_, io_, ids, other, why_), Error::Ok) << why_.c_str();
  ETRT_CUDA_OK(cudaStreamSynchronize(other));
  EXPECT_EQ(download<float>(io_.logits.data(), ids.size() * kLogits), expected(ids));
  ASSERT_EQ(run_on_device(*context_, io_, ids, other, why_), Error::Ok) << why_.c_str();
  ETRT_CUDA_OK(cudaStreamSynchronize(other));
  EXPECT_EQ(trace_counters(label_).failures, 0) << dump(label_);
  ETRT_CUDA_OK(cudaEventDestroy(switched));
}

TEST_F(GpufreeCuda, AnEnqueueOnAnotherStreamNotOrderedAfterTheSwitchIsCaughtOnTheDevice) {
  Stream other;
  spin(stream_, 200);
  // Queued behind the spin.
  ASSERT_EQ(context_->set_optimization_profile(kPrefill, stream_.get(), why_), Error::Ok) << why_.c_str();
  const std::vector<int64_t> ids = {1, 2};
  ASSERT_EQ(run_on_device(*context_, io_, ids, other, why_), Error::Ok) << "the host cannot know yet: " << why_.c_str();
  ETRT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(run_on_device(*context_, io_, ids, other, why_), Error::Internal) << "TensorRT reports kFAILED_EXECUTION";
  EXPECT_TRUE(has(why_.c_str(), "ran on the device before the profile switch issued ahead of it")) << why_.c_str();
  expect_refusal(TraceKind::kEnqueue, why_.c_str());
  EXPECT_EQ(run_on_device(*context_, io_, ids, other, why_), Error::Ok) << "reported once: " << why_.c_str();
  ETRT_CUDA_OK(cudaStreamSynchronize(other));
}

TEST_F(GpufreeCuda, DestroyingAContextWithWorkStillRunningIsRecordedAndWaitedFor) {
  const std::vector<int64_t> ids = {3};
  spin(stream_, 200);
  ASSERT_EQ(run_on_device(*context_, io_, ids, stream_, why_), Error::Ok) << why_.c_str();
  context_.reset();
  EXPECT_FALSE(busy(stream_)) << "destruction waited for the context's work";
  const std::vector<TraceEvent> destroyed = events_of(label_, TraceKind::kDestroyContext);
  ASSERT_EQ(destroyed.size(), 1u);
  EXPECT_FALSE(destroyed[0].ok);
  EXPECT_NE(destroyed[0].error.find("destroyed while its work was still running on the device"), std::string::npos)
      << destroyed[0].error;
  EXPECT_EQ(download<float>(io_.logits.data(), kLogits), expected(ids));
}

TEST_F(GpufreeCuda, UserManagedDeviceScratchIsAcceptedAndTooLittleIsRefusedAsInHostMode) {
  auto shared = new_context(*engine_, {/*user_managed_memory=*/true});
  ASSERT_NE(shared, nullptr);
  ASSERT_GT(engine_->device_memory_size(), 0u);
  DeviceMemory scratch(engine_->device_memory_size());
  EXPECT_EQ(shared->set_device_memory(scratch.data(), engine_->device_memory_size() - 1, why_), Error::InvalidArgument);
  EXPECT_TRUE(has(why_.c_str(), "needs " + std::to_string(engine_->device_memory_size()) + " bytes")) << why_.c_str();
  ASSERT_EQ(shared->set_device_memory(scratch.data(), scratch.size(), why_), Error::Ok) << why_.c_str();
  // The engine shares profiles (TensorRT 10's rules, the Builder's default): created while context_ holds profile 0,
  // `shared` starts on it too (an 8.6 engine would give it none).
  EXPECT_EQ(shared->optimization_profile(), 0);
  context_.reset();
  ASSERT_EQ(shared->set_optimization_profile(0, stream_.get(), why_), Error::Ok) << why_.c_str();
  const std::vector<int64_t> ids = {4};
  ASSERT_EQ(run_on_device(*shared, io_, ids, stream_, why_), Error::Ok) << why_.c_str();
  ETRT_CUDA_OK(cudaStreamSynchronize(stream_));
  EXPECT_EQ(download<float>(io_.logits.data(), kLogits), expected(ids));
}

// The same calls, refused ones included, on a host-mode and a CUDA-mode engine: the trace records the same
// events with the same outcomes and the same words (the label aside).
TEST_F(GpufreeCuda, TheTraceOfTheSameCallsIsTheSameInBothModes) {
  auto sequence = [](const std::string& label, MemoryKind kind, void* ids, void* logits, StreamHandle stream) {
    clear_trace(label);
    Builder b = llm_builder(label);
    b.set_memory_kind(kind);
    auto engine = load(build_or_fail(b));
    auto context = new_context(*engine);
    // The outcomes are compared through the trace, not here.
    Diagnostic why;
    (void)context->set_optimization_profile(7, stream, why);                    // out of range
    (void)context->set_input_shape(0, make_shape({1, 3}), why);                 // outside decode's [1, 1]
    (void)context->enqueue(stream, why);                                        // no shape, no addresses
    (void)context->set_optimization_profile(kPrefill, stream, why);             // ok
    (void)context->set_input_shape(0, make_shape({1, 3}), why);                 // ok
    (void)context->set_tensor_address(0, ids, why);                             // ok
    (void)context->enqueue(stream, why);                                        // logits has no address
    (void)context->set_tensor_address(1, logits, why);                          // ok
    (void)context->enqueue(stream, why);                                        // ok
    (void)context->set_tensor_address(1, static_cast<char*>(logits) + 1, why);  // misaligned
    if (kind == MemoryKind::kDevice) {
      EXPECT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), cudaSuccess);
    }
    context.reset();
    engine.reset();
    std::vector<TraceEvent> events = trace_events(label);
    clear_trace(label);
    return events;
  };
  AlignedVector<int64_t> host_ids = {1, 2, 3};  // TensorRT's 256-byte I/O alignment, in host mode too
  AlignedVector<float> host_logits(3 * kLogits);
  const std::vector<int64_t> ids = {1, 2, 3};
  upload(io_.ids, ids);
  const auto host = sequence(label_ + "#mode", MemoryKind::kHost, host_ids.data(), host_logits.data(), nullptr);
  const auto cuda = sequence(label_ + "#mode", MemoryKind::kDevice, io_.ids.data(), io_.logits.data(), stream_.get());
  ETRT_CUDA_OK(cudaStreamSynchronize(stream_));
  ASSERT_EQ(host.size(), cuda.size());
  for (size_t i = 0; i < host.size(); ++i) {
    EXPECT_EQ(host[i].kind, cuda[i].kind) << to_string(host[i]) << " vs " << to_string(cuda[i]);
    EXPECT_EQ(host[i].ok, cuda[i].ok) << to_string(host[i]) << " vs " << to_string(cuda[i]);
    EXPECT_EQ(host[i].error, cuda[i].error);
    EXPECT_EQ(host[i].profile, cuda[i].profile);
    EXPECT_EQ(host[i].input_shapes, cuda[i].input_shapes);
  }
  EXPECT_EQ(download<float>(io_.logits.data(), 3 * kLogits),
            std::vector<float>(host_logits.begin(), host_logits.end()));
}

TEST_F(GpufreeCuda, TheFormatKeepsTheMode) {
  Builder b = llm_builder(label_ + ".bytes");
  b.set_memory_kind(MemoryKind::kDevice);
  const std::vector<uint8_t> bytes = build_or_fail(b);
  ASSERT_TRUE(is_gpufree_engine(bytes.data(), bytes.size()));
  EXPECT_EQ(load(bytes)->memory_kind(), engine::MemoryKind::kDevice);
}

TEST_F(GpufreeCuda, ContextsOnAnotherDeviceThanTheWeightsAreRefused) {
  if (gpu_test::device_count() < 2) GTEST_SKIP() << "needs two GPUs (nvidia-h200-x2)";
  ETRT_CUDA_OK(cudaSetDevice(1));
  std::unique_ptr<ExecutionContext> other;
  EXPECT_EQ(engine_->create_context({}, &other, why_), Error::Internal);
  EXPECT_EQ(other, nullptr);
  EXPECT_TRUE(has(why_.c_str(), "holds its weights on CUDA device 0, but device 1 is current")) << why_.c_str();
  const std::vector<int64_t> ids = {1};
  EXPECT_EQ(run_on_device(*context_, io_, ids, cudaStreamPerThread, why_), Error::Internal);
  EXPECT_TRUE(has(why_.c_str(), "holds its weights on CUDA device 0, but device 1 is current")) << why_.c_str();
  ETRT_CUDA_OK(cudaSetDevice(0));
}

}  // namespace
}  // namespace etrt::gpufree::testing
