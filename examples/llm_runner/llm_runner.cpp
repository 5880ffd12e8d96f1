// An LLM-style runner on ExecuTorch's Module API, over the demo decoder
// (decoder_model.h): one prefill over the prompt, then one-token decode steps,
// greedy. The .pte's TensorRT delegate carries a decode profile and a prefill
// profile over one set of weights; etrt picks one per execution.
//
// The runner owns the KV caches: it passes them to every call as the method's
// k_cache and v_cache inputs, and the engine writes each step's keys and
// values into them in place (the blob's aliased_io), so every decode step
// attends over what the prefill and the earlier steps wrote.
//
// Each run loads the model under one profile strategy (load option
// profile_strategy: switch or context_per_profile) and selects profiles one
// way: explicit pins (etrt::OptimizationProfileGuard, prefill profile for the
// prompt, decode profile for each step) or automatic selection from the input
// shapes. By default all four combinations run, each with fresh caches; they
// must produce the same tokens.
//
// usage: etrt_llm_runner <model.pte> [prompt_tokens=48] [decode_steps=8]
//            [--strategy switch|context_per_profile|both] [--select pin|auto|both] [--dump <file>] [--quiet]
//
// --dump writes every step of every run as JSON: the tokens fed, start_pos, the profile used, every logit row
// and the token picked (tests/python/test_decoder_demo.py checks them against NumPy).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/error.h>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "decoder_dump.h"

namespace {

constexpr int32_t kDecodeProfile = 0;   // tokens [1, 1]
constexpr int32_t kPrefillProfile = 1;  // tokens [1, 32..2048]

using executorch::aten::ScalarType;
using executorch::extension::from_blob;
using executorch::extension::Module;
using executorch::runtime::Error;
using executorch::runtime::EValue;

// What went wrong: etrt's explanation when an etrt delegate refused something during the call (clear_last_error
// was called before it), else ExecuTorch's error code.
const char* explain(Error error) {
  return etrt::has_last_error() ? etrt::last_error_message() : executorch::runtime::to_string(error);
}

// 256-byte-aligned, zeroed floats: TensorRT binds IO at 256-byte-aligned addresses, so etrt binds the caches in
// place instead of staging them.
struct AlignedFree {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{256}); }
};
using Cache = std::unique_ptr<float[], AlignedFree>;
Cache make_cache(size_t n) {
  Cache cache(static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t{256})));
  std::memset(cache.get(), 0, n * sizeof(float));
  return cache;
}

using Step = etrt::demo::DumpStep;
using Run = etrt::demo::DumpRun;

struct Options {
  const char* model = nullptr;
  int64_t prompt_tokens = 48;
  int64_t decode_steps = 8;
  std::vector<const char*> strategies = {etrt::kStrategySwitch, etrt::kStrategyContextPerProfile};
  std::vector<bool> automatic = {false, true};
  const char* dump = nullptr;
  bool quiet = false;
};

// The method's shapes, read from the program.
struct Geometry {
  int64_t context = 0, head_dim = 0, vocab = 0;
  bool write_back = false;  // the method returns k_cache_out and v_cache_out after logits
};

bool read_geometry(Module& module, Geometry* g) {
  auto meta = module.method_meta("forward");
  if (!meta.ok()) {
    std::fprintf(stderr, "reading the method's metadata failed: %s\n", executorch::runtime::to_string(meta.error()));
    return false;
  }
  if (meta->num_inputs() != 4 || (meta->num_outputs() != 1 && meta->num_outputs() != 3)) {
    std::fprintf(stderr,
                 "this runner drives the demo decoder (inputs tokens, start_pos, k_cache, v_cache; outputs logits "
                 "[, k_cache_out, v_cache_out]); the model has %zu inputs and %zu outputs\n",
                 meta->num_inputs(), meta->num_outputs());
    return false;
  }
  auto cache = meta->input_tensor_meta(2);
  auto logits = meta->output_tensor_meta(0);
  if (!cache.ok() || !logits.ok() || cache->sizes().size() != 3 || logits->sizes().size() != 3) {
    std::fprintf(stderr, "the model's k_cache or logits is not three-dimensional\n");
    return false;
  }
  g->context = cache->sizes()[1];
  g->head_dim = cache->sizes()[2];
  g->vocab = logits->sizes()[2];
  g->write_back = meta->num_outputs() == 3;
  return true;
}

// Greedy choice: the vocabulary entry with the largest logit at the last position.
int64_t argmax_last_row(const std::vector<float>& logits, int64_t vocab) {
  const float* last = logits.data() + logits.size() - static_cast<size_t>(vocab);
  int64_t best = 0;
  for (int64_t v = 1; v < vocab; ++v)
    if (last[v] > last[best]) best = v;
  return best;
}

