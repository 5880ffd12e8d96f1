// etrt_bench_gpu_decoder_state: what a decode step of a 30-layer decoder copies, and how long it takes, for the
// three ways its KV caches (60 of them, 240 MiB) reach the engine -- side by side in one process (docs/design.md
// decision 18; docs/gpu-testing.md, "Figures"). The programs are one model exported three
// ways by bench/gpu/decoder_state_export.py (ExecuTorch's own exporter; engines of the GPU-free NvInfer's CUDA mode):
//
//   program   the caches are the program's buffers, the delegate's IO placed on cuda:0 (Torch-TensorRT's export
//             shape): ExecuTorch copies every cache to the device before the call and back after it
//   runner    the runner keeps the caches in device memory and passes them as the method's inputs and outputs
//   delegate  etrt owns the caches (delegate_state): the call passes neither
//
// Tokens and logits are host tensors in every case. Each round loads each program afresh, runs the prompt (48
// tokens, prefill profile) and 64 teacher-forced decode steps; a step is forward() until its logits are in host
// memory (the call returns then; a device synchronize closes the timing). Per step: the bytes libetrt copied between
// host and device, counted at the CUDA runtime (copy_counter.cpp; ExecuTorch's device copies go through the CUDA
// allocator libetrt registers), and etrt's own counters. Logits are checked against the eager model's
// (reference.bin) and against the program case's, step for step.
//
//   etrt_bench_gpu_decoder_state [dir] [rounds]   (dir default: $ETRT_DECODER_STATE_DIR, else the build tree's)

#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "copy_counter.h"
#include "counters.h"
#include "etrt/options.h"
#include "etrt/report.h"

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr double kMiB = 1024.0 * 1024.0;
// Against the eager model, relative to its largest logit (30 residual layers make logits of a few hundred; float32
// sums in another order differ in the fourth digit there).
constexpr double kTolerance = 1e-3;
constexpr int32_t kMaxTokens = 64;  // the exported bound of the sequence (decoder_state_export.py, SEQ)

struct Manifest {
  int64_t layers = 0, width = 0, vocab = 0, rows = 0, prompt = 0, decode_steps = 0, cache_bytes = 0;
  std::vector<int64_t> tokens;
  std::vector<float> reference;  // [1 + decode_steps, vocab]
  double largest = 0;            // the largest |logit| of the reference
};

bool read_manifest(const std::string& dir, Manifest* m) {
  std::ifstream in(dir + "/manifest.json");
  if (!in) return false;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return false;
  for (auto [key, field] : {std::pair{"layers", &m->layers},
                            {"width", &m->width},
                            {"vocab", &m->vocab},
                            {"rows", &m->rows},
                            {"prompt", &m->prompt},
                            {"decode_steps", &m->decode_steps},
                            {"cache_bytes", &m->cache_bytes}})
    *field = j.at(key).get<int64_t>();
  m->tokens = j.at("tokens").get<std::vector<int64_t>>();
  std::ifstream ref(dir + "/" + j.at("reference").get<std::string>(), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(ref)), std::istreambuf_iterator<char>());
  m->reference.resize(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(m->reference.size() * sizeof(float)),
            reinterpret_cast<char*>(m->reference.data()));
  for (float v : m->reference) m->largest = std::max(m->largest, std::fabs(static_cast<double>(v)));
  return m->reference.size() == static_cast<size_t>((1 + m->decode_steps) * m->vocab);
}

using etrt::testing::counter;

struct Counters {
  etrt::copy_counter::Bytes copied;
  int64_t staged_in = 0, staged_out = 0, write_back = 0;
  static Counters now() {
    return {etrt::copy_counter::total(), counter(etrt::kCounterHostToDeviceBytes),
            counter(etrt::kCounterDeviceToHostBytes), counter(etrt::kCounterWriteBackBytes)};
  }
  Counters operator-(const Counters& e) const {
    return {copied - e.copied, staged_in - e.staged_in, staged_out - e.staged_out, write_back - e.write_back};
  }
};

// The runner case's caches: device memory the runner owns, passed as inputs and outputs alike.
struct DeviceCaches {
  std::vector<void*> buffers;
  ~DeviceCaches() {
    for (void* p : buffers) cudaFree(p);
  }
  bool make(int64_t count, int64_t bytes) {
    buffers.assign(static_cast<size_t>(count), nullptr);
    for (void*& p : buffers)
      if (cudaMalloc(&p, static_cast<size_t>(bytes)) != cudaSuccess || cudaMemset(p, 0, bytes) != cudaSuccess)
        return false;
    return true;
  }
};

