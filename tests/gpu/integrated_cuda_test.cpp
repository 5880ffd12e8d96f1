// The integrated-GPU path (src/backend/policy/binding_policy.h, docs/design.md "Integrated GPUs") on the GPU the suite
// runs on, made to report itself integrated to libetrt (integrated_device.h: cudaDeviceGetAttribute interposed, nothing
// in libetrt): pinned host memory the device maps at its host address is bound in place -- no staging, 0 bytes
// host to device or back -- while pageable host memory (the simulated device cannot read it) and misaligned pinned
// memory are still staged. The GPU-free NvInfer's CUDA mode refuses an enqueue bound to host memory the device
// cannot address, so binding pageable memory in place by mistake fails these tests. Without the simulation the same
// pinned memory is staged, as on any discrete GPU. Both profile strategies.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "gpu_module_util.h"
#include "integrated_device.h"

namespace etrt::gpu_test {
namespace {

constexpr int64_t kMaxTokens = 2048;  // llm_unplanned's planned upper bound
constexpr int64_t kH = etrt::fixtures::kHidden;
constexpr size_t kLogitsBytes = static_cast<size_t>(kMaxTokens * kH) * sizeof(float);

// Pinned host memory the device maps at the host's address (page-aligned, so 256-byte-aligned).
class PinnedMemory {
 public:
  explicit PinnedMemory(size_t bytes) {
    const cudaError_t status = cudaHostAlloc(&data_, bytes, cudaHostAllocMapped);
    EXPECT_EQ(status, cudaSuccess) << cudaGetErrorString(status);
  }
  ~PinnedMemory() {
    if (data_ != nullptr) (void)cudaFreeHost(data_);
  }
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
  template <typename T>
  T* as(size_t offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(data_) + offset);
  }

