// The real-LLM figures and checks on NVIDIA's TensorRT (docs/real-llm.md), in one process: the Llama decoder of
// llama.py, built by NVIDIA's ONNX parser and builder into two plans (split: a decode profile [1,1] and a prefill
// profile [1,32..T]; wide: one profile [1,1..T]) and packed by `etrt pack` into split.pte and wide.pte, run through
// ExecuTorch's Module + etrt.
//
// Every tensor is the runner's device memory (the programs plan none). The caches have fixed addresses: each
// execution reads k_cache/v_cache and writes k_cache_out/v_cache_out, which the runner copies back (device to device,
// on the same stream) before the next step — the fed-back caches of TensorRT 8.6, which has no in-place update.
//
//   1. correctness: a prefill of the reference prompt then N decode steps, per configuration (plan x strategy x CUDA
//      graphs): teacher-forced logits against eager PyTorch (fp16 and fp32), then a free-running greedy run against
//      eager's tokens; prefill-only checks at longer lengths. Exit status 1 when a configuration fails.
//   2. figures: load time and device memory; decode ms/token (split vs wide, graphs off/on, a hand-written
//      enqueueV3 loop on the same plans); prefill times; switch vs context_per_profile for a prefill + N decode steps.
//
//   etrt_bench_llm <dir holding split.pte wide.pte split.plan wide.plan reference.bin> [rounds=7] [check]
//     check: the correctness part only

#include <NvInferRuntime.h>
#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "counters.h"
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
using ::executorch::extension::TensorPtr;
using Clock = std::chrono::steady_clock;

const etrt::testing::RunChecks check("llm_bench");

using etrt::testing::median;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// reference.bin (prepare_llm.py).
struct Check {
  std::vector<int32_t> prompt;
  std::vector<float> logits16, logits32;
};
struct Reference {
  int32_t vocab = 0;
  std::vector<int32_t> prompt, tokens;
  std::vector<float> logits16, logits32;  // [(1 + steps) * vocab]
  std::vector<Check> checks;
};

Reference read_reference(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const auto ints = [&](size_t n) {
    std::vector<int32_t> v(n);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
    return v;
  };
  const auto floats = [&](size_t n) {
    std::vector<float> v(n);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
    return v;
  };
  const std::vector<int32_t> head = ints(5);
  check(in.good() && head[0] == 0x4c4c4d31, "reading reference.bin");
  Reference r;
  r.vocab = head[1];
  r.prompt = ints(head[2]);
  r.tokens = ints(head[3]);
  r.logits16 = floats(size_t(1 + head[3]) * r.vocab);
  r.logits32 = floats(size_t(1 + head[3]) * r.vocab);
  for (int32_t c = 0; c < head[4]; ++c) {
    Check k;
    k.prompt = ints(ints(1)[0]);
    k.logits16 = floats(r.vocab);
    k.logits32 = floats(r.vocab);
    r.checks.push_back(std::move(k));
  }
  check(in.good(), "reading reference.bin");
  return r;
}

class Logger final : public nvinfer1::ILogger {
  void log(Severity severity, const char* msg) noexcept override {
    if (severity <= Severity::kWARNING) std::fprintf(stderr, "[TensorRT] %s\n", msg);
  }
};

size_t used_device_bytes() {
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return total - free;
}
double mib(double bytes) { return bytes / (1 << 20); }

// The runner's device memory: every tensor of the call, at fixed addresses.
struct Buffers {
  int32_t max_seq = 0, vocab = 0;
  size_t cache_bytes = 0;
  std::vector<::executorch::aten::SizesType> cache_shape;
  int32_t* tokens = nullptr;
  int32_t* start = nullptr;
  void *k_in = nullptr, *v_in = nullptr, *k_out = nullptr, *v_out = nullptr;
  float* logits = nullptr;
  int32_t* pinned_starts = nullptr;  // pinned_starts[i] == i: a position copied without waiting for the stream
  cudaStream_t stream = nullptr;
};

