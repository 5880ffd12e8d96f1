// "Auto by default?": LLM-shaped request traces through ExecuTorch's Module
// and etrt's backend, under four ways a runner can get a profile chosen and
// etrt's two profile strategies. docs/auto-by-default.md states the model and
// the results; `bench/run_bench.sh traces` runs it.
//
// A trace is a list of requests, each a prompt (one prefill execution of
// input_ids [1, P]) followed by D decode executions of [1, 1]. Prompt lengths
// are log-normal (median 256 tokens, sigma 1) clamped to [32, 2048]; decode
// lengths are geometric with mean 64 (at least 1; --decode-mean changes it).
// Generated from a fixed seed with a portable generator (mt19937_64, own
// transforms), so every platform gets the same trace.
//
// Requests are served `concurrency` at a time, round-robin, one execution per
// turn: each active request in turn runs its next step (its prefill, or one
// decode step); a finished request's slot goes to the next request in the
// queue, whose prefill then lands between other requests' decode steps. A
// request whose execution fails is dropped (a runner would report the error).
//
// Runners:
//   pins            prefill under OptimizationProfileGuard(1), decode under (0)
//   auto sticky     no guard; load option auto_select_profiles + auto_policy sticky_first_fit
//   auto first-fit  no guard; load option auto_select_profiles + auto_policy first_fit
//   default         no guard, no option: profile 0 (today's default)
// each with profile_strategy switch and context_per_profile.
//
// Time per execution = host time measured around Module::forward() (wall
// clock; includes the engine's modelled switch cost, busy-waited inside
// setOptimizationProfileAsync) + modelled compute, added here because the
// GPU-free NvInfer engine's own compute is not a GPU's:
//   decode step on profile 0 (its own):      4.97 ms
//   decode step on profile 1 (prefill's):    6.42 ms
//   prefill of P tokens (always profile 1):  6.42 ms + 0.03 ms * P
// A failed execution adds only its host time.
//
// usage: etrt_bench_traces [--requests N] [--seed S] [--decode-mean M] [--repetitions R] [--concurrency C]...
//        (defaults: 64 requests, seed 20250101, decode mean 64, 5 repetitions, concurrency 4 then 1)

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "module_loading.h"

namespace {

namespace et = ::executorch::runtime;
using executorch::aten::ScalarType;
using executorch::extension::Module;

// ---- the model's constants ----
constexpr double kDecodeOwnMs = 4.97;        // decode step on the decode profile
constexpr double kDecodeOnPrefillMs = 6.42;  // decode step on the prefill profile
constexpr double kPrefillBaseMs = 6.42;
constexpr double kPrefillPerTokenMs = 0.03;
constexpr int64_t kMinPrompt = 32, kMaxPrompt = 2048;
constexpr double kPromptMedian = 256.0, kPromptSigma = 1.0;
constexpr int32_t kDecodeProfile = 0, kPrefillProfile = 1;
constexpr double kPi = 3.14159265358979323846;

struct Request {
  int64_t prompt;
  int64_t decode;
};

// Uniform in (0, 1) from 53 random bits; mt19937_64's output is fixed by the standard, unlike std's distributions.
double uniform(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }

std::vector<Request> make_trace(int32_t n, uint64_t seed, double decode_mean) {
  std::mt19937_64 rng(seed);
  std::vector<Request> trace;
  const double p = 1.0 / decode_mean;
  for (int32_t i = 0; i < n; ++i) {
    const double u1 = uniform(rng), u2 = uniform(rng), u3 = uniform(rng);
    const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);  // Box-Muller
    const double prompt = std::exp(std::log(kPromptMedian) + kPromptSigma * normal);
    const auto clamped = std::clamp<int64_t>(std::llround(prompt), kMinPrompt, kMaxPrompt);
    // Geometric on {1, 2, ...} with mean 1/p, by inversion.
    const auto decode = static_cast<int64_t>(std::ceil(std::log(u3) / std::log1p(-p)));
    trace.push_back({clamped, std::max<int64_t>(decode, 1)});
  }
  return trace;
}

