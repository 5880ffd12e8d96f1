// Figures on NVIDIA's TensorRT (docs/gpu-testing.md): a many-layer decoder's decode step (one token, every tensor in
// device memory, on a caller's stream) timed three ways in one process, round by round:
//   raw     a hand-written loop: one context, shapes and addresses set once, enqueueV3 per step
//   etrt    ExecuTorch's Module::forward through etrt (switch strategy), CUDA graphs off
//   graphs  the same with cuda_graphs on: steady steps replay a graph
// Host time is the time the calls take to return (the work queued), device time the time between events around the
// steps. Then what a profile change costs: prefill (64 tokens) and decode (1 token) alternating, each waited for,
// under the switch strategy and under context_per_profile; and what the CUDA graph capture rule costs across prefills.
// Medians over rounds, and the median of per-round ratios.
//
//   etrt_bench_nvidia_decode <programs dir (nv_deep.pte)> <plan file (the same engine)> [rounds=15] [steps=200]

#include <NvInferRuntime.h>
#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "median.h"
#include "module_loading.h"
#include "run_checks.h"

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;
using Clock = std::chrono::steady_clock;

constexpr int32_t kWidth = 256, kMaxTokens = 512;

const etrt::testing::RunChecks check("bench");

using etrt::testing::median;

class Logger final : public nvinfer1::ILogger {
  void log(Severity severity, const char* msg) noexcept override {
    if (severity <= Severity::kWARNING) std::fprintf(stderr, "[TensorRT] %s\n", msg);
  }
};

