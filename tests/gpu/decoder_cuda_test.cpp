// The demo decoder (examples/llm_runner/decoder_model.h) on the CUDA path:
// a CUDA-mode engine whose KV caches live in device memory the test
// cudaMallocs and passes as the method's k_cache and v_cache inputs on every
// call, so the engine updates them in place on the device and each decode
// step reads what the prefill and the earlier steps wrote. A prefill over 48
// tokens and 8 decode steps, with pinned profiles and with automatic
// selection, under both profile strategies.
//
// Checked in this process against the host-mode engine of the same weights
// (decoder_host.pte, GPU-free, teacher-forced on the tokens the CUDA run
// fed), and dumped for a check against NumPy on a machine that has it:
//
//   $ETRT_GPU_DUMP_DIR/decoder_cuda_<strategy>.json   (default: the working directory)
//   .venv/bin/python tests/python/test_decoder_demo.py <those files> --weights <fixtures>/decoder_weights.json
//
// The dump format is examples/llm_runner/decoder_dump.h's, the demo runner's.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "decoder_dump.h"
#include "decoder_model.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "gpu_module_util.h"

namespace etrt::gpu_test {
namespace {

namespace demo = ::etrt::demo;
using ::executorch::runtime::EValue;

constexpr int64_t kPrompt = 48;
constexpr int64_t kDecodeSteps = 8;
constexpr size_t kCacheElements = static_cast<size_t>(demo::kContext * demo::kHeadDim);
constexpr size_t kCacheBytes = kCacheElements * sizeof(float);
// Float32 kernels on the device fuse multiply-adds and sum in another order than the host's: not bit-exact, but
// within 1e-6 of each other on logits of a few units. 1e-4 leaves room; a stale cache moves logits by 1e-1.
constexpr float kTolerance = 1e-4f;

std::vector<int64_t> prompt() {
  std::vector<int64_t> ids(static_cast<size_t>(kPrompt));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 5 + 1) % demo::kVocab);
  return ids;
}

// 256-byte-aligned zeroed host memory, so etrt binds host caches in place on a host engine.
struct HostCache {
  HostCache() : data(static_cast<float*>(::operator new[](kCacheBytes, std::align_val_t{256}))) {
    std::memset(data, 0, kCacheBytes);
  }
  ~HostCache() { ::operator delete[](data, std::align_val_t{256}); }
  HostCache(const HostCache&) = delete;
  HostCache& operator=(const HostCache&) = delete;
  float* data;
};

struct DeviceCache {
  DeviceCache() : memory(kCacheBytes) { EXPECT_EQ(cudaMemset(memory.data(), 0, kCacheBytes), cudaSuccess); }
  float* data() const { return memory.as<float>(); }
  DeviceMemory memory;
};

int64_t argmax_last_row(const std::vector<float>& logits) {
  const float* last = logits.data() + logits.size() - static_cast<size_t>(demo::kVocab);
  return std::max_element(last, last + demo::kVocab) - last;
}

// One forward() of `step` with the caches at k and v (device or host memory). Fills in the logits, the greedy
// choice and the profile; `outputs` (optional) receives the method's outputs.
::testing::AssertionResult forward(Module& module, float* k, float* v, demo::DumpStep* step,
                                   std::vector<EValue>* outputs = nullptr) {
  etrt::ExecutionReport report;
  auto tokens = from_blob(step->tokens.data(), {1, static_cast<int32_t>(step->tokens.size())}, ScalarType::Long);
  auto start_pos = from_blob(&step->start_pos, {1}, ScalarType::Long);
  const auto rows = static_cast<int32_t>(demo::kContext), width = static_cast<int32_t>(demo::kHeadDim);
  auto k_cache = from_blob(k, {1, rows, width}, ScalarType::Float);
  auto v_cache = from_blob(v, {1, rows, width}, ScalarType::Float);
  etrt::clear_last_error();
  auto result = module.forward({tokens, start_pos, k_cache, v_cache});
  if (!result.ok())
    return ::testing::AssertionFailure()
           << step->phase << " at start_pos " << step->start_pos << " failed: "
           << (etrt::has_last_error() ? etrt::last_error_message() : et::to_string(result.error()));
  const auto& logits = result.get()[0].toTensor();
  step->logits.assign(logits.const_data_ptr<float>(), logits.const_data_ptr<float>() + logits.numel());
  step->next = argmax_last_row(step->logits);
  if (report.entries().size() > 0) {
    step->profile = report.entries()[report.entries().size() - 1].profile;
    step->switched = report.entries()[report.entries().size() - 1].switched;
  }
  for (const etrt::ExecutionRecord& e : report.entries()) {
    step->host_to_device_bytes += e.host_to_device_bytes;
    step->device_to_host_bytes += e.device_to_host_bytes;
    step->realigned_bytes += e.realigned_bytes;
    step->write_back_bytes += e.write_back_bytes;
  }
  if (outputs != nullptr) *outputs = result.get();
  return ::testing::AssertionSuccess();
}