 private:
  void* data_ = nullptr;
};

// What one forward of `n` ids at `ids` into `logits` (room for kMaxTokens rows) copied, and the addresses the engine
// was given for them.
struct Bound {
  ExecutionRecord record;
  const void* bound_ids = nullptr;
  const void* bound_logits = nullptr;
};

Bound forward(Module& module, int64_t* ids, int64_t n, float* logits) {
  etrt::OptimizationProfileGuard guard(n == 1 ? kDecode : kPrefill);
  EXPECT_EQ(module.set_output(
                from_blob(logits, {1, static_cast<int32_t>(kMaxTokens), static_cast<int32_t>(kH)}, ScalarType::Float)),
            et::Error::Ok);
  ExecutionReport report;
  const auto result = module.forward(from_blob(ids, {1, static_cast<int32_t>(n)}, ScalarType::Long));
  EXPECT_TRUE(result.ok()) << etrt::last_error_message();
  Bound run;
  if (report.entries().size() == 1) run.record = report.entries()[0];
  for (const auto& e : gpufree::trace_events("llm_unplanned"))
    if (e.kind == gpufree::TraceKind::kSetTensorAddress && e.ok)
      (e.io_index == 0 ? run.bound_ids : run.bound_logits) = e.address;
  return run;
}

void expect_no_copies(const ExecutionRecord& r) {
  EXPECT_EQ(r.host_to_device_bytes, 0);
  EXPECT_EQ(r.device_to_host_bytes, 0);
  EXPECT_EQ(r.realigned_bytes, 0);
}

using IntegratedGpu = CudaModule;

TEST_P(IntegratedGpu, PinnedHostInputAndOutputAreBoundInPlaceAndMoveNoBytes) {
  integrated_device::Simulated integrated;
  const int asked = integrated_device::answered();
  auto module = load("llm_unplanned");
  EXPECT_GT(integrated_device::answered(), asked) << "libetrt asked the device at load";
  const std::vector<int64_t> ids = token_ids(40);
  PinnedMemory in(ids.size() * sizeof(int64_t)), out(kLogitsBytes);
  std::memcpy(in.as<int64_t>(), ids.data(), ids.size() * sizeof(int64_t));
  const Bound run = forward(*module, in.as<int64_t>(), 40, out.as<float>());
  EXPECT_EQ(run.bound_ids, in.as<int64_t>()) << "bound where the host wrote it";
  EXPECT_EQ(run.bound_logits, out.as<float>());
  expect_no_copies(run.record);
  // No synchronization by the test: host memory the engine writes is waited for before forward() returns.
  expect_values(std::vector<float>(out.as<float>(), out.as<float>() + 40 * kH), ids);
}

TEST_P(IntegratedGpu, RepeatedStepsOnPinnedHostMemoryAreReadyWhenForwardReturnsOnTheCallersStream) {
  integrated_device::Simulated integrated;
  auto module = load("llm_unplanned");
  PinnedMemory in(sizeof(int64_t)), out(kLogitsBytes);
  cudaStream_t stream = nullptr;  // no gpu_test_util.cu here: this executable uses libetrt's shared CUDA runtime
  ETRT_CUDA_OK(cudaStreamCreate(&stream));
  etrt::CudaStreamGuard on(stream);
  for (int64_t id : {3, 11, 30}) {  // the second and third repeat the first: straight to the enqueue
    *in.as<int64_t>() = id;
    const Bound run = forward(*module, in.as<int64_t>(), 1, out.as<float>());
    expect_no_copies(run.record);
    expect_values(std::vector<float>(out.as<float>(), out.as<float>() + kH), {id});
  }
  ETRT_CUDA_OK(cudaStreamSynchronize(stream));
  ETRT_CUDA_OK(cudaStreamDestroy(stream));
}

TEST_P(IntegratedGpu, PageableHostMemoryIsStagedWhenTheDeviceCannotReadIt) {
  integrated_device::Simulated integrated;
  auto module = load("llm_unplanned");
  std::vector<int64_t> ids = token_ids(40);
  std::vector<float> logits(static_cast<size_t>(kMaxTokens * kH));
  const Bound run = forward(*module, ids.data(), 40, logits.data());
  EXPECT_EQ(run.record.host_to_device_bytes, 40 * 8);
  EXPECT_EQ(run.record.device_to_host_bytes, 40 * kH * 4);
  EXPECT_NE(run.bound_ids, static_cast<const void*>(ids.data()));
  logits.resize(static_cast<size_t>(40 * kH));
  expect_values(logits, ids);
}

TEST_P(IntegratedGpu, MisalignedPinnedHostMemoryIsStillStaged) {
  integrated_device::Simulated integrated;
  auto module = load("llm_unplanned");
  const std::vector<int64_t> ids = token_ids(40);
  PinnedMemory in(ids.size() * sizeof(int64_t) + 256), out(kLogitsBytes);
  int64_t* misaligned = in.as<int64_t>(16);  // ExecuTorch's planner aligns to 16; TensorRT wants 256
  std::memcpy(misaligned, ids.data(), ids.size() * sizeof(int64_t));
  const Bound run = forward(*module, misaligned, 40, out.as<float>());
  EXPECT_EQ(run.record.host_to_device_bytes, 40 * 8);
  EXPECT_NE(run.bound_ids, static_cast<const void*>(misaligned));
  EXPECT_EQ(run.bound_logits, out.as<float>()) << "the aligned output is still bound in place";
  expect_values(std::vector<float>(out.as<float>(), out.as<float>() + 40 * kH), ids);
}

TEST_P(IntegratedGpu, OnTheDiscreteGpuItIsTheSamePinnedMemoryIsStaged) {
  auto module = load("llm_unplanned");  // no simulation: the device's own answers
  const std::vector<int64_t> ids = token_ids(40);
  PinnedMemory in(ids.size() * sizeof(int64_t)), out(kLogitsBytes);
  std::memcpy(in.as<int64_t>(), ids.data(), ids.size() * sizeof(int64_t));
  const Bound run = forward(*module, in.as<int64_t>(), 40, out.as<float>());
  int integrated = 0;
  ETRT_CUDA_OK(cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, 0));
  if (integrated != 0) GTEST_SKIP() << "this GPU is integrated: nothing discrete to compare with";
  EXPECT_EQ(run.record.host_to_device_bytes, 40 * 8);
  EXPECT_EQ(run.record.device_to_host_bytes, 40 * kH * 4);
  EXPECT_NE(run.bound_ids, static_cast<const void*>(in.as<int64_t>()));
  expect_values(std::vector<float>(out.as<float>(), out.as<float>() + 40 * kH), ids);
}

INSTANTIATE_TEST_SUITE_P(Strategies, IntegratedGpu, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

}  // namespace
}  // namespace etrt::gpu_test
