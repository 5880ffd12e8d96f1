// The bytes etrt copies on CUDA-mode engines (etrt/options.h kCounter*Bytes, etrt::ExecutionRecord), through Module
// on llm_unplanned, whose IO is the runner's own memory: host memory is staged (host to device in, device to host
// back), device memory is bound in place and moves nothing, misaligned device memory is staged on the device
// (realigned). The report and the process-wide counters (C ABI) agree. Both profile strategies.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "etrt/c_api.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "gpu_module_util.h"

namespace etrt::gpu_test {
namespace {

constexpr int64_t kMaxTokens = 2048;  // llm_unplanned's planned upper bound
constexpr int64_t kH = etrt::fixtures::kHidden;

struct Bytes {
  int64_t host_to_device = 0, device_to_host = 0, realigned = 0, write_back = 0;
  bool operator==(const Bytes& o) const {
    return host_to_device == o.host_to_device && device_to_host == o.device_to_host && realigned == o.realigned &&
           write_back == o.write_back;
  }
};
std::ostream& operator<<(std::ostream& os, const Bytes& b) {
  return os << "{host_to_device " << b.host_to_device << ", device_to_host " << b.device_to_host << ", realigned "
            << b.realigned << ", write_back " << b.write_back << "}";
}

Bytes counters() {
  Bytes b;
  EXPECT_EQ(etrt_counter(kCounterHostToDeviceBytes, &b.host_to_device), ETRT_OK);
  EXPECT_EQ(etrt_counter(kCounterDeviceToHostBytes, &b.device_to_host), ETRT_OK);
  EXPECT_EQ(etrt_counter(kCounterRealignedBytes, &b.realigned), ETRT_OK);
  EXPECT_EQ(etrt_counter(kCounterWriteBackBytes, &b.write_back), ETRT_OK);
  return b;
}

// Runs `n` ids at `ids` into `logits` (room for kMaxTokens rows), each in host or device memory, under the prefill
// profile; returns what the execution's record says it copied, and checks the counters moved by as much.
Bytes run(Module& module, void* ids, int64_t n, void* logits) {
  etrt::OptimizationProfileGuard guard(n == 1 ? kDecode : kPrefill);
  EXPECT_EQ(module.set_output(
                from_blob(logits, {1, static_cast<int32_t>(kMaxTokens), static_cast<int32_t>(kH)}, ScalarType::Float)),
            et::Error::Ok);
  const Bytes before = counters();
  ExecutionReport report;
  const auto result = module.forward(from_blob(ids, {1, static_cast<int32_t>(n)}, ScalarType::Long));
  EXPECT_TRUE(result.ok()) << etrt::last_error_message();
  EXPECT_EQ(report.entries().size(), 1u);
  if (report.entries().size() != 1) return {};
  const ExecutionRecord& r = report.entries()[0];
  const Bytes recorded{r.host_to_device_bytes, r.device_to_host_bytes, r.realigned_bytes, r.write_back_bytes};
  const Bytes after = counters();
  EXPECT_EQ((Bytes{after.host_to_device - before.host_to_device, after.device_to_host - before.device_to_host,
                   after.realigned - before.realigned, after.write_back - before.write_back}),
            recorded)
      << "the counters moved by what the record says";
  return recorded;
}

using CudaBytes = CudaModule;

TEST_P(CudaBytes, HostInputsMoveTheirBytesToTheDeviceAndHostOutputsBack) {
  auto module = load("llm_unplanned");
  std::vector<int64_t> ids = token_ids(40);
  std::vector<float> logits(static_cast<size_t>(kMaxTokens * kH));
  EXPECT_EQ(run(*module, ids.data(), 40, logits.data()), (Bytes{40 * 8, 40 * kH * 4, 0, 0}));
  logits.resize(static_cast<size_t>(40 * kH));
  expect_values(logits, ids);
}

TEST_P(CudaBytes, DeviceInputsAndOutputsBoundInPlaceMoveNothing) {
  auto module = load("llm_unplanned");
  const std::vector<int64_t> ids = token_ids(40);
  DeviceMemory device_ids(ids.size() * sizeof(int64_t));
  upload(device_ids, ids);
  DeviceMemory logits(static_cast<size_t>(kMaxTokens * kH) * sizeof(float));
  EXPECT_EQ(run(*module, device_ids.data(), 40, logits.data()), Bytes{});
  EXPECT_EQ(run(*module, device_ids.data(), 40, logits.data()), Bytes{}) << "the repeat fast path";
  ETRT_CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  expect_values(download<float>(logits.data(), static_cast<size_t>(40 * kH)), ids);
}

TEST_P(CudaBytes, MisalignedDeviceMemoryIsRealignedOnTheDeviceNotCountedAsHostTraffic) {
  auto module = load("llm_unplanned");
  const std::vector<int64_t> ids = token_ids(40);
  DeviceMemory memory(ids.size() * sizeof(int64_t) + 256);
  auto* misaligned = reinterpret_cast<int64_t*>(memory.as<char>() + 16);  // ExecuTorch's planner aligns to 16
  ETRT_CUDA_OK(cudaMemcpy(misaligned, ids.data(), ids.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  DeviceMemory logits(static_cast<size_t>(kMaxTokens * kH) * sizeof(float));
  EXPECT_EQ(run(*module, misaligned, 40, logits.data()), (Bytes{0, 0, 40 * 8, 0}));
  ETRT_CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  expect_values(download<float>(logits.data(), static_cast<size_t>(40 * kH)), ids);
}

INSTANTIATE_TEST_SUITE_P(Strategies, CudaBytes, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

}  // namespace
}  // namespace etrt::gpu_test