// A prefill over prompt(), then kDecodeSteps decode steps, pinned or automatic. Each step feeds the previous one's
// greedy choice, or, with `feed`, the tokens `feed` fed at that step (teacher forcing, to compare two engines step
// by step without one near-tie sending them down different paths).
void generate(Module& module, float* k, float* v, bool automatic, demo::DumpRun* run,
              const demo::DumpRun* feed = nullptr) {
  for (int64_t i = 0; i <= kDecodeSteps; ++i) {
    const bool prefill = i == 0;
    std::vector<int64_t> tokens = prefill ? prompt() : std::vector<int64_t>{run->steps.back().next};
    if (feed != nullptr) tokens = feed->steps[static_cast<size_t>(i)].tokens;
    const int64_t start_pos =
        prefill ? 0 : run->steps.back().start_pos + static_cast<int64_t>(run->steps.back().tokens.size());
    demo::DumpStep step(prefill ? "prefill" : "decode", start_pos, std::move(tokens));
    if (automatic) {
      auto guard = etrt::OptimizationProfileGuard::automatic();
      ASSERT_TRUE(forward(module, k, v, &step));
    } else {
      etrt::OptimizationProfileGuard pin(prefill ? demo::kPrefillProfile : demo::kDecodeProfile);
      ASSERT_TRUE(forward(module, k, v, &step));
    }
    EXPECT_EQ(step.profile, prefill ? demo::kPrefillProfile : demo::kDecodeProfile) << step.phase << " " << i;
    run->steps.push_back(std::move(step));
  }
}

std::string dump_dir() {
  const char* dir = std::getenv("ETRT_GPU_DUMP_DIR");
  return dir != nullptr && *dir != '\0' ? dir : ".";
}

class CudaDecoder : public CudaModule {
 protected:
  const char* strategy() const {
    return GetParam() == Strategy::kSwitch ? etrt::kStrategySwitch : etrt::kStrategyContextPerProfile;
  }
};

TEST_P(CudaDecoder, PrefillAndDecodeStepsOverDeviceCachesMatchTheHostEngineAndAreDumped) {
  std::vector<demo::DumpRun> dumped;
  for (bool automatic : {false, true}) {
    SCOPED_TRACE(automatic ? "automatic selection" : "pinned profiles");
    demo::DumpRun cuda{strategy(), automatic ? "auto" : "pin", {}};
    DeviceCache k, v;
    {
      auto module = load("decoder_cuda");
      generate(*module, k.data(), v.data(), automatic, &cuda);
      if (HasFatalFailure()) return;
    }
    ASSERT_EQ(cuda.steps.size(), static_cast<size_t>(1 + kDecodeSteps));

    // The host-mode engine, fed the same tokens.
    demo::DumpRun host{strategy(), cuda.selection, {}};
    HostCache hk, hv;
    {
      auto module = load("decoder_host");
      generate(*module, hk.data, hv.data, automatic, &host, &cuda);
      if (HasFatalFailure()) return;
    }
    float worst = 0.0f;
    for (size_t s = 0; s < cuda.steps.size(); ++s) {
      const auto& a = cuda.steps[s].logits;
      const auto& b = host.steps[s].logits;
      ASSERT_EQ(a.size(), b.size()) << "step " << s;
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_NEAR(a[i], b[i], kTolerance * (1.0f + std::fabs(b[i])))
            << cuda.steps[s].phase << " step " << s << " (start_pos " << cuda.steps[s].start_pos << "), logit " << i;
        worst = std::max(worst, std::fabs(a[i] - b[i]));
      }
      // Where the host's choice is clear, the device made the same one.
      std::vector<float> last(b.end() - demo::kVocab, b.end());
      std::sort(last.begin(), last.end());
      if (last[last.size() - 1] - last[last.size() - 2] > 1e-3f) {
        EXPECT_EQ(cuda.steps[s].next, host.steps[s].next) << "step " << s;
      }
    }
    std::cout << "[ decoder  ] " << strategy() << "/" << cuda.selection << ": " << cuda.steps.size()
              << " steps, largest |cuda - host| logit difference " << worst << "\n";

    // The device caches hold what the host engine's caches hold: every row the steps wrote, and zeros after.
    const auto dk = download<float>(k.data(), kCacheElements);
    const auto dv = download<float>(v.data(), kCacheElements);
    const size_t written = static_cast<size_t>((kPrompt + kDecodeSteps) * demo::kHeadDim);
    for (size_t i = 0; i < kCacheElements; ++i) {
      ASSERT_NEAR(dk[i], hk.data[i], kTolerance) << "k_cache element " << i;
      ASSERT_NEAR(dv[i], hv.data[i], kTolerance) << "v_cache element " << i;
    }
    EXPECT_NE(dk[written - 1], 0.0f) << "the last decode step's key row was not written into the device cache";
    EXPECT_EQ(dk[written], 0.0f) << "a row past the last step was written";
    dumped.push_back(std::move(cuda));
  }
  const std::string path = dump_dir() + "/decoder_cuda_" + strategy() + ".json";
  std::string error;
  ASSERT_TRUE(demo::write_dump(path, fixture("decoder_cuda"), demo::kVocab, dumped, &error)) << error;
  std::cout << "[ decoder  ] logits dumped to " << path << "\n";
}