struct Result {
  std::string name;
  std::vector<double> step_us;  // every decode step of every round
  Counters per_step;            // the last decode step's (every step's are equal; checked)
  bool steps_equal = true;
  int64_t state_bytes = 0;
  double max_error = 0;       // against the eager model, relative to its largest logit
  double max_vs_program = 0;  // against the program case's logits
  std::vector<float> logits;  // round 0's, [1 + steps, vocab]
};

bool run_round(const std::string& dir, const Manifest& m, const std::string& name, Result* r, bool first_round) {
  auto module = std::make_unique<Module>(dir + "/" + name + ".pte");
  if (module->load() != et::Error::Ok || module->load_forward() != et::Error::Ok) {
    std::fprintf(stderr, "%s: loading failed: %s\n", name.c_str(), etrt::last_error_message());
    return false;
  }
  const bool runner = name == "runner";
  const int64_t cache_count = 2 * m.layers, one_cache = m.rows * m.width * static_cast<int64_t>(sizeof(float));
  DeviceCaches caches;
  std::vector<float> logits(static_cast<size_t>(kMaxTokens * m.vocab));  // the runner's, for any step
  std::vector<executorch::extension::TensorPtr> cache_tensors;
  if (runner) {
    if (!caches.make(cache_count, one_cache)) {
      std::fprintf(stderr, "runner: cudaMalloc of the caches failed\n");
      return false;
    }
    for (void* p : caches.buffers)
      cache_tensors.push_back(
          from_blob(p, {1, static_cast<int32_t>(m.rows), static_cast<int32_t>(m.width)}, ScalarType::Float));
    bool ok =
        module->set_output(from_blob(logits.data(), {1, kMaxTokens, static_cast<int32_t>(m.vocab)}, ScalarType::Float),
                           0) == et::Error::Ok;
    for (size_t i = 0; i < cache_tensors.size(); ++i)
      ok = ok && module->set_output(cache_tensors[i], i + 1) == et::Error::Ok;
    if (!ok) {
      std::fprintf(stderr, "runner: set_output failed\n");
      return false;
    }
  }
  // One forward() of `count` tokens from `first`, at `position`; *us: the call and the device's work, until the
  // logits are in host memory (the inputs are made before the clock starts).
  auto step = [&](int64_t first, int64_t count, int64_t position, std::vector<float>* last_row, double* us) {
    std::vector<int64_t> ids(m.tokens.begin() + first, m.tokens.begin() + first + count);
    int64_t pos = position;
    // The tensors outlive the call: an EValue only points at its tensor.
    const auto tokens = from_blob(ids.data(), {1, static_cast<int32_t>(count)}, ScalarType::Long);
    const auto at = from_blob(&pos, {1}, ScalarType::Long);
    std::vector<et::EValue> inputs = {tokens, at};
    for (const auto& t : cache_tensors) inputs.emplace_back(t);
    const auto start = std::chrono::steady_clock::now();
    const auto result = module->forward(inputs);
    const bool ok = result.ok() && cudaDeviceSynchronize() == cudaSuccess;
    *us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!ok) {
      std::fprintf(stderr, "%s: forward at position %lld failed: %s\n", name.c_str(), static_cast<long long>(position),
                   etrt::last_error_message());
      return false;
    }
    const float* out = result.get()[0].toTensor().const_data_ptr<float>();
    last_row->assign(out + (count - 1) * m.vocab, out + count * m.vocab);
    return true;
  };
  auto compare = [&](int64_t row, const std::vector<float>& got) {
    for (int64_t v = 0; v < m.vocab; ++v) {
      const double want = m.reference[static_cast<size_t>(row * m.vocab + v)];
      r->max_error = std::max(r->max_error, std::fabs(got[static_cast<size_t>(v)] - want) / m.largest);
    }
    if (first_round) r->logits.insert(r->logits.end(), got.begin(), got.end());
  };
  std::vector<float> row;
  double us = 0;
  if (!step(0, m.prompt, 0, &row, &us)) return false;
  compare(0, row);
  Counters previous_step;
  for (int64_t i = 0; i < m.decode_steps; ++i) {
    const Counters before = Counters::now();
    if (!step(m.prompt + i, 1, m.prompt + i, &row, &us)) return false;
    const Counters used = Counters::now() - before;
    r->step_us.push_back(us);
    if (i > 0)
      r->steps_equal = r->steps_equal && used.copied.host_to_device == previous_step.copied.host_to_device &&
                       used.copied.device_to_host == previous_step.copied.device_to_host &&
                       used.copied.device_to_device == previous_step.copied.device_to_device;
    previous_step = used;
    compare(1 + i, row);
  }
  r->per_step = previous_step;
  r->state_bytes = counter(etrt::kCounterStateBytes);
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string bytes_text(int64_t b) {
  char text[32];
  if (b >= 1024 * 1024)
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(b) / kMiB);
  else
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(b));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("ETRT_DECODER_STATE_DIR");
  const std::string dir = argc > 1 ? argv[1] : (env != nullptr && *env != '\0' ? env : ETRT_DECODER_STATE_DIR);
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  Manifest m;
  if (!read_manifest(dir, &m)) {
    std::fprintf(stderr,
                 "no usable %s/manifest.json: write the programs with\n"
                 "  .venv-export/bin/python bench/gpu/decoder_state_export.py %s\n",
                 dir.c_str(), dir.c_str());
    return 2;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::vector<Result> results;
  for (const char* name : {"program", "runner", "delegate"}) {
    results.emplace_back();
    results.back().name = name;
  }
  // Rounds alternate the cases, so that a slow phase of the machine falls on all three.
  for (int round = 0; round < rounds; ++round)
    for (Result& r : results)
      if (!run_round(dir, m, r.name, &r, round == 0)) return 1;
  const Result& program = results[0];
  for (Result& r : results)
    for (size_t i = 0; i < r.logits.size() && i < program.logits.size(); ++i)
      r.max_vs_program = std::max(r.max_vs_program, std::fabs(static_cast<double>(r.logits[i] - program.logits[i])));

  std::printf(
      "%lld-layer decoder, %lld KV caches of %s (%s in all), %lld-token prompt then %lld decode steps, %d "
      "rounds (%s)\n\n",
      static_cast<long long>(m.layers), static_cast<long long>(2 * m.layers),
      bytes_text(m.cache_bytes / (2 * m.layers)).c_str(), bytes_text(m.cache_bytes).c_str(),
      static_cast<long long>(m.prompt), static_cast<long long>(m.decode_steps), rounds, prop.name);
  std::printf("per decode step (median over every step of every round; bytes libetrt copied, CUDA runtime count)\n");
  std::printf("%-9s %10s %8s %12s %12s %12s | %-31s | %10s %9s %9s\n", "case", "step us", "vs prog", "host->dev",
              "dev->host", "dev->dev", "etrt counters: staged in/out, wb", "state", "eager rel", "vs prog");
  bool ok = true;
  for (const Result& r : results) {
    const double t = median(r.step_us);
    const Counters& c = r.per_step;
    std::printf("%-9s %10.1f %7.3fx %12s %12s %12s | %9s %9s %9s | %10s %9.2g %9.2g%s\n", r.name.c_str(), t,
                t / median(program.step_us), bytes_text(c.copied.host_to_device).c_str(),
                bytes_text(c.copied.device_to_host).c_str(), bytes_text(c.copied.device_to_device).c_str(),
                bytes_text(c.staged_in).c_str(), bytes_text(c.staged_out).c_str(), bytes_text(c.write_back).c_str(),
                bytes_text(r.name == "delegate" ? r.state_bytes : 0).c_str(), r.max_error, r.max_vs_program,
                r.steps_equal ? "" : "  (steps differ in bytes)");
    ok = ok && r.max_error <= kTolerance && r.steps_equal;
  }
  const auto cache_bytes_moved = [](const Result& r) {
    return r.per_step.copied.host_to_device + r.per_step.copied.device_to_host + r.per_step.copied.device_to_device;
  };
  // What the target asks: no cache byte moves in the runner and delegate cases, only tokens, position and logits.
  const int64_t io = static_cast<int64_t>(2 * sizeof(int64_t) + m.vocab * sizeof(float));
  std::printf("\nbytes moved per step: program %s, runner %s, delegate %s (tokens, position and logits: %s)\n",
              bytes_text(cache_bytes_moved(results[0])).c_str(), bytes_text(cache_bytes_moved(results[1])).c_str(),
              bytes_text(cache_bytes_moved(results[2])).c_str(), bytes_text(io).c_str());
  for (size_t k = 1; k < results.size(); ++k) ok = ok && cache_bytes_moved(results[k]) <= io;
  std::printf("%s\n", ok ? "every case: logits match the eager model; runner and delegate move no cache byte"
                         : "FAILED: see the rows above");
  return ok ? 0 : 1;
}