// One runner over one Module: inputs bound by address, outputs set once, the caches copied back after each step.
class Runner {
 public:
  Runner(Buffers& b, const std::string& pte, const char* strategy, bool graphs) : b_(b) {
    const auto t0 = Clock::now();
    const size_t before = used_device_bytes();
    et::Error loaded = et::Error::Ok;
    module_ = etrt::testing::load_module(
        pte, {{etrt::kOptionProfileStrategy, strategy}, {etrt::kOptionCudaGraphs, graphs}}, &loaded);
    check(loaded == et::Error::Ok, "Module::load");
    load_ms = ms_since(t0);
    device_bytes = static_cast<double>(used_device_bytes()) - static_cast<double>(before);
    const auto cache = [&](void* p) { return from_blob(p, b.cache_shape, ScalarType::Half); };
    check(module_->set_output(from_blob(b.logits, {1, b.vocab}, ScalarType::Float), 0) == et::Error::Ok &&
              module_->set_output(cache(b.k_out), 1) == et::Error::Ok &&
              module_->set_output(cache(b.v_out), 2) == et::Error::Ok,
          "set_output");
    start_ = from_blob(b.start, {1}, ScalarType::Int);
    k_ = cache(b.k_in);
    v_ = cache(b.v_in);
    for (int32_t s = 1; s <= b.max_seq; s *= 2) tokens_.push_back(from_blob(b.tokens, {1, s}, ScalarType::Int));
  }

  // One execution over the first `s` tokens of the token buffer (s a power of two, or any s: made on demand).
  void step(int32_t s) {
    TensorPtr made;
    const TensorPtr* t = nullptr;
    const int k = static_cast<int>(std::log2(s));
    if ((1 << k) == s && k < static_cast<int>(tokens_.size())) {
      t = &tokens_[k];
    } else {
      made = from_blob(b_.tokens, {1, s}, ScalarType::Int);
      t = &made;
    }
    check(module_->forward({*t, start_, k_, v_}).ok(), "forward");
    check(cudaMemcpyAsync(b_.k_in, b_.k_out, b_.cache_bytes, cudaMemcpyDeviceToDevice, b_.stream), "copy back");
    check(cudaMemcpyAsync(b_.v_in, b_.v_out, b_.cache_bytes, cudaMemcpyDeviceToDevice, b_.stream), "copy back");
  }

  double load_ms = 0, device_bytes = 0;

 private:
  Buffers& b_;
  std::unique_ptr<Module> module_;
  TensorPtr start_, k_, v_;
  std::vector<TensorPtr> tokens_;
};

// Tokens from pageable memory (the copy has read them when it returns) and the position.
void set_start(Buffers& b, int32_t start);
void set_tokens(Buffers& b, const int32_t* tokens, int32_t n, int32_t start) {
  check(cudaMemcpyAsync(b.tokens, tokens, n * sizeof(int32_t), cudaMemcpyHostToDevice, b.stream), "tokens");
  set_start(b, start);
}
// start_pos = `start` from pinned memory: the copy does not wait for the work queued before it.
void set_start(Buffers& b, int32_t start) {
  check(cudaMemcpyAsync(b.start, b.pinned_starts + start, sizeof(int32_t), cudaMemcpyHostToDevice, b.stream),
        "start_pos");
}
void clear_caches(Buffers& b) {
  check(cudaMemsetAsync(b.k_in, 0, b.cache_bytes, b.stream), "memset");
  check(cudaMemsetAsync(b.v_in, 0, b.cache_bytes, b.stream), "memset");
}
std::vector<float> read_logits(Buffers& b) {
  std::vector<float> out(b.vocab);
  check(cudaMemcpyAsync(out.data(), b.logits, out.size() * sizeof(float), cudaMemcpyDeviceToHost, b.stream), "D2H");
  check(cudaStreamSynchronize(b.stream), "sync");
  return out;
}
float max_abs_diff(const std::vector<float>& a, const float* b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}
int32_t argmax(const float* v, int32_t n) { return static_cast<int32_t>(std::max_element(v, v + n) - v); }
float top2_margin(const float* v, int32_t n) {
  float a = -INFINITY, b = -INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    if (v[i] > a) b = a, a = v[i];
    else if (v[i] > b) b = v[i];
  }
  return a - b;
}

