// etrt_bench_load: what loading a program costs, from the file to a method ready to run, through ExecuTorch's
// Module (the runner's path): reading the .pte, the blob's metadata, the engine's bytes, the backend's init
// (bindings, profiles, aliases, contexts and their scratch). One row per program of make_load_ptes.cpp; the
// programs above the limits are refused, and the row times the refusal. Two layers are also timed alone, on the
// same bytes: the blob reader (parse_blob) and the engine's deserializer (through etrt's TensorRT adapter, as the
// backend calls it). `bench/run_bench.sh load` runs it with repetitions and prints the medians (docs/limits.md
// has the table).

#include <benchmark/benchmark.h>

#include <executorch/extension/module/module.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "engine/tensorrt/tensorrt_engine.h"
#include "etrt/report.h"
#include "etrt_gpufree/trace.h"

namespace {

namespace et = ::executorch::runtime;
using executorch::extension::Module;

void BM_Load(benchmark::State& state, const char* name, bool loads) {
  etrt::gpufree::set_tracing_enabled(false);
  const std::string path = std::string(ETRT_LOAD_PTE_DIR) + "/" + name + ".pte";
  for (auto _ : state) {
    auto module = std::make_unique<Module>(path);
    const et::Error error = module->load_method("forward");
    if ((error == et::Error::Ok) != loads) {
      // Also what keeps libetrt (and its backend registration) linked in.
      state.SkipWithError(loads ? etrt::last_error_message() : "the program loaded but should be refused");
      break;
    }
    state.PauseTiming();
    module.reset();  // unloading is not timed
    state.ResumeTiming();
  }
  state.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(path));
}

std::vector<uint8_t> blob_bytes(const char* name) {
  std::ifstream in(std::string(ETRT_LOAD_PTE_DIR) + "/" + name + ".blob", std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The blob reader alone: header, metadata JSON, validate_metadata.
void BM_ParseBlob(benchmark::State& state, const char* name, bool parses) {
  const std::vector<uint8_t> blob = blob_bytes(name);
  for (auto _ : state) {
    etrt::blob::ParsedBlob parsed;
    etrt::Diagnostic why;
    if ((etrt::blob::parse_blob(blob.data(), blob.size(), &parsed, why) == etrt::Error::Ok) != parses) {
      state.SkipWithError(parses ? why.c_str() : "the blob parsed but should be refused");
      break;
    }
    benchmark::DoNotOptimize(parsed);
  }
  state.counters["blob_bytes"] = static_cast<double>(blob.size());
}

// The engine's deserializer alone (deserializeCudaEngine through etrt's adapter): decode, validate, plan.
void BM_DeserializeEngine(benchmark::State& state, const char* name, bool loads) {
  etrt::gpufree::set_tracing_enabled(false);
  const std::vector<uint8_t> blob = blob_bytes(name);
  etrt::blob::ParsedBlob parsed;
  etrt::Diagnostic why;
  if (etrt::blob::parse_blob(blob.data(), blob.size(), &parsed, why) != etrt::Error::Ok) {
    state.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : state) {
    std::unique_ptr<etrt::engine::Engine> engine;
    const etrt::Error loaded = etrt::engine::tensorrt::deserialize(parsed.engine, parsed.engine_size, 0, &engine, why);
    if ((loaded == etrt::Error::Ok) != loads) {
      state.SkipWithError(loads ? why.c_str() : "the engine loaded but should be refused");
      break;
    }
    state.PauseTiming();
    engine.reset();
    state.ResumeTiming();
  }
  state.counters["engine_bytes"] = static_cast<double>(parsed.engine_size);
}

BENCHMARK_CAPTURE(BM_Load, realistic, "realistic", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Load, bindings_8192, "bindings_8192", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Load, bindings_16384, "bindings_16384", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Load, bindings_100000, "bindings_100000", false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Load, tensors_16384, "tensors_16384", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Load, tensors_65536, "tensors_65536", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Load, tensors_100000, "tensors_100000", false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ParseBlob, bindings_8192, "bindings_8192", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ParseBlob, bindings_16384, "bindings_16384", true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ParseBlob, bindings_100000, "bindings_100000", false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DeserializeEngine, bindings_8192, "bindings_8192", true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DeserializeEngine, bindings_16384, "bindings_16384", true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DeserializeEngine, tensors_16384, "tensors_16384", true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DeserializeEngine, tensors_65536, "tensors_65536", true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_DeserializeEngine, tensors_100000, "tensors_100000", false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