enum class Runner { kPins, kAutoSticky, kAutoFirstFit, kDefault };
const char* runner_name(Runner r) {
  switch (r) {
    case Runner::kPins:
      return "pins";
    case Runner::kAutoSticky:
      return "auto sticky";
    case Runner::kAutoFirstFit:
      return "auto first-fit";
    case Runner::kDefault:
      return "default (profile 0)";
  }
  return "?";
}

struct RunResult {
  int64_t requests_ok = 0, requests_failed = 0;
  int64_t executions = 0, failed_executions = 0;
  int64_t profile_changes = 0;    // executions the delegate reported as switched (ExecutionRecord::switched)
  int64_t decode_on_prefill = 0;  // decode steps that ran on the prefill profile
  double host_ms = 0;             // measured around forward(), switch busy-waits included
  double compute_ms = 0;          // modelled
  std::string first_error;        // etrt::last_error_message() of the first refusal
  double total_ms() const { return host_ms + compute_ms; }
  bool same_counts(const RunResult& o) const {
    return requests_ok == o.requests_ok && requests_failed == o.requests_failed && executions == o.executions &&
           failed_executions == o.failed_executions && profile_changes == o.profile_changes &&
           decode_on_prefill == o.decode_on_prefill;
  }
};

std::unique_ptr<Module> load(const std::string& path, Runner runner, const char* strategy) {
  etrt::testing::LoadOptions options = {{etrt::kOptionProfileStrategy, strategy}};
  if (runner == Runner::kAutoSticky || runner == Runner::kAutoFirstFit) {
    options.emplace_back(etrt::kOptionAutoSelect, true);
    options.emplace_back(etrt::kOptionAutoPolicy,
                         runner == Runner::kAutoSticky ? etrt::kPolicyStickyFirstFit : etrt::kPolicyFirstFit);
  }
  et::Error status = et::Error::Ok;
  auto module = etrt::testing::load_module(path, options, &status);
  if (status != et::Error::Ok) return nullptr;
  return module;
}

RunResult run_trace(Module& module, Runner runner, const std::vector<Request>& trace, int32_t concurrency) {
  static std::vector<int64_t> ids = [] {
    std::vector<int64_t> v(static_cast<size_t>(kMaxPrompt));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i % 61);
    return v;
  }();
  struct Slot {
    size_t request;
    int64_t decoded;  // -1: prefill not yet run
  };
  RunResult r;
  std::deque<size_t> queue;
  for (size_t i = 0; i < trace.size(); ++i) queue.push_back(i);
  std::vector<Slot> active;
  const auto admit = [&] {
    while (static_cast<int32_t>(active.size()) < concurrency && !queue.empty()) {
      active.push_back({queue.front(), -1});
      queue.pop_front();
    }
  };
  admit();
  size_t turn = 0;
  while (!active.empty()) {
    if (turn >= active.size()) turn = 0;
    Slot& slot = active[turn];
    const Request& req = trace[slot.request];
    const bool prefill = slot.decoded < 0;
    const int64_t tokens = prefill ? req.prompt : 1;
    auto input = executorch::extension::from_blob(ids.data(), {1, static_cast<executorch::aten::SizesType>(tokens)},
                                                  ScalarType::Long);
    etrt::ExecutionReport report;
    bool ok;
    const auto start = std::chrono::steady_clock::now();
    if (runner == Runner::kPins) {
      etrt::OptimizationProfileGuard pin(prefill ? kPrefillProfile : kDecodeProfile);
      ok = module.forward(input).ok();
    } else {
      ok = module.forward(input).ok();
    }
    r.host_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++r.executions;
    const bool recorded = report.total() == 1;
    const int32_t profile = recorded ? report.entries()[0].profile : -1;
    r.profile_changes += recorded && report.entries()[0].switched;
    ok = ok && recorded && report.entries()[0].ok;
    if (ok) {
      if (prefill) {
        r.compute_ms += kPrefillBaseMs + kPrefillPerTokenMs * static_cast<double>(tokens);
      } else {
        r.compute_ms += profile == kDecodeProfile ? kDecodeOwnMs : kDecodeOnPrefillMs;
        r.decode_on_prefill += profile == kPrefillProfile;
      }
    } else {
      ++r.failed_executions;
      if (r.first_error.empty()) r.first_error = etrt::last_error_message();
    }
    const bool done = !ok || ++slot.decoded >= req.decode;
    if (done) {
      (ok ? r.requests_ok : r.requests_failed) += 1;
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(turn));
      admit();  // the newcomer joins at the end of the round
    } else {
      ++turn;
    }
  }
  return r;
}