// Correctness of one configuration. The tolerance is the fp16 noise floor: twice the largest distance between eager
// fp16 and eager fp32 over the sequence; TensorRT's fp16 logits must be that close to fp32's at every step.
bool check_configuration(Buffers& b, Runner& r, const Reference& ref, const char* label) {
  const int32_t v = ref.vocab, p = static_cast<int32_t>(ref.prompt.size());
  const int32_t n = static_cast<int32_t>(ref.tokens.size());
  float floor = 0;
  for (int32_t i = 0; i <= n; ++i) {
    float m = 0;
    for (int32_t j = 0; j < v; ++j)
      m = std::max(m, std::fabs(ref.logits16[size_t(i) * v + j] - ref.logits32[size_t(i) * v + j]));
    floor = std::max(floor, m);
  }
  const float tol = 2 * floor;
  // Teacher-forced: eager's tokens fed, logits compared step by step.
  float worst16 = 0, worst32 = 0;
  int agree = 0, near_ties = 0;
  bool ok = true;
  clear_caches(b);
  for (int32_t i = 0; i <= n; ++i) {
    if (i == 0) set_tokens(b, ref.prompt.data(), p, 0);
    else set_tokens(b, &ref.tokens[i - 1], 1, p + i - 1);
    r.step(i == 0 ? p : 1);
    const std::vector<float> got = read_logits(b);
    const float* e16 = &ref.logits16[size_t(i) * v];
    const float d32 = max_abs_diff(got, &ref.logits32[size_t(i) * v]);
    worst16 = std::max(worst16, max_abs_diff(got, e16));
    worst32 = std::max(worst32, d32);
    if (d32 > tol) ok = false;
    if (argmax(got.data(), v) == argmax(e16, v)) ++agree;
    else if (top2_margin(e16, v) < tol) ++near_ties;
    else ok = false;
  }
  // Free-running greedy: the runner's own choices, against eager's.
  clear_caches(b);
  set_tokens(b, ref.prompt.data(), p, 0);
  r.step(p);
  int32_t diverged = -1;
  for (int32_t i = 0; i < n; ++i) {
    const std::vector<float> got = read_logits(b);
    const int32_t token = argmax(got.data(), v);
    if (token != ref.tokens[i]) {
      diverged = i;
      break;
    }
    set_tokens(b, &token, 1, p + i);
    r.step(1);
  }
  float divergence_margin = 0;
  if (diverged >= 0) {
    divergence_margin = top2_margin(&ref.logits16[size_t(diverged) * v], v);
    if (divergence_margin >= tol) ok = false;
  }
  // Prefill-only checks at other lengths.
  float worst_check = 0;
  for (const Check& c : ref.checks) {
    clear_caches(b);
    set_tokens(b, c.prompt.data(), static_cast<int32_t>(c.prompt.size()), 0);
    r.step(static_cast<int32_t>(c.prompt.size()));
    const std::vector<float> got = read_logits(b);
    const float d = max_abs_diff(got, c.logits32.data());
    worst_check = std::max(worst_check, d);
    if (d > tol || argmax(got.data(), v) != argmax(c.logits16.data(), v)) ok = false;
  }
  std::printf(
      "  %-34s %s: max|trt-eager32| %.4f (tolerance %.4f = 2 x eager fp16's %.4f), max|trt-eager16| %.4f; argmax "
      "agrees %d/%d (near ties %d); greedy %s; prefill checks max|diff| %.4f\n",
      label, ok ? "PASS" : "FAIL", worst32, tol, floor, worst16, agree, n + 1, near_ties,
      diverged < 0 ? "tokens equal for the whole sequence"
                   : ("first divergence at step " + std::to_string(diverged) + ", eager's top-2 margin " +
                      std::to_string(divergence_margin))
                         .c_str(),
      worst_check);
  return ok;
}