std::unique_ptr<Module> load(const std::string& pte, const char* strategy, bool graphs) {
  et::Error loaded = et::Error::Ok;
  auto module = etrt::testing::load_module(
      pte, {{etrt::kOptionProfileStrategy, strategy}, {etrt::kOptionCudaGraphs, graphs}}, &loaded);
  check(loaded == et::Error::Ok, "Module::load");
  return module;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <programs dir> <plan file> [rounds] [steps]\n", argv[0]);
    return 2;
  }
  const std::string pte = std::string(argv[1]) + "/nv_deep.pte";
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 15;
  const int steps = argc > 4 ? std::atoi(argv[4]) : 200;

  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  void *ids = nullptr, *logits_raw = nullptr, *logits_etrt = nullptr;
  check(cudaMalloc(&ids, kMaxTokens * sizeof(int32_t)), "cudaMalloc");
  check(cudaMemset(ids, 0, kMaxTokens * sizeof(int32_t)), "cudaMemset");
  check(cudaMalloc(&logits_raw, size_t{kMaxTokens} * kWidth * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&logits_etrt, size_t{kMaxTokens} * kWidth * sizeof(float)), "cudaMalloc");

  // The hand-written loop's engine, from the same plan.
  std::ifstream in(argv[2], std::ios::binary);
  const std::vector<char> plan((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Logger logger;
  std::unique_ptr<nvinfer1::IRuntime> runtime(nvinfer1::createInferRuntime(logger));
  std::unique_ptr<nvinfer1::ICudaEngine> engine(runtime->deserializeCudaEngine(plan.data(), plan.size()));
  check(engine != nullptr, "deserializeCudaEngine");
  std::unique_ptr<nvinfer1::IExecutionContext> context(engine->createExecutionContext());
  nvinfer1::Dims one{};
  one.nbDims = 2;
  one.d[0] = 1;
  one.d[1] = 1;
  check(context->setOptimizationProfileAsync(0, stream) && context->setInputShape("input_ids", one) &&
            context->setTensorAddress("input_ids", ids) && context->setTensorAddress("logits", logits_raw),
        "setting up the hand-written loop");

  auto plain = load(pte, etrt::kStrategySwitch, false);
  auto graphs = load(pte, etrt::kStrategySwitch, true);
  for (Module* m : {plain.get(), graphs.get()})
    check(m->set_output(from_blob(logits_etrt, {1, kMaxTokens, kWidth}, ScalarType::Float)) == et::Error::Ok,
          "set_output");
  auto decode_input = from_blob(ids, {1, 1}, ScalarType::Int);

  const std::function<void()> step_raw = [&] { check(context->enqueueV3(stream), "enqueueV3"); };
  const auto step_module = [&](Module& m) { check(m.forward(decode_input).ok(), "forward"); };
  const std::function<void()> step_etrt = [&] { step_module(*plain); };
  const std::function<void()> step_graphs = [&] { step_module(*graphs); };

  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  etrt::CudaStreamGuard on(stream);
  // Host microseconds per step and device microseconds per step of `steps` steps.
  const auto time_steps = [&](const std::function<void()>& step, double* host_us, double* device_us) {
    check(cudaStreamSynchronize(stream), "sync");
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    const auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) step();
    const auto t1 = Clock::now();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    *host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / steps;
    *device_us = 1000.0 * ms / steps;
  };
  for (const auto* step : {&step_raw, &step_etrt, &step_graphs})  // warm-up: first enqueues, captures
    for (int i = 0; i < 20; ++i) (*step)();
  check(cudaStreamSynchronize(stream), "sync");

  std::vector<double> host[3], device[3], ratio_host[2], ratio_device[2];
  for (int r = 0; r < rounds; ++r) {
    double h[3], d[3];
    time_steps(step_raw, &h[0], &d[0]);
    time_steps(step_etrt, &h[1], &d[1]);
    time_steps(step_graphs, &h[2], &d[2]);
    for (int k = 0; k < 3; ++k) host[k].push_back(h[k]), device[k].push_back(d[k]);
    for (int k = 0; k < 2; ++k) ratio_host[k].push_back(h[k + 1] / h[0]), ratio_device[k].push_back(d[k + 1] / d[0]);
  }
  // getNbLayers() counts the engine's layers after TensorRT's fusions (2 on 8.6 for the 48 products), not the model's.
  std::printf(
      "decode step of nv_deep (products of [1,1,%d] by [%d,%d] weights; %d engine layers as TensorRT reports "
      "them), %d rounds x %d steps, medians\n",
      kWidth, kWidth, kWidth, static_cast<int>(engine->getNbLayers()), rounds, steps);
  std::printf("  raw enqueueV3 loop: host %.1f us, device %.1f us\n", median(host[0]), median(device[0]));
  std::printf("  Module + etrt:      host %.1f us, device %.1f us; ratio to raw: host %.3fx, device %.3fx\n",
              median(host[1]), median(device[1]), median(ratio_host[0]), median(ratio_device[0]));
  std::printf("  + CUDA graphs:      host %.1f us, device %.1f us; ratio to raw: host %.3fx, device %.3fx\n",
              median(host[2]), median(device[2]), median(ratio_host[1]), median(ratio_device[1]));

  // A profile change: prefill then decode, each waited for, per strategy.
  plain.reset();
  graphs.reset();
  auto by_switch = load(pte, etrt::kStrategySwitch, false);
  auto per_profile = load(pte, etrt::kStrategyContextPerProfile, false);
  for (Module* m : {by_switch.get(), per_profile.get()})
    check(m->set_output(from_blob(logits_etrt, {1, kMaxTokens, kWidth}, ScalarType::Float)) == et::Error::Ok,
          "set_output");
  auto prefill_input = from_blob(ids, {1, 64}, ScalarType::Int);
  const auto pair_us = [&](Module& m) {
    const auto t0 = Clock::now();
    check(m.forward(prefill_input).ok(), "prefill");
    check(cudaStreamSynchronize(stream), "sync");
    check(m.forward(decode_input).ok(), "decode");
    check(cudaStreamSynchronize(stream), "sync");
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  for (int i = 0; i < 5; ++i) pair_us(*by_switch), pair_us(*per_profile);
  std::vector<double> sw, pp, ratio;
  for (int r = 0; r < rounds * 4; ++r) {
    const double a = pair_us(*by_switch), b = pair_us(*per_profile);
    sw.push_back(a), pp.push_back(b), ratio.push_back(a / b);
  }
  etrt::ExecutionReport report;
  pair_us(*by_switch);
  std::printf("prefill (64 tokens) + decode (1), each waited for, %d rounds, medians:\n", rounds * 4);
  std::printf("  switch:              %.1f us per pair (%zu profile changes per pair)\n", median(sw),
              report.switches());
  std::printf("  context_per_profile: %.1f us per pair; switch / context_per_profile %.3fx, difference %.1f us\n",
              median(pp), median(ratio), median(sw) - median(pp));

  // What the capture rule costs: a prefill then kDecodeRun decode steps, with CUDA graphs on. A graph is replayed
  // only while its context is unchanged since the capture, so under switch each prefill drops the decode graph and
  // the steps after it run plainly again until a new one is captured; context_per_profile keeps the decode context's
  // graph across prefills. The same sequence with graphs off under switch is the baseline.
  by_switch.reset();
  per_profile.reset();
  constexpr int kDecodeRun = 16;
  auto switch_off = load(pte, etrt::kStrategySwitch, false);
  auto switch_on = load(pte, etrt::kStrategySwitch, true);
  auto per_profile_on = load(pte, etrt::kStrategyContextPerProfile, true);
  Module* const sequence_modules[] = {switch_off.get(), switch_on.get(), per_profile_on.get()};
  for (Module* m : sequence_modules)
    check(m->set_output(from_blob(logits_etrt, {1, kMaxTokens, kWidth}, ScalarType::Float)) == et::Error::Ok,
          "set_output");
  const auto sequence_us = [&](Module& m) {
    const auto t0 = Clock::now();
    check(m.forward(prefill_input).ok(), "prefill");
    for (int i = 0; i < kDecodeRun; ++i) check(m.forward(decode_input).ok(), "decode");
    check(cudaStreamSynchronize(stream), "sync");
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  for (int i = 0; i < 5; ++i)
    for (Module* m : sequence_modules) sequence_us(*m);
  std::vector<double> seq[3], seq_ratio[2];
  for (int r = 0; r < rounds * 2; ++r) {
    double t[3];
    for (int k = 0; k < 3; ++k) t[k] = sequence_us(*sequence_modules[k]);
    for (int k = 0; k < 3; ++k) seq[k].push_back(t[k]);
    seq_ratio[0].push_back(t[1] / t[0]), seq_ratio[1].push_back(t[2] / t[0]);
  }
  std::printf("prefill (64 tokens) + %d decode steps, waited for at the end, %d rounds, medians:\n", kDecodeRun,
              rounds * 2);
  std::printf("  switch, graphs off:              %.1f us per sequence\n", median(seq[0]));
  std::printf("  switch, graphs on:               %.1f us per sequence, ratio to off %.3fx\n", median(seq[1]),
              median(seq_ratio[0]));
  std::printf("  context_per_profile, graphs on:  %.1f us per sequence, ratio to off %.3fx\n", median(seq[2]),
              median(seq_ratio[1]));
  return 0;
}