// ExecuTorch logs every refusal; the tables count them, and one message per table is printed below it.
void drop_log_message(et_timestamp_t, et_pal_log_level_t, const char*, const char*, size_t, const char*, size_t) {}

struct Config {
  Runner runner;
  const char* strategy;
};

int usage() {
  std::fprintf(stderr,
               "usage: etrt_bench_traces [--requests N] [--seed S] [--decode-mean M] [--repetitions R] "
               "[--concurrency C]... [--pte-dir DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int32_t requests = 64, repetitions = 5;
  double decode_mean = 64.0;
  uint64_t seed = 20250101;
  std::vector<int32_t> concurrencies;
  std::string dir = ETRT_TRACE_PTE_DIR;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "--requests")
      requests = std::atoi(v);
    else if (a == "--seed")
      seed = std::strtoull(v, nullptr, 10);
    else if (a == "--repetitions")
      repetitions = std::atoi(v);
    else if (a == "--concurrency")
      concurrencies.push_back(std::atoi(v));
    else if (a == "--decode-mean")
      decode_mean = std::atof(v);
    else if (a == "--pte-dir")
      dir = v;
    else
      return usage();
  }
  if (concurrencies.empty()) concurrencies = {4, 1};
  if (requests < 1 || repetitions < 1 || !(decode_mean >= 1.0)) return usage();
  for (const int32_t c : concurrencies)
    if (c < 1) return usage();
  executorch::runtime::runtime_init();
  et::register_pal(et::PalImpl::create(drop_log_message, __FILE__));

  const std::vector<Request> trace = make_trace(requests, seed, decode_mean);
  int64_t prompt_tokens = 0, decode_steps = 0;
  std::vector<int64_t> prompts;
  for (const Request& r : trace) {
    prompt_tokens += r.prompt;
    decode_steps += r.decode;
    prompts.push_back(r.prompt);
  }
  std::sort(prompts.begin(), prompts.end());
  std::printf(
      "Trace: %d requests (seed %llu): prompts log-normal, median %.0f, sigma %.1f, clamped to [%lld, %lld] "
      "(here: min %lld, median %lld, max %lld, %lld tokens in all); decode lengths geometric, mean %.0f "
      "(here: %lld steps in all, mean %.1f).\n",
      requests, static_cast<unsigned long long>(seed), kPromptMedian, kPromptSigma, static_cast<long long>(kMinPrompt),
      static_cast<long long>(kMaxPrompt), static_cast<long long>(prompts.front()),
      static_cast<long long>(prompts[prompts.size() / 2]), static_cast<long long>(prompts.back()),
      static_cast<long long>(prompt_tokens), decode_mean, static_cast<long long>(decode_steps),
      static_cast<double>(decode_steps) / requests);
  std::printf(
      "Modelled compute: decode %.2f ms/token on profile 0, %.2f ms/token on profile 1; prefill %.2f ms + "
      "%.2f ms/token. Host time measured (wall clock, median of %d runs), switch cost busy-waited by the "
      "engine.\n",
      kDecodeOwnMs, kDecodeOnPrefillMs, kPrefillBaseMs, kPrefillPerTokenMs, repetitions);

  const Config configs[] = {
      {Runner::kPins, etrt::kStrategySwitch},         {Runner::kPins, etrt::kStrategyContextPerProfile},
      {Runner::kAutoSticky, etrt::kStrategySwitch},   {Runner::kAutoSticky, etrt::kStrategyContextPerProfile},
      {Runner::kAutoFirstFit, etrt::kStrategySwitch}, {Runner::kAutoFirstFit, etrt::kStrategyContextPerProfile},
      {Runner::kDefault, etrt::kStrategySwitch},      {Runner::kDefault, etrt::kStrategyContextPerProfile},
  };
  struct Layout {
    const char* name;
    const char* title;
  };
  const Layout layouts[] = {
      {"disjoint", "profile 0 = decode [1, 1], profile 1 = prefill [1, 32..2048]"},
      {"overlap", "profile 0 = decode [1, 1], profile 1 = prefill [1, 1..2048] (a decode step fits both)"},
  };
  const char* costs[] = {"0p48", "3p6"};
  const char* cost_titles[] = {"0.48 ms", "3.6 ms"};

  bool failed = false;
  for (const Layout& layout : layouts) {
    for (const int32_t concurrency : concurrencies) {
      std::printf(
          "\n### %s engine, %d request%s at a time\n\n%s. Host = measured around forward(), switches "
          "included; total = host + modelled compute; \"vs best\" = total - the lowest total of a runner with "
          "no failure.\n\n",
          layout.name, concurrency, concurrency == 1 ? "" : "s", layout.title);
      std::printf(
          "| runner | profile_strategy | requests ok / failed | profile changes | switch calls | decode steps "
          "on profile 1 | host ms @ %s | total @ %s | vs best | host ms @ %s | total @ %s | vs best |\n",
          cost_titles[0], cost_titles[0], cost_titles[1], cost_titles[1]);
      std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      RunResult results[2][sizeof(configs) / sizeof(configs[0])];
      for (size_t c = 0; c < 2; ++c) {
        const std::string path = dir + "/" + layout.name + "_" + costs[c] + ".pte";
        for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); ++k) {
          std::vector<RunResult> reps;
          for (int32_t rep = 0; rep < repetitions; ++rep) {
            auto module = load(path, configs[k].runner, configs[k].strategy);
            if (!module) {
              std::fprintf(stderr, "etrt_bench_traces: loading %s failed\n", path.c_str());
              return 1;
            }
            reps.push_back(run_trace(*module, configs[k].runner, trace, concurrency));
            if (!reps.back().same_counts(reps.front())) {
              std::fprintf(stderr, "etrt_bench_traces: %s: counts differ between repetitions\n", path.c_str());
              failed = true;
            }
          }
          std::sort(reps.begin(), reps.end(),
                    [](const RunResult& a, const RunResult& b) { return a.host_ms < b.host_ms; });
          results[c][k] = reps[reps.size() / 2];
        }
      }
      double best[2] = {1e300, 1e300};
      for (size_t c = 0; c < 2; ++c)
        for (const RunResult& r : results[c])
          if (r.requests_failed == 0) best[c] = std::min(best[c], r.total_ms());
      for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); ++k) {
        const RunResult& r = results[0][k];
        const bool by_switch = std::strcmp(configs[k].strategy, etrt::kStrategySwitch) == 0;
        char cells[2][3][48];
        for (size_t c = 0; c < 2; ++c) {
          const RunResult& rc = results[c][k];
          if (!rc.same_counts(r)) failed = true;  // counts may not depend on the switch cost
          std::snprintf(cells[c][0], sizeof(cells[c][0]), "%.1f", rc.host_ms);
          std::snprintf(cells[c][1], sizeof(cells[c][1]), "%.2f s", rc.total_ms() / 1000.0);
          if (rc.requests_failed == 0)
            std::snprintf(cells[c][2], sizeof(cells[c][2]), "+%.0f ms", rc.total_ms() - best[c]);
          else
            std::snprintf(cells[c][2], sizeof(cells[c][2]), "fails");
        }
        std::printf("| %s | %s | %lld / %lld | %lld | %lld | %lld | %s | %s | %s | %s | %s | %s |\n",
                    runner_name(configs[k].runner), configs[k].strategy, static_cast<long long>(r.requests_ok),
                    static_cast<long long>(r.requests_failed), static_cast<long long>(r.profile_changes),
                    static_cast<long long>(by_switch ? r.profile_changes : 0),
                    static_cast<long long>(r.decode_on_prefill), cells[0][0], cells[0][1], cells[0][2], cells[1][0],
                    cells[1][1], cells[1][2]);
      }
      for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); ++k) {
        if (!results[1][k].first_error.empty()) {
          std::printf("\n%s, first refusal: `%s`\n", runner_name(configs[k].runner), results[1][k].first_error.c_str());
          break;
        }
      }
      std::fflush(stdout);
    }
  }
  if (failed) std::fprintf(stderr, "etrt_bench_traces: inconsistent counts (see above)\n");
  return failed ? 1 : 0;
}