class Decoder {
 public:
  Decoder(Module& module, const Geometry& g, const Options& options)
      : module_(module),
        g_(g),
        options_(options),
        cache_elements_(static_cast<size_t>(g.context * g.head_dim)),
        k_cache_(make_cache(cache_elements_)),
        v_cache_(make_cache(cache_elements_)) {}

  // Runs `step` (tokens at start_pos) with the request in force on this thread and records what happened.
  bool forward(Step* step) {
    etrt::ExecutionReport report;
    auto tokens = from_blob(step->tokens.data(), {1, static_cast<int32_t>(step->tokens.size())}, ScalarType::Long);
    auto start_pos = from_blob(&step->start_pos, {1}, ScalarType::Long);
    const auto rows = static_cast<int32_t>(g_.context), width = static_cast<int32_t>(g_.head_dim);
    auto k_cache = from_blob(k_cache_.get(), {1, rows, width}, ScalarType::Float);
    auto v_cache = from_blob(v_cache_.get(), {1, rows, width}, ScalarType::Float);
    etrt::clear_last_error();
    auto result = module_.forward({tokens, start_pos, k_cache, v_cache});
    if (!result.ok()) {
      std::fprintf(stderr, "%s at start_pos %lld (%zu tokens) failed: %s\n", step->phase,
                   static_cast<long long>(step->start_pos), step->tokens.size(), explain(result.error()));
      return false;
    }
    const auto& logits = result.get()[0].toTensor();
    const float* data = logits.const_data_ptr<float>();
    step->logits.assign(data, data + logits.numel());
    step->next = argmax_last_row(step->logits, g_.vocab);
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
    if (g_.write_back && !check_write_back(result.get(), *step)) return false;
    if (!options_.quiet)
      std::printf("  %-8s start_pos=%-5lld tokens=%-5zu profile=%d%-11s -> next token %lld\n", step->phase,
                  static_cast<long long>(step->start_pos), step->tokens.size(), step->profile,
                  step->switched ? " (switched)" : "", static_cast<long long>(step->next));
    return true;
  }

 private:
  // The write-back outputs are copies of the caches the engine just updated in place.
  bool check_write_back(const std::vector<EValue>& outputs, const Step& step) {
    const float* caches[] = {k_cache_.get(), v_cache_.get()};
    for (size_t i = 0; i < 2; ++i) {
      const auto& out = outputs[i + 1].toTensor();
      if (static_cast<size_t>(out.numel()) != cache_elements_ ||
          std::memcmp(out.const_data_ptr<float>(), caches[i], cache_elements_ * sizeof(float)) != 0) {
        std::fprintf(stderr, "%s at start_pos %lld: write-back output %s differs from the cache updated in place\n",
                     step.phase, static_cast<long long>(step.start_pos), i == 0 ? "k_cache_out" : "v_cache_out");
        return false;
      }
    }
    return true;
  }

  Module& module_;
  const Geometry& g_;
  const Options& options_;
  size_t cache_elements_;
  Cache k_cache_, v_cache_;
};

// Prefill, then decode steps, each step feeding the token the previous one picked. Pins each phase's profile unless
// an automatic guard is in force (run_one).
bool generate(Decoder& decoder, const Options& options, const std::vector<int64_t>& prompt, bool automatic,
              Run* run) {
  Step prefill("prefill", 0, prompt);
  if (automatic) {
    if (!decoder.forward(&prefill)) return false;
  } else {
    etrt::OptimizationProfileGuard pin(kPrefillProfile);
    if (!decoder.forward(&prefill)) return false;
  }
  run->steps.push_back(std::move(prefill));
  for (int64_t i = 0; i < options.decode_steps; ++i) {
    const Step& last = run->steps.back();
    Step decode("decode", last.start_pos + static_cast<int64_t>(last.tokens.size()), {last.next});
    if (automatic) {
      if (!decoder.forward(&decode)) return false;
    } else {
      etrt::OptimizationProfileGuard pin(kDecodeProfile);
      if (!decoder.forward(&decode)) return false;
    }
    run->steps.push_back(std::move(decode));
  }
  return true;
}