TEST_P(CudaDecoder, TheCachesAreBoundInPlaceAtTheDeviceAddressesPassed) {
  DeviceCache k, v;
  auto module = load("decoder_cuda");
  demo::DumpRun run{strategy(), "pin", {}};
  generate(*module, k.data(), v.data(), false, &run);
  if (HasFatalFailure()) return;
  // IO order: tokens 0, start_pos 1, k_cache 2, v_cache 3, logits 4, k_cache_out 5, v_cache_out 6.
  std::vector<const void*> bound(7, nullptr);
  for (const auto& e : gpufree::trace_events("decoder_cuda"))
    if (e.kind == gpufree::TraceKind::kSetTensorAddress && e.ok && e.io_index >= 0 && e.io_index < 7)
      bound[static_cast<size_t>(e.io_index)] = e.address;
  EXPECT_EQ(bound[2], static_cast<const void*>(k.data()));
  EXPECT_EQ(bound[3], static_cast<const void*>(v.data()));
  EXPECT_EQ(bound[5], static_cast<const void*>(k.data())) << "k_cache_out shares k_cache's memory";
  EXPECT_EQ(bound[6], static_cast<const void*>(v.data())) << "v_cache_out shares v_cache's memory";
  EXPECT_EQ(gpufree::count_enqueues("decoder_cuda"), 1 + kDecodeSteps);
}

TEST_P(CudaDecoder, WriteBackOutputsReceiveACopyOfTheDeviceCachesAfterEachStep) {
  DeviceCache k, v;
  auto module = load("decoder_writeback_cuda");
  std::vector<int64_t> tokens = prompt();
  for (int64_t i = 0; i < 3; ++i) {
    demo::DumpStep step(i == 0 ? "prefill" : "decode", i == 0 ? 0 : kPrompt + i - 1,
                        i == 0 ? tokens : std::vector<int64_t>{tokens[static_cast<size_t>(i)]});
    etrt::OptimizationProfileGuard pin(i == 0 ? demo::kPrefillProfile : demo::kDecodeProfile);
    std::vector<EValue> outputs;
    ASSERT_TRUE(forward(*module, k.data(), v.data(), &step, &outputs));
    ASSERT_EQ(outputs.size(), 3u);
    const auto dk = download<float>(k.data(), kCacheElements);
    const auto dv = download<float>(v.data(), kCacheElements);
    const auto& out_k = outputs[1].toTensor();
    const auto& out_v = outputs[2].toTensor();
    ASSERT_EQ(static_cast<size_t>(out_k.numel()), kCacheElements);
    ASSERT_EQ(static_cast<size_t>(out_v.numel()), kCacheElements);
    EXPECT_EQ(std::memcmp(out_k.const_data_ptr<float>(), dk.data(), kCacheBytes), 0) << "step " << i;
    EXPECT_EQ(std::memcmp(out_v.const_data_ptr<float>(), dv.data(), kCacheBytes), 0) << "step " << i;
    const size_t last_row = static_cast<size_t>(step.start_pos + static_cast<int64_t>(step.tokens.size()) - 1);
    EXPECT_NE(dk[last_row * static_cast<size_t>(demo::kHeadDim)], 0.0f) << "step " << i << " wrote no key row";
    // Both whole caches, device to the write-back outputs ExecuTorch planned, counted once, as write-backs.
    EXPECT_EQ(step.write_back_bytes, 2 * static_cast<int64_t>(kCacheBytes)) << "step " << i;
  }
}

