// The backend's CUDA plumbing, end to end through Module on CUDA-mode fixtures
// whose IO is not memory-planned (llm_unplanned), so the runner's own memory --
// host, pinned or device -- is what the delegate sees: device memory bound in
// place, host memory staged; the caller's stream; calls that return without
// waiting for the device; profile changes while earlier work still runs;
// ordering across streams; destroy with work in flight; a blob naming device 1
// or a device the machine lacks; a host delegate reading a staged output behind
// queued device work. Every case runs under both profile strategies. The cases
// host and CUDA engines share are tests/backend/module_e2e_test.cpp.
//
// Checks that the host did *not* wait (a stream still busy after forward()
// returned) rely on a spinning kernel outlasting a few host calls. Under
// compute-sanitizer, which slows everything, set ETRT_GPU_TESTS_UNDER_SANITIZER=1
// to skip just those checks; everything else, outputs included, still runs.

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "etrt/profile_guard.h"
#include "etrt/stream_guard.h"
#include "gpu_module_util.h"

namespace etrt::gpu_test {
namespace {

constexpr int64_t kMaxTokens = 2048;  // llm_unplanned's planned upper bound
constexpr size_t kLogitsBytes = kMaxTokens * etrt::fixtures::kHidden * sizeof(float);

// Token ids in device memory.
struct DeviceIds {
  explicit DeviceIds(const std::vector<int64_t>& values) : ids(values), memory(values.size() * sizeof(int64_t)) {
    upload(memory, values);
  }
  std::vector<int64_t> ids;
  DeviceMemory memory;
};

// Runs `n` tokens at `ids` (host or device memory) into `logits` (host or device memory, room for kMaxTokens).
et::Error forward(Module& module, void* ids, size_t n, void* logits) {
  auto output = from_blob(logits, {1, static_cast<int32_t>(kMaxTokens), etrt::fixtures::kHidden}, ScalarType::Float);
  const et::Error set = module.set_output(output);
  if (set != et::Error::Ok) return set;
  auto input = from_blob(ids, {1, static_cast<int32_t>(n)}, ScalarType::Long);
  const auto result = module.forward(input);
  return result.ok() ? et::Error::Ok : result.error();
}

// The addresses the engine was given for input_ids (io 0) and logits (io 1) in the last binding.
std::pair<const void*, const void*> bound_addresses(const std::string& label) {
  std::pair<const void*, const void*> out{nullptr, nullptr};
  for (const auto& e : gpufree::trace_events(label)) {
    if (e.kind != gpufree::TraceKind::kSetTensorAddress) continue;
    (e.io_index == 0 ? out.first : out.second) = e.address;
  }
  return out;
}

std::vector<gpufree::TraceEvent> events(const std::string& label, gpufree::TraceKind kind) {
  std::vector<gpufree::TraceEvent> out;
  for (auto& e : gpufree::trace_events(label))
    if (e.kind == kind) out.push_back(e);
  return out;
}

using CudaPath = CudaModule;

// ---- where memory lives ----

TEST_P(CudaPath, DeviceInputAndOutputAreBoundInPlace) {
  auto module = load("llm_unplanned");
  DeviceIds ids(token_ids(37));
  DeviceMemory logits(kLogitsBytes);
  etrt::OptimizationProfileGuard guard(kPrefill);
  ASSERT_EQ(forward(*module, ids.memory.data(), 37, logits.data()), et::Error::Ok) << etrt::last_error_message();
  ETRT_CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  expect_values(download<float>(logits.data(), 37 * etrt::fixtures::kHidden), ids.ids);
  const auto bound = bound_addresses("llm_unplanned");
  EXPECT_EQ(bound.first, ids.memory.data()) << "a device input is bound as it is, not staged";
  EXPECT_EQ(bound.second, logits.data()) << "a device output is bound as it is, not staged";
}

TEST_P(CudaPath, HostInputAndHostOutputAreStagedAndTheOutputIsReadyOnReturn) {
  auto module = load("llm_unplanned");
  std::vector<int64_t> ids = token_ids(50);
  std::vector<float> logits(kMaxTokens * etrt::fixtures::kHidden, -1.0f);
  etrt::OptimizationProfileGuard guard(kPrefill);
  ASSERT_EQ(forward(*module, ids.data(), ids.size(), logits.data()), et::Error::Ok) << etrt::last_error_message();
  logits.resize(ids.size() * etrt::fixtures::kHidden);
  expect_values(logits, ids);  // no synchronization by the test: the delegate waited for its copy back
  const auto bound = bound_addresses("llm_unplanned");
  EXPECT_NE(bound.first, static_cast<const void*>(ids.data()));
  EXPECT_NE(bound.second, static_cast<const void*>(logits.data()));
}

TEST_P(CudaPath, DeviceInputWithHostOutputAndHostInputWithDeviceOutputBothWork) {
  auto module = load("llm_unplanned");
  etrt::OptimizationProfileGuard guard(kDecode);
  {
    DeviceIds ids(token_ids(1));
    std::vector<float> logits(kMaxTokens * etrt::fixtures::kHidden);
    ASSERT_EQ(forward(*module, ids.memory.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
    logits.resize(etrt::fixtures::kHidden);
    expect_values(logits, ids.ids);
    EXPECT_EQ(bound_addresses("llm_unplanned").first, ids.memory.data());
  }
  {
    std::vector<int64_t> ids = {5};
    DeviceMemory logits(kLogitsBytes);
    ASSERT_EQ(forward(*module, ids.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
    ETRT_CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
    expect_values(download<float>(logits.data(), etrt::fixtures::kHidden), ids);
    EXPECT_EQ(bound_addresses("llm_unplanned").second, logits.data());
  }
}

// Decode steps on the same device buffers repeat the last execution (Executor::repeats_last: straight to the enqueue).
// Each still runs on what its input holds now; a host buffer of the same shape in between is staged, and the device
// buffer is bound again after it.
TEST_P(CudaPath, RepeatedStepsOnDeviceBuffersRunOnWhatTheyHoldNowAndAHostBufferBetweenIsStaged) {
  auto module = load("llm_unplanned");
  DeviceMemory ids(sizeof(int64_t));
  DeviceMemory logits(kLogitsBytes);
  auto step = [&](int64_t id) {
    upload(ids, std::vector<int64_t>{id});
    ASSERT_EQ(forward(*module, ids.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
    expect_values(download<float>(logits.data(), etrt::fixtures::kHidden), {id});
  };
  for (int64_t id : {3, 9, 3, 17}) step(id);
  EXPECT_EQ(events("llm_unplanned", gpufree::TraceKind::kSetTensorAddress).size(), 2u);
  EXPECT_EQ(events("llm_unplanned", gpufree::TraceKind::kSetInputShape).size(), 1u);
  EXPECT_EQ(gpufree::count_enqueues("llm_unplanned"), 4);

  std::vector<int64_t> host = {21};
  ASSERT_EQ(forward(*module, host.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
  expect_values(download<float>(logits.data(), etrt::fixtures::kHidden), host);
  EXPECT_NE(bound_addresses("llm_unplanned").first, static_cast<const void*>(host.data())) << "host memory is staged";

  step(5);
  step(6);
  EXPECT_EQ(bound_addresses("llm_unplanned").first, ids.data());
  EXPECT_EQ(gpufree::count_enqueues("llm_unplanned"), 7);
}

// Pinned memory is copied truly asynchronously: the delegate must not return before the copy has read it.
TEST_P(CudaPath, APinnedHostInputIsConsumedBeforeForwardReturns) {
  auto module = load("llm_unplanned");
  Stream stream;
  etrt::CudaStreamGuard on(stream.get());
  int64_t* pinned = nullptr;
  ETRT_CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&pinned), 64 * sizeof(int64_t)));
  const std::vector<int64_t> ids = token_ids(64);
  std::copy(ids.begin(), ids.end(), pinned);
  DeviceMemory logits(kLogitsBytes);
  etrt::OptimizationProfileGuard guard(kPrefill);
  spin(stream, 100);  // the staging copy queues behind this
  ASSERT_EQ(forward(*module, pinned, 64, logits.data()), et::Error::Ok) << etrt::last_error_message();
  std::fill(pinned, pinned + 64, int64_t{0});  // the runner reuses its buffer at once
  ETRT_CUDA_OK(cudaStreamSynchronize(stream));
  expect_values(download<float>(logits.data(), 64 * etrt::fixtures::kHidden), ids);
  ETRT_CUDA_OK(cudaFreeHost(pinned));
}

TEST_P(CudaPath, AnOutputWithNoMemoryIsRefusedSayingWhatToDo) {
  auto module = load("llm_unplanned");
  DeviceIds ids(token_ids(1));
  auto input = from_blob(ids.memory.data(), {1, 1}, ScalarType::Long);
  EXPECT_FALSE(module->forward(input).ok());  // no set_output: ExecuTorch gives the delegate a null output
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("output 'logits' has no memory"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("Module::set_output"));
}

// ---- the stream ----

TEST_P(CudaPath, WithoutAStreamGuardTheDelegateRunsOnThePerThreadDefaultStream) {
  auto module = load("llm_unplanned");
  DeviceIds ids(token_ids(1));
  DeviceMemory logits(kLogitsBytes);
  ASSERT_EQ(forward(*module, ids.memory.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
  const auto enqueues = events("llm_unplanned", gpufree::TraceKind::kEnqueue);
  ASSERT_EQ(enqueues.size(), 1u);
  EXPECT_EQ(enqueues[0].stream, static_cast<void*>(cudaStreamPerThread));
  ETRT_CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
}

TEST_P(CudaPath, TheCallersStreamCarriesTheSwitchTheCopiesAndTheEnqueue) {
  auto module = load("llm_unplanned");
  Stream stream;
  std::vector<int64_t> ids = token_ids(40);
  std::vector<float> logits(kMaxTokens * etrt::fixtures::kHidden);
  {
    etrt::CudaStreamGuard on(stream.get());
    etrt::OptimizationProfileGuard guard(kPrefill);
    ASSERT_EQ(forward(*module, ids.data(), ids.size(), logits.data()), et::Error::Ok) << etrt::last_error_message();
  }
  logits.resize(ids.size() * etrt::fixtures::kHidden);
  expect_values(logits, ids);
  for (const auto& e : gpufree::trace_events("llm_unplanned")) {
    if (e.kind == gpufree::TraceKind::kEnqueue || e.kind == gpufree::TraceKind::kSetOptimizationProfile) {
      EXPECT_EQ(e.stream, static_cast<void*>(stream.get())) << gpufree::to_string(e);
    }
  }
  EXPECT_EQ(events("llm_unplanned", gpufree::TraceKind::kSetOptimizationProfile).size(),
            static_cast<size_t>(strategy_switches(1)));
}

TEST_P(CudaPath, NestedStreamGuardsRestoreTheOuterStream) {
  auto module = load("llm_unplanned");
  Stream outer, inner;
  DeviceIds ids(token_ids(1));
  DeviceMemory logits(kLogitsBytes);
  {
    etrt::CudaStreamGuard a(outer.get());
    {
      etrt::CudaStreamGuard b(inner.get());
      ASSERT_EQ(forward(*module, ids.memory.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
    }
    ASSERT_EQ(forward(*module, ids.memory.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
  }
  ASSERT_EQ(forward(*module, ids.memory.data(), 1, logits.data()), et::Error::Ok) << etrt::last_error_message();
  const auto enqueues = events("llm_unplanned", gpufree::TraceKind::kEnqueue);
  ASSERT_EQ(enqueues.size(), 3u);
  EXPECT_EQ(enqueues[0].stream, static_cast<void*>(inner.get()));
  EXPECT_EQ(enqueues[1].stream, static_cast<void*>(outer.get()));
  EXPECT_EQ(enqueues[2].stream, static_cast<void*>(cudaStreamPerThread));
  ETRT_CUDA_OK(cudaDeviceSynchronize());
  expect_values(download<float>(logits.data(), etrt::fixtures::kHidden), ids.ids);
}

// ---- asynchrony and ordering ----

TEST_P(CudaPath, BackToBackCallsWithDeviceIoDoNotWaitForTheDevice) {
  auto module = load("llm_unplanned");
  Stream stream;
  etrt::CudaStreamGuard on(stream.get());
  etrt::OptimizationProfileGuard guard(kPrefill);
  constexpr int kCalls = 8;
  std::vector<std::unique_ptr<DeviceIds>> ids;
  std::vector<std::unique_ptr<DeviceMemory>> logits;
  for (int i = 0; i < kCalls; ++i) {
    ids.push_back(std::make_unique<DeviceIds>(token_ids(32 + static_cast<size_t>(i))));
    logits.push_back(std::make_unique<DeviceMemory>(kLogitsBytes));
  }
  spin(stream, 400);
  for (int i = 0; i < kCalls; ++i)
    ASSERT_EQ(forward(*module, ids[i]->memory.data(), ids[i]->ids.size(), logits[i]->data()), et::Error::Ok)
        << etrt::last_error_message();
  EXPECT_STILL_BUSY(stream, "forward() with device IO must not wait for the device");
  ETRT_CUDA_OK(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCalls; ++i)
    expect_values(download<float>(logits[i]->data(), ids[i]->ids.size() * etrt::fixtures::kHidden), ids[i]->ids);
}

TEST_P(CudaPath, ProfileChangesWhileEarlierWorkIsStillRunningKeepEveryResult) {
  auto module = load("llm_unplanned");
  Stream stream;
  etrt::CudaStreamGuard on(stream.get());
  const std::vector<std::pair<int32_t, size_t>> calls = {{kPrefill, 300}, {kDecode, 1}, {kPrefill, 64},
                                                         {kDecode, 1},    {kDecode, 1}, {kPrefill, 2048}};
  std::vector<std::unique_ptr<DeviceIds>> ids;
  std::vector<std::unique_ptr<DeviceMemory>> logits;
  for (const auto& c : calls) {
    ids.push_back(std::make_unique<DeviceIds>(token_ids(c.second)));
    logits.push_back(std::make_unique<DeviceMemory>(kLogitsBytes));
  }
  etrt::ExecutionReport report;
  spin(stream, 400);
  for (size_t i = 0; i < calls.size(); ++i) {
    etrt::OptimizationProfileGuard guard(calls[i].first);
    ASSERT_EQ(forward(*module, ids[i]->memory.data(), calls[i].second, logits[i]->data()), et::Error::Ok)
        << etrt::last_error_message();
  }
  EXPECT_STILL_BUSY(stream, "every profile change was issued while the spin still ran");
  ETRT_CUDA_OK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < calls.size(); ++i)
    expect_values(download<float>(logits[i]->data(), calls[i].second * etrt::fixtures::kHidden), ids[i]->ids);
  // 0 -> 1, 1 -> 0, 0 -> 1, 1 -> 0, (0 stays), 0 -> 1.
  EXPECT_EQ(report.switches(), 5u);
  EXPECT_EQ(events("llm_unplanned", gpufree::TraceKind::kSetOptimizationProfile).size(),
            static_cast<size_t>(strategy_switches(5)));
}

// The delegate's scratch memory and staging buffers are shared by all its executions: one on another stream must
// run after the previous one on the device, without the host waiting for either.
TEST_P(CudaPath, ACallOnAnotherStreamWaitsOnTheDeviceForThePreviousCall) {
  auto module = load("llm_unplanned");
  Stream first, second;
  DeviceIds a(token_ids(100)), b(token_ids(1));
  // Allocated before the spin: an allocation may wait for the device, which would hide what is tested.
  DeviceMemory logits_a(kLogitsBytes), logits_b(kLogitsBytes);
  {
    etrt::CudaStreamGuard on(first.get());
    etrt::OptimizationProfileGuard guard(kPrefill);
    spin(first, 400);
    ASSERT_EQ(forward(*module, a.memory.data(), 100, logits_a.data()), et::Error::Ok) << etrt::last_error_message();
    {
      etrt::CudaStreamGuard then(second.get());
      etrt::OptimizationProfileGuard decode(kDecode);
      ASSERT_EQ(forward(*module, b.memory.data(), 1, logits_b.data()), et::Error::Ok) << etrt::last_error_message();
      EXPECT_STILL_BUSY(second, "the second stream must wait for the first call's work, which waits for the spin");
    }
    ETRT_CUDA_OK(cudaStreamSynchronize(second));
    EXPECT_FALSE(busy(first)) << "the second stream finished, so the first call's work it waited for has finished";
    expect_values(download<float>(logits_a.data(), 100 * etrt::fixtures::kHidden), a.ids);
  }
  expect_values(download<float>(logits_b.data(), etrt::fixtures::kHidden), b.ids);
  module.reset();
  EXPECT_EQ(gpufree::trace_counters("llm_unplanned").failures, 0) << "the device saw every call in order";
}

TEST_P(CudaPath, DestroyingTheModuleWithWorkInFlightWaitsForIt) {
  auto module = load("llm_unplanned");
  Stream stream;
  etrt::CudaStreamGuard on(stream.get());
  DeviceIds ids(token_ids(2048));
  DeviceMemory logits(kLogitsBytes);
  etrt::OptimizationProfileGuard guard(kPrefill);
  spin(stream, 300);
  ASSERT_EQ(forward(*module, ids.memory.data(), 2048, logits.data()), et::Error::Ok) << etrt::last_error_message();
  EXPECT_STILL_BUSY(stream, "the call returned with its work queued behind the spin");
  module.reset();  // destroy(): waits for the delegate's in-flight work before freeing scratch and staging
  EXPECT_FALSE(busy(stream)) << "the delegate's last work is the stream's last work; destroy waited for it";
  expect_values(download<float>(logits.data(), 2048 * etrt::fixtures::kHidden), ids.ids);
}

// A switch is issued, then the call fails (its output has no memory). The switch's work is in flight on the first
// stream; the next call, on another stream, must be ordered after it.
TEST_P(CudaPath, AnErrorAfterTheSwitchLeavesNoWorkRacingWithTheNextCall) {
  auto module = load("llm_unplanned");
  Stream first, second;
  DeviceIds ids(token_ids(64));
  DeviceMemory logits(kLogitsBytes);  // allocated before the spin, like every buffer of these tests
  etrt::OptimizationProfileGuard guard(kPrefill);
  {
    etrt::CudaStreamGuard on(first.get());
    spin(first, 300);
    auto input = from_blob(ids.memory.data(), {1, 64}, ScalarType::Long);
    EXPECT_FALSE(module->forward(input).ok());
    EXPECT_THAT(etrt::last_error_message(), HasSubstr("has no memory"));
  }
  {
    etrt::CudaStreamGuard on(second.get());
    ASSERT_EQ(forward(*module, ids.memory.data(), 64, logits.data()), et::Error::Ok) << etrt::last_error_message();
    if (GetParam() == Strategy::kSwitch) {
      EXPECT_STILL_BUSY(second, "the failed call's switch is in flight behind the spin; the next call waits for it");
    }
  }
  ETRT_CUDA_OK(cudaStreamSynchronize(second));
  expect_values(download<float>(logits.data(), 64 * etrt::fixtures::kHidden), ids.ids);
  module.reset();  // a context destroyed with work running, or run out of order on the device, records a failure
  EXPECT_EQ(gpufree::trace_counters("llm_unplanned").failures, 0) << "the engine refused nothing";
}

TEST_P(CudaPath, ThreadsWithTheirOwnModulesAndStreamsRunConcurrently) {
  std::atomic<int> failures{0};
  auto worker = [&](int32_t profile, size_t tokens) {
    auto module = load("llm_unplanned");
    Stream stream;
    etrt::CudaStreamGuard on(stream.get());
    etrt::OptimizationProfileGuard guard(profile);
    DeviceIds ids(token_ids(tokens));
    DeviceMemory logits(kLogitsBytes);
    for (int i = 0; i < 50; ++i)
      if (forward(*module, ids.memory.data(), tokens, logits.data()) != et::Error::Ok) ++failures;
    if (cudaStreamSynchronize(stream) != cudaSuccess) ++failures;
    const auto values = download<float>(logits.data(), tokens * etrt::fixtures::kHidden);
    const auto want = etrt::fixtures::expected_logits(ids.ids);
    for (size_t i = 0; i < want.size(); ++i)
      if (std::abs(values[i] - want[i]) > 1e-5f) ++failures;
  };
  std::thread a(worker, kDecode, 1);
  std::thread b(worker, kPrefill, 500);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
}

// EtrtTestAddOne reads the TensorRT delegate's host output on the host the moment execute() returns: the staged
// output must have been copied back and the copy finished by then, even with the delegate's work queued behind
// other work on the stream.
TEST_P(CudaPath, AHostDelegateReadsTheStagedOutputCompleteRightAfterExecute) {
  auto module = load("foreign");
  Stream stream;
  etrt::CudaStreamGuard on(stream.get());
  etrt::OptimizationProfileGuard guard(kPrefill);
  for (size_t tokens : {40u, 2048u, 33u}) {
    spin(stream, 5);  // the delegate's work queues behind this; execute() must still return complete outputs
    const auto ids = token_ids(tokens);
    expect_logits_plus_one(run_ids(*module, ids), ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, CudaPath, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

// ---- the blob's device (nvidia-h200-x2) ----

class SecondDevice : public CudaModule {
 protected:
  void SetUp() override {
    if (device_count() < 2) GTEST_SKIP() << "needs two GPUs (run on nvidia-h200-x2)";
    ETRT_CUDA_OK(cudaSetDevice(0));
  }
};

// The device of the memory at `address`.
int device_of(const void* address) {
  cudaPointerAttributes attributes{};
  EXPECT_EQ(cudaPointerGetAttributes(&attributes, address), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  return attributes.device;
}

TEST_P(SecondDevice, ADelegateWhoseBlobNamesDevice1RunsOnDevice1AndRestoresTheCurrentDevice) {
  auto module = load("llm_device1");
  int current = -1;
  ETRT_CUDA_OK(cudaGetDevice(&current));
  EXPECT_EQ(current, 0) << "load restores the caller's device";

  // Host IO: staged through device 1's buffers; the engine refuses any enqueue unless device 1 is current.
  std::vector<int64_t> ids = token_ids(40);
  std::vector<float> logits(kMaxTokens * etrt::fixtures::kHidden);
  etrt::OptimizationProfileGuard guard(kPrefill);
  ASSERT_EQ(forward(*module, ids.data(), ids.size(), logits.data()), et::Error::Ok) << etrt::last_error_message();
  logits.resize(ids.size() * etrt::fixtures::kHidden);
  expect_values(logits, ids);
  ETRT_CUDA_OK(cudaGetDevice(&current));
  EXPECT_EQ(current, 0) << "execute restores the caller's device";
  const auto staged = bound_addresses("llm_device1");
  EXPECT_EQ(device_of(staged.first), 1) << "host input staged in device 1's memory";
  EXPECT_EQ(device_of(staged.second), 1) << "host output staged in device 1's memory";

  // Device IO in device 1's memory is bound in place, on a stream of device 1.
  ETRT_CUDA_OK(cudaSetDevice(1));
  {
    Stream stream1;
    DeviceIds ids1(token_ids(40));
    DeviceMemory logits1(kLogitsBytes);
    ETRT_CUDA_OK(cudaSetDevice(0));
    etrt::CudaStreamGuard on(stream1.get());
    ASSERT_EQ(forward(*module, ids1.memory.data(), 40, logits1.data()), et::Error::Ok) << etrt::last_error_message();
    ETRT_CUDA_OK(cudaStreamSynchronize(stream1));
    expect_values(download<float>(logits1.data(), 40 * etrt::fixtures::kHidden), ids1.ids);
    EXPECT_EQ(bound_addresses("llm_device1").first, ids1.memory.data());
    ETRT_CUDA_OK(cudaSetDevice(1));
  }
  ETRT_CUDA_OK(cudaSetDevice(0));
  module.reset();
  ETRT_CUDA_OK(cudaGetDevice(&current));
  EXPECT_EQ(current, 0) << "destroy restores the caller's device";
}

TEST_P(SecondDevice, MemoryOrAStreamOfAnotherDeviceIsRefusedNamingBothDevices) {
  auto module = load("llm_device1");
  DeviceIds ids0(token_ids(1));  // device 0's memory
  std::vector<float> logits(kMaxTokens * etrt::fixtures::kHidden);
  EXPECT_EQ(forward(*module, ids0.memory.data(), 1, logits.data()), et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("input 'input_ids' is in memory of CUDA device 0"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("runs on device 1"));

  Stream stream0;  // a stream of device 0
  etrt::CudaStreamGuard on(stream0.get());
  std::vector<int64_t> ids = {3};
  EXPECT_EQ(forward(*module, ids.data(), 1, logits.data()), et::Error::InvalidArgument);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("stream belongs to device 0"));
  EXPECT_EQ(gpufree::count_enqueues("llm_device1"), 0);
}

INSTANTIATE_TEST_SUITE_P(Strategies, SecondDevice, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

TEST(CudaModuleLoad, ABlobNamingADeviceThisMachineDoesNotHaveIsRefusedAtLoadNamingIt) {
  Module module(fixture("llm_device9"));
  EXPECT_NE(module.load_forward(), et::Error::Ok);
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("CUDA device 9"));
  EXPECT_THAT(etrt::last_error_message(), HasSubstr("CUDA device(s)"));
}

}  // namespace
}  // namespace etrt::gpu_test