bool run_one(const Options& options, const std::vector<int64_t>& prompt, bool automatic, Run* run) {
  if (!options.quiet)
    std::printf("== profile_strategy=%s, %s\n", run->strategy.c_str(),
                automatic ? "automatic selection (OptimizationProfileGuard::automatic)"
                          : "pinned profiles (OptimizationProfileGuard)");
  executorch::runtime::BackendOptions<1> backend_options;
  executorch::runtime::LoadBackendOptionsMap map;
  if (backend_options.set_option(etrt::kOptionProfileStrategy, run->strategy.c_str()) != Error::Ok ||
      map.set_options(etrt::kBackendId, backend_options.view()) != Error::Ok) {
    std::fprintf(stderr, "could not set the load option %s\n", etrt::kOptionProfileStrategy);
    return false;
  }
  Module module(options.model);
  etrt::clear_last_error();
  Error status = module.load(map);
  if (status == Error::Ok) status = module.load_forward();
  if (status != Error::Ok) {
    std::fprintf(stderr, "loading %s failed: %s\n", options.model, explain(status));
    return false;
  }
  Geometry g;
  if (!read_geometry(module, &g)) return false;
  if (static_cast<int64_t>(prompt.size()) + options.decode_steps > g.context) {
    std::fprintf(stderr, "a %zu-token prompt and %lld decode steps need %lld cache rows; the model's caches hold %lld\n",
                 prompt.size(), static_cast<long long>(options.decode_steps),
                 static_cast<long long>(static_cast<int64_t>(prompt.size()) + options.decode_steps),
                 static_cast<long long>(g.context));
    return false;
  }
  Decoder decoder(module, g, options);
  if (automatic) {
    // Let the input shapes choose: [1, S >= 32] fits only the prefill profile, [1, 1] only the decode profile.
    auto any = etrt::OptimizationProfileGuard::automatic();
    return generate(decoder, options, prompt, true, run);
  }
  return generate(decoder, options, prompt, false, run);
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s <model.pte> [prompt_tokens=48] [decode_steps=8] [--strategy switch|context_per_profile|both]\n"
               "           [--select pin|auto|both] [--dump <file>] [--quiet]\n",
               argv0);
  return 2;
}

bool parse_count(const char* text, int64_t min, int64_t* out) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < min) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--strategy" && has_value) {
      const std::string v = argv[++i];
      if (v == "both") options.strategies = {etrt::kStrategySwitch, etrt::kStrategyContextPerProfile};
      else if (v == etrt::kStrategySwitch) options.strategies = {etrt::kStrategySwitch};
      else if (v == etrt::kStrategyContextPerProfile) options.strategies = {etrt::kStrategyContextPerProfile};
      else return usage(argv[0]);
    } else if (arg == "--select" && has_value) {
      const std::string v = argv[++i];
      if (v == "both") options.automatic = {false, true};
      else if (v == "pin") options.automatic = {false};
      else if (v == "auto") options.automatic = {true};
      else return usage(argv[0]);
    } else if (arg == "--dump" && has_value) {
      options.dump = argv[++i];
    } else if (arg == "--quiet") {
      options.quiet = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage(argv[0]);
    } else if (positional == 0) {
      options.model = argv[i];
      ++positional;
    } else if (positional == 1) {
      if (!parse_count(argv[i], 1, &options.prompt_tokens)) return usage(argv[0]);
      ++positional;
    } else if (positional == 2) {
      if (!parse_count(argv[i], 0, &options.decode_steps)) return usage(argv[0]);
      ++positional;
    } else {
      return usage(argv[0]);
    }
  }
  if (options.model == nullptr) return usage(argv[0]);

  // A fixed prompt of in-vocabulary ids (the demo's vocabulary has 64 entries).
  std::vector<int64_t> prompt(static_cast<size_t>(options.prompt_tokens));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int64_t>((i * 5 + 1) % 64);

  etrt::ExecutionReport whole;
  std::vector<Run> runs;
  for (const char* strategy : options.strategies) {
    for (bool automatic : options.automatic) {
      runs.push_back(Run{strategy, automatic ? "auto" : "pin", {}});
      if (!run_one(options, prompt, automatic, &runs.back())) return 1;
    }
  }

  // Every run computes the same thing; only the way profiles are chosen and changed differs.
  const Run& first = runs.front();
  bool same_tokens = true;
  float max_difference = 0.0f;
  for (const Run& run : runs) {
    for (size_t s = 0; s < run.steps.size(); ++s) {
      same_tokens = same_tokens && run.steps[s].next == first.steps[s].next;
      for (size_t i = 0; i < run.steps[s].logits.size(); ++i) {
        const float d = run.steps[s].logits[i] - first.steps[s].logits[i];
        max_difference = std::max(max_difference, d < 0 ? -d : d);
      }
    }
  }
  std::printf("generated:");
  for (size_t s = 0; s < first.steps.size(); ++s) std::printf(" %lld", static_cast<long long>(first.steps[s].next));
  std::printf("\n%zu run(s), executions=%zu, profile changes=%zu; %s (largest logit difference between runs %g)\n",
              runs.size(), whole.total(), whole.switches(),
              same_tokens ? "every run generated the same tokens" : "THE RUNS GENERATED DIFFERENT TOKENS",
              static_cast<double>(max_difference));
  int64_t vocab = 0;
  if (!first.steps.empty() && !first.steps[0].tokens.empty())
    vocab = static_cast<int64_t>(first.steps[0].logits.size() / first.steps[0].tokens.size());
  std::string error;
  if (options.dump != nullptr && !etrt::demo::write_dump(options.dump, options.model, vocab, runs, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  return same_tokens ? 0 : 1;
}