TEST_P(CudaDecoder, HostCachesAreRefusedBecauseTheUpdateWouldBeLost) {
  HostCache k, v;
  auto module = load("decoder_cuda");
  demo::DumpStep step("prefill", 0, prompt());
  etrt::OptimizationProfileGuard pin(demo::kPrefillProfile);
  const auto refused = forward(*module, k.data, v.data, &step);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.message(), HasSubstr("input 'k_cache' is updated in place by the engine"));
  EXPECT_THAT(refused.message(), HasSubstr("host memory"));
  EXPECT_EQ(gpufree::count_enqueues("decoder_cuda"), 0);
  // The delegate stays usable: device caches run.
  DeviceCache dk, dv;
  ASSERT_TRUE(forward(*module, dk.data(), dv.data(), &step));
}

// Session `s`'s conversation, teacher-forced: a prompt and decode tokens of its own, so that a session reading
// another's cache rows would compute other logits.
demo::DumpRun conversation(size_t s) {
  demo::DumpRun feed{"", "pin", {}};
  std::vector<int64_t> ids(static_cast<size_t>(kPrompt));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3 * s + 2) % demo::kVocab);
  feed.steps.emplace_back("prefill", 0, std::move(ids));
  for (int64_t i = 1; i <= kDecodeSteps; ++i)
    feed.steps.emplace_back("decode", 0, std::vector<int64_t>{static_cast<int64_t>((s * 11 + 5 * i) % demo::kVocab)});
  return feed;
}

// Sessions of one file over one engine (load option share_engine, the default; docs/design.md decision 21): each
// on a thread and stream of its own, with device caches of its own, computes what it computes alone, and the
// counters show one engine deserialized for all of them.
TEST_P(CudaDecoder, SessionsOverOneEngineOnTheirOwnThreadsAndStreamsEachComputeWhatTheyComputeAlone) {
  constexpr size_t kSessions = 4;
  std::vector<demo::DumpRun> feeds, alone(kSessions), together(kSessions);
  for (size_t s = 0; s < kSessions; ++s) feeds.push_back(conversation(s));
  for (size_t s = 0; s < kSessions; ++s) {
    DeviceCache k, v;
    auto module = load("decoder_cuda");
    generate(*module, k.data(), v.data(), false, &alone[s], &feeds[s]);
    if (HasFatalFailure()) return;
  }

  const int64_t deserialized = counter(etrt::kCounterEnginesDeserialized);
  const int64_t sessions = counter(etrt::kCounterEngineSessions);
  std::vector<std::unique_ptr<Module>> modules;
  for (size_t s = 0; s < kSessions; ++s) modules.push_back(load("decoder_cuda"));
  EXPECT_EQ(counter(etrt::kCounterEnginesDeserialized) - deserialized, 1);
  EXPECT_EQ(counter(etrt::kCounterEngineSessions) - sessions, static_cast<int64_t>(kSessions));
  std::vector<DeviceCache> k(kSessions), v(kSessions);
  // Streams made and destroyed on this thread: compute-sanitizer once stalled destroying one on a worker
  // (docs/gpu-testing.md, "Not verified").
  std::vector<Stream> streams(kSessions);
  ETRT_CUDA_OK(cudaDeviceSynchronize());  // the caches' zeros are there before any session's stream reads them
  std::vector<std::thread> threads;
  for (size_t s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      etrt::CudaStreamGuard on(streams[s].get());
      generate(*modules[s], k[s].data(), v[s].data(), false, &together[s], &feeds[s]);
      EXPECT_EQ(cudaStreamSynchronize(streams[s]), cudaSuccess);
    });
  }
  for (std::thread& t : threads) t.join();
  if (HasFatalFailure()) return;

  for (size_t s = 0; s < kSessions; ++s) {
    ASSERT_EQ(together[s].steps.size(), alone[s].steps.size()) << "session " << s;
    for (size_t i = 0; i < alone[s].steps.size(); ++i) {
      const auto& a = together[s].steps[i].logits;
      const auto& b = alone[s].steps[i].logits;
      ASSERT_EQ(a.size(), b.size()) << "session " << s << " step " << i;
      for (size_t j = 0; j < a.size(); ++j)
        ASSERT_NEAR(a[j], b[j], kTolerance * (1.0f + std::fabs(b[j]))) << "session " << s << " step " << i;
    }
  }
  // The conversations differ, so their logits do: a session computing another's would have been seen above.
  EXPECT_NE(alone[0].steps.back().logits, alone[1].steps.back().logits);
}

INSTANTIATE_TEST_SUITE_P(Strategies, CudaDecoder, ::testing::Values(Strategy::kSwitch, Strategy::kContextPerProfile),
                         strategy_name);

}  // namespace
}  // namespace etrt::gpu_test