// Device and host time of `steps` calls of `body`, per call, in microseconds.
struct Timing {
  double host_us, device_us;
};
Timing time_calls(Buffers& b, int steps, const std::function<void()>& body) {
  static cudaEvent_t start = nullptr, stop = nullptr;
  if (start == nullptr) check(cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess, "event");
  check(cudaStreamSynchronize(b.stream), "sync");
  check(cudaEventRecord(start, b.stream), "cudaEventRecord");
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) body();
  const double host = ms_since(t0) * 1000.0 / steps;
  check(cudaEventRecord(stop, b.stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  return {host, 1000.0 * ms / steps};
}

// The hand-written loop: one context on `profile`, shapes and addresses set once, enqueueV3 and the copy-back.
struct RawLoop {
  std::unique_ptr<nvinfer1::ICudaEngine> engine;
  std::unique_ptr<nvinfer1::IExecutionContext> context;
  double load_ms = 0;
  RawLoop(nvinfer1::IRuntime& runtime, const std::string& plan_path, Buffers& b, int profile) {
    std::ifstream in(plan_path, std::ios::binary);
    const std::vector<char> plan((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto t0 = Clock::now();
    engine.reset(runtime.deserializeCudaEngine(plan.data(), plan.size()));
    check(engine != nullptr, "deserializeCudaEngine");
    context.reset(engine->createExecutionContext());
    load_ms = ms_since(t0);
    nvinfer1::Dims one{};
    one.nbDims = 2;
    one.d[0] = one.d[1] = 1;
    check(context->setOptimizationProfileAsync(profile, b.stream) && context->setInputShape("tokens", one) &&
              context->setTensorAddress("tokens", b.tokens) && context->setTensorAddress("start_pos", b.start) &&
              context->setTensorAddress("k_cache", b.k_in) && context->setTensorAddress("v_cache", b.v_in) &&
              context->setTensorAddress("logits", b.logits) && context->setTensorAddress("k_cache_out", b.k_out) &&
              context->setTensorAddress("v_cache_out", b.v_out),
          "setting up the hand-written loop");
  }
  void step(Buffers& b) {
    check(context->enqueueV3(b.stream), "enqueueV3");
    check(cudaMemcpyAsync(b.k_in, b.k_out, b.cache_bytes, cudaMemcpyDeviceToDevice, b.stream), "copy back");
    check(cudaMemcpyAsync(b.v_in, b.v_out, b.cache_bytes, cudaMemcpyDeviceToDevice, b.stream), "copy back");
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <dir> [rounds=7] [check]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const bool check_only = argc > 3 && std::strcmp(argv[3], "check") == 0;
  const Reference ref = read_reference(dir + "/reference.bin");
  const int32_t prompt = static_cast<int32_t>(ref.prompt.size()), steps = static_cast<int32_t>(ref.tokens.size());

  // The caches' shape comes from the plan: [layers, kv heads, T, head dim].
  Logger logger;
  std::unique_ptr<nvinfer1::IRuntime> runtime(nvinfer1::createInferRuntime(logger));
  Buffers b;
  b.vocab = ref.vocab;
  check(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t baseline = used_device_bytes();
  {
    RawLoop probe(*runtime, dir + "/split.plan", b, 0);
    const nvinfer1::Dims d = probe.engine->getTensorShape("k_cache");
    for (int i = 0; i < d.nbDims; ++i) b.cache_shape.push_back(d.d[i]);
    b.max_seq = d.d[2];
  }
  b.cache_bytes = 2;
  for (const auto x : b.cache_shape) b.cache_bytes *= static_cast<size_t>(x);
  check(cudaMalloc(reinterpret_cast<void**>(&b.tokens), b.max_seq * sizeof(int32_t)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&b.start), sizeof(int32_t)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&b.logits), b.vocab * sizeof(float)), "cudaMalloc");
  for (void** p : {&b.k_in, &b.v_in, &b.k_out, &b.v_out}) check(cudaMalloc(p, b.cache_bytes), "cudaMalloc");
  check(cudaMemset(b.tokens, 0, b.max_seq * sizeof(int32_t)) == cudaSuccess && cudaMemset(b.start, 0, 4) == cudaSuccess,
        "memset");
  check(cudaMallocHost(reinterpret_cast<void**>(&b.pinned_starts), (b.max_seq + 1) * sizeof(int32_t)), "cudaMallocHost");
  for (int32_t i = 0; i <= b.max_seq; ++i) b.pinned_starts[i] = i;
  std::printf("caches [%lld, %lld, %lld, %lld] fp16, %.1f MiB each; the runner's buffers %.1f MiB; prompt %d, %d decode "
              "steps\n",
              (long long)b.cache_shape[0], (long long)b.cache_shape[1], (long long)b.cache_shape[2],
              (long long)b.cache_shape[3], mib(static_cast<double>(b.cache_bytes)),
              mib(static_cast<double>(used_device_bytes() - baseline)), prompt, steps);
  etrt::CudaStreamGuard on(b.stream);
  bool ok = true;

  // 1. Correctness, and load time and device memory of each configuration.
  struct Config {
    const char* plan;
    const char* strategy;
    bool graphs;
  };
  const Config configs[] = {{"split", etrt::kStrategySwitch, false},
                            {"split", etrt::kStrategySwitch, true},
                            {"split", etrt::kStrategyContextPerProfile, false},
                            {"split", etrt::kStrategyContextPerProfile, true},
                            {"wide", etrt::kStrategySwitch, false},
                            {"wide", etrt::kStrategySwitch, true}};
  std::printf("correctness against eager PyTorch (prefill %d tokens, %d decode steps):\n", prompt, steps);
  for (const Config& c : configs) {
    const int64_t scratch0 = etrt::testing::counter(etrt::kCounterScratchBytes);
    Runner r(b, dir + "/" + c.plan + ".pte", c.strategy, c.graphs);
    const int64_t scratch = etrt::testing::counter(etrt::kCounterScratchBytes) - scratch0;
    const std::string label = std::string(c.plan) + ".pte, " + c.strategy + (c.graphs ? ", graphs on" : ", graphs off");
    ok = check_configuration(b, r, ref, label.c_str()) && ok;
    std::printf("  %-34s load %.0f ms; device memory %.1f MiB after load (etrt scratch %.1f MiB)\n", "", r.load_ms,
                mib(r.device_bytes), mib(static_cast<double>(scratch)));
  }

  if (check_only) {
    std::printf("llm_bench: %s\n", ok ? "every configuration PASSED" : "a configuration FAILED");
    return ok ? 0 : 1;
  }

  // 2a. Decode: one token at position `prompt`, the caches fed back; raw loops on each plan beside etrt.
  const int decode_steps = 64;
  std::printf("decode step (1 token, caches fed back by two device copies), %d rounds x %d steps, medians:\n", rounds,
              decode_steps);
  {
    std::vector<int32_t> one(1, ref.tokens[0]);
    set_tokens(b, one.data(), 1, prompt);
    const Timing copy = [&] {
      std::vector<Timing> t;
      for (int r = 0; r < rounds; ++r)
        t.push_back(time_calls(b, decode_steps, [&] {
          check(cudaMemcpyAsync(b.k_in, b.k_out, b.cache_bytes, cudaMemcpyDeviceToDevice, b.stream), "copy");
          check(cudaMemcpyAsync(b.v_in, b.v_out, b.cache_bytes, cudaMemcpyDeviceToDevice, b.stream), "copy");
        }));
      std::vector<double> d;
      for (const Timing& x : t) d.push_back(x.device_us);
      return Timing{0, median(d)};
    }();
    RawLoop raw_split(*runtime, dir + "/split.plan", b, 0), raw_wide(*runtime, dir + "/wide.plan", b, 0);
    Runner split_off(b, dir + "/split.pte", etrt::kStrategySwitch, false);
    Runner split_on(b, dir + "/split.pte", etrt::kStrategySwitch, true);
    Runner wide_off(b, dir + "/wide.pte", etrt::kStrategySwitch, false);
    Runner wide_on(b, dir + "/wide.pte", etrt::kStrategySwitch, true);
    const std::vector<std::pair<const char*, std::function<void()>>> ways = {
        {"split plan, raw enqueueV3 loop", [&] { raw_split.step(b); }},
        {"split.pte, Module + etrt", [&] { split_off.step(1); }},
        {"split.pte, + CUDA graphs", [&] { split_on.step(1); }},
        {"wide plan, raw enqueueV3 loop", [&] { raw_wide.step(b); }},
        {"wide.pte, Module + etrt", [&] { wide_off.step(1); }},
        {"wide.pte, + CUDA graphs", [&] { wide_on.step(1); }}};
    for (const auto& w : ways)
      for (int i = 0; i < 8; ++i) w.second();  // first enqueues, captures
    std::vector<std::vector<double>> host(ways.size()), device(ways.size());
    std::vector<double> etrt_raw_host, etrt_raw_device, wide_split_device, wide_split_graphs;
    for (int r = 0; r < rounds; ++r) {
      std::vector<Timing> t;
      for (const auto& w : ways) t.push_back(time_calls(b, decode_steps, w.second));
      for (size_t k = 0; k < ways.size(); ++k) host[k].push_back(t[k].host_us), device[k].push_back(t[k].device_us);
      etrt_raw_host.push_back(t[1].host_us / t[0].host_us);
      etrt_raw_device.push_back(t[1].device_us / t[0].device_us);
      wide_split_device.push_back(t[4].device_us / t[1].device_us);
      wide_split_graphs.push_back(t[5].device_us / t[2].device_us);
    }
    for (size_t k = 0; k < ways.size(); ++k)
      std::printf("  %-32s host %8.1f us, device %8.1f us per step\n", ways[k].first, median(host[k]),
                  median(device[k]));
    std::printf("  the copy-back alone: device %.1f us per step (in every figure above)\n", copy.device_us);
    std::printf("  Module + etrt / raw loop (split plan): host %.3fx, device %.3fx\n", median(etrt_raw_host),
                median(etrt_raw_device));
    std::printf("  wide / split (decode on one wide profile vs its own): %.3fx graphs off, %.3fx graphs on\n",
                median(wide_split_device), median(wide_split_graphs));
  }

  // 2b. Prefill: S tokens at position 0, each waited for.
  std::printf("prefill (S tokens from position 0, waited for), %d rounds, medians:\n", rounds);
  {
    Runner split(b, dir + "/split.pte", etrt::kStrategySwitch, false);
    Runner wide(b, dir + "/wide.pte", etrt::kStrategySwitch, false);
    std::vector<int32_t> zeros(b.max_seq, 1);
    for (int32_t s : {128, 512, 2048}) {
      if (s > b.max_seq) continue;
      set_tokens(b, zeros.data(), s, 0);
      std::vector<double> ts, tw, ratio;
      for (int r = 0; r < rounds + 2; ++r) {
        const Timing a = time_calls(b, 1, [&] { split.step(s); });
        const Timing c = time_calls(b, 1, [&] { wide.step(s); });
        if (r < 2) continue;  // warm-up
        ts.push_back(a.device_us), tw.push_back(c.device_us), ratio.push_back(c.device_us / a.device_us);
      }
      std::printf("  %4d tokens: split (prefill profile) %8.1f us, wide %8.1f us; wide / split %.3fx\n", s,
                  median(ts), median(tw), median(ratio));
    }
  }

  // 2c. A prefill then N decode steps, waited for at the end: the strategies, graphs off and on.
  std::printf("prefill (%d tokens) + %d decode steps, waited for at the end, %d rounds, medians (ms per sequence):\n",
              prompt, steps, rounds);
  {
    std::vector<int32_t> toks(b.max_seq, 1);
    const auto& seq_configs = configs;  // every configuration the checks ran
    std::vector<std::unique_ptr<Runner>> runners;
    for (const Config& c : seq_configs) runners.push_back(std::make_unique<Runner>(b, dir + "/" + c.plan + ".pte", c.strategy, c.graphs));
    set_tokens(b, toks.data(), prompt, 0);  // the same tokens every time: only the positions are set per step
    const auto sequence = [&](Runner& r) {
      const auto t0 = Clock::now();
      set_start(b, 0);
      r.step(prompt);
      for (int32_t i = 0; i < steps; ++i) {
        set_start(b, prompt + i);
        r.step(1);
      }
      check(cudaStreamSynchronize(b.stream), "sync");
      return ms_since(t0);
    };
    for (auto& r : runners) sequence(*r), sequence(*r);
    std::vector<std::vector<double>> t(runners.size());
    for (int r = 0; r < rounds; ++r)
      for (size_t k = 0; k < runners.size(); ++k) t[k].push_back(sequence(*runners[k]));
    const int64_t switches0 = etrt::testing::counter(etrt::kCounterProfileSwitches);
    sequence(*runners[0]);
    const int64_t switches = etrt::testing::counter(etrt::kCounterProfileSwitches) - switches0;
    for (size_t k = 0; k < runners.size(); ++k)
      std::printf("  %-6s %-20s graphs %-3s %9.2f ms%s\n", seq_configs[k].plan, seq_configs[k].strategy,
                  seq_configs[k].graphs ? "on" : "off", median(t[k]),
                  k == 0 ? (" (" + std::to_string(switches) + " profile switches per sequence)").c_str() : "");
  }
  std::printf("llm_bench: %s\n", ok ? "every configuration PASSED" : "a configuration FAILED");
  return ok ? 0 : 1;
}
