// etrt_bench_sessions: N sessions (Modules) of one program in one process, with the engine shared (load option
// share_engine, the default) and with an engine each: the time to load all N (from the file to methods ready to run,
// as a runner loads them), and the engine counters once they are loaded (engines held, their bytes, deserializations).
// Medians of --reps repetitions; the two ways alternate within each repetition, in one process.
//
//   etrt_bench_sessions [--reps R] [--max-sessions M] [--sessions N1,N2,...] [program.pte]
//       N = 1, 8 and 32 sessions, or those --sessions lists (those up to M either way); the program by default: the
//       demo decoder, examples/decoder.pte
//   etrt_bench_gpu_sessions ...      the same built with CUDA (bench/gpu); by default the demo decoder with a
//                                    CUDA-mode engine, decoder_cuda.pte
//   etrt_bench_nvidia_sessions ...   built against NVIDIA's TensorRT (bench/nvidia); the program is required
//
// The CUDA builds add the device memory the N loaded sessions hold (cudaMemGetInfo before the loads and after them,
// before the sessions go): the engines' weights and the contexts made at load. Scratch that a shared pool hands out
// at the first execution is not in it (etrt_bench_gpu_scratch measures that).
//
// docs/design.md, "One engine, many sessions", has the table.

#include <executorch/extension/module/module.h>
#include <executorch/runtime/backend/interface.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#ifdef ETRT_BENCH_GPUFREE
#include "etrt_gpufree/trace.h"
#endif
#include "counters.h"
#include "median.h"
#include "module_loading.h"

#ifdef ETRT_BENCH_DEVICE_MEMORY
#include <cuda_runtime_api.h>
#endif

namespace {

namespace et = ::executorch::runtime;
using ::executorch::extension::Module;

#ifdef ETRT_BENCH_DEVICE_MEMORY
constexpr bool kDeviceMemory = true;
// Device memory in use now, in bytes; exits when CUDA fails.
int64_t device_bytes_in_use() {
  size_t free = 0, total = 0;
  if (cudaDeviceSynchronize() != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
    std::fprintf(stderr, "sessions bench: cudaMemGetInfo failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    std::exit(1);
  }
  return static_cast<int64_t>(total - free);
}
#else
constexpr bool kDeviceMemory = false;
int64_t device_bytes_in_use() { return 0; }
#endif

struct Sample {
  double load_ms = 0;
  int64_t engines = 0, engine_bytes = 0, deserialized = 0;
  int64_t device_bytes = 0;  // held by the loaded sessions (CUDA build only)
};

// Loads `n` Modules of `path`, sharing the engine or not; what it took. Exits on a refusal.
Sample load_sessions(const std::string& path, size_t n, bool share) {
  const int64_t deserialized = etrt::testing::counter(etrt::kCounterEnginesDeserialized);
  const int64_t device_before = device_bytes_in_use();
  std::vector<std::unique_ptr<Module>> sessions;
  sessions.reserve(n);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    sessions.push_back(std::make_unique<Module>(path));
    etrt::clear_last_error();
    const et::Error loaded = etrt::testing::load_with_options(*sessions.back(), {{etrt::kOptionShareEngine, share}});
    if (loaded != et::Error::Ok) {
      std::fprintf(stderr, "sessions bench: loading %s failed (ExecuTorch error %d): %s\n", path.c_str(),
                   static_cast<int>(loaded), etrt::has_last_error() ? etrt::last_error_message() : "not etrt's");
      std::exit(1);
    }
  }
  const auto end = std::chrono::steady_clock::now();
  Sample s;
  s.load_ms = std::chrono::duration<double, std::milli>(end - start).count();
  s.engines = etrt::testing::counter(etrt::kCounterEnginesResident);
  s.engine_bytes = etrt::testing::counter(etrt::kCounterEngineBytes);
  s.deserialized = etrt::testing::counter(etrt::kCounterEnginesDeserialized) - deserialized;
  s.device_bytes = device_bytes_in_use() - device_before;
  return s;  // the sessions go here, untimed
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 9;
  size_t max_sessions = 32;
  std::vector<size_t> counts = {1, 8, 32};
#ifdef ETRT_DEMO_PTE
  std::string path = ETRT_DEMO_PTE;
#else
  std::string path;
#endif
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--max-sessions") == 0 && i + 1 < argc) {
      max_sessions = static_cast<size_t>(std::strtoul(argv[++i], nullptr, 10));
    } else if (std::strcmp(argv[i], "--sessions") == 0 && i + 1 < argc) {
      counts.clear();
      for (const char* p = argv[++i]; *p != '\0';) {
        char* end = nullptr;
        const unsigned long n = std::strtoul(p, &end, 10);
        if (end == p || n == 0) {
          std::fprintf(stderr, "sessions bench: --sessions takes counts above 0 separated by commas, as 1,4,8\n");
          return 2;
        }
        counts.push_back(static_cast<size_t>(n));
        p = *end == ',' ? end + 1 : end;
      }
      if (counts.empty()) {
        std::fprintf(stderr, "sessions bench: --sessions lists no count\n");
        return 2;
      }
    } else {
      path = argv[i];
    }
  }
  if (reps < 1) reps = 1;
  if (path.empty()) {
    std::fprintf(stderr, "usage: %s [--reps R] [--max-sessions M] [--sessions N1,N2,...] program.pte\n", argv[0]);
    return 2;
  }
#ifdef ETRT_BENCH_GPUFREE
  etrt::gpufree::set_tracing_enabled(false);
#endif
  (void)load_sessions(path, 1, true);  // warm: the file cache, the allocator, the backend's first load
  std::printf("%s, %d repetitions (medians)\n", path.c_str(), reps);
  std::printf(
      "| sessions | share_engine | load all (ms) | per session (ms) | engines_resident | engine_bytes | "
      "engines_deserialized |%s\n| --- | --- | --- | --- | --- | --- | --- |%s\n",
      kDeviceMemory ? " device memory (MiB) |" : "", kDeviceMemory ? " --- |" : "");
  for (size_t n : counts) {
    if (n > max_sessions) continue;
    std::vector<double> ms[2];
    Sample last[2];
    for (int r = 0; r < reps; ++r) {
      for (int k = 0; k < 2; ++k) {
        const bool share = (r + k) % 2 == 0;  // alternate which way goes first
        last[share] = load_sessions(path, n, share);
        ms[share].push_back(last[share].load_ms);
      }
    }
    for (int share = 1; share >= 0; --share) {
      const double m = etrt::testing::median(ms[share]);
      std::printf("| %zu | %s | %.3f | %.3f | %lld | %lld | %lld |", n, share ? "on" : "off", m,
                  m / static_cast<double>(n), static_cast<long long>(last[share].engines),
                  static_cast<long long>(last[share].engine_bytes), static_cast<long long>(last[share].deserialized));
      if (kDeviceMemory) std::printf(" %.1f |", static_cast<double>(last[share].device_bytes) / (1 << 20));
      std::printf("\n");
    }
  }
  return 0;
}
