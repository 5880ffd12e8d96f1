// etrt_bench_gpu_scratch: device memory a program of N single-layer delegates takes, with and without the load option
// shared_scratch (docs/design.md decision 19; issue 22's "Measure"). A memory measurement, not a timing, so a small
// program rather than Google Benchmark: one load per row, measured once.
//
// scratch_n1/8/32.pte (tests/backend/make_fixtures.cpp, --cuda): N CUDA-mode delegates in a chain, each x [1, 4] ->
// 2x (in scratch) + 1, each needing kScratchBenchNeed (64 MiB) of scratch. Per row: cudaMemGetInfo before the load
// and after the load and one forward() (a shared pool gives its memory to the contexts at their first execution),
// the difference, the counter scratch_bytes, and what the rows should show: N needs without the option, one with it.
// Everything else a delegate holds (weights, staging buffers, events, contexts) is in the difference too; it is the
// same with and without the option.
//
//   etrt_bench_gpu_scratch [fixture-dir]   (default: $ETRT_GPU_FIXTURE_DIR, else the build tree's)

#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "counters.h"
#include "etrt/options.h"
#include "etrt/report.h"
#include "fixtures.h"

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr double kMiB = 1024.0 * 1024.0;

// Through the C ABI (counters.h): 32 needs of 64 MiB are above INT_MAX, where get_option's int stops.
int64_t scratch_bytes() { return etrt::testing::counter(etrt::kCounterScratchBytes); }

bool free_memory(size_t* free) {
  size_t total = 0;
  return cudaDeviceSynchronize() == cudaSuccess && cudaMemGetInfo(free, &total) == cudaSuccess;
}

struct Row {
  int n = 0;
  bool shared = false;
  double device_mib = 0;   // cudaMemGetInfo: free before - free after
  double counter_mib = 0;  // scratch_bytes
  double expected_mib = 0;
  bool correct = false;
};

// Loads scratch_n<n>, runs it once and measures; false (with a message) when something failed.
bool measure(const std::string& dir, int n, bool shared, Row* row) {
  row->n = n;
  row->shared = shared;
  size_t before = 0, after = 0;
  if (!free_memory(&before)) {
    std::fprintf(stderr, "cudaMemGetInfo failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  {
    et::BackendOptions<1> options;
    et::LoadBackendOptionsMap map;
    if (options.set_option(etrt::kOptionSharedScratch, shared) != et::Error::Ok ||
        map.set_options(etrt::kBackendId, options.view()) != et::Error::Ok)
      return false;
    Module module(dir + "/scratch_n" + std::to_string(n) + ".pte");
    if (module.load(map) != et::Error::Ok || module.load_forward() != et::Error::Ok) {
      std::fprintf(stderr, "loading scratch_n%d failed: %s\n", n, etrt::last_error_message());
      return false;
    }
    std::vector<float> x = {0.5f, -1.0f, 2.0f, 3.25f};
    const auto result = module.forward(from_blob(x.data(), {1, 4}, ScalarType::Float));
    if (!result.ok()) {
      std::fprintf(stderr, "scratch_n%d: forward failed: %s\n", n, etrt::last_error_message());
      return false;
    }
    const float* y = result.get()[0].toTensor().const_data_ptr<float>();
    row->correct = true;
    for (size_t j = 0; j < x.size(); ++j) {
      float want = x[j];
      for (int i = 0; i < n; ++i) want = 2.0f * want + 1.0f;
      row->correct = row->correct && y[j] == want;
    }
    if (!free_memory(&after)) return false;
    row->counter_mib = static_cast<double>(scratch_bytes()) / kMiB;
  }
  row->device_mib = (static_cast<double>(before) - static_cast<double>(after)) / kMiB;
  row->expected_mib = static_cast<double>(etrt::fixtures::kScratchBenchNeed) * (shared ? 1 : n) / kMiB;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("ETRT_GPU_FIXTURE_DIR");
  const std::string dir = argc > 1 ? argv[1] : (env != nullptr && *env != '\0' ? env : ETRT_BENCH_GPU_PTE_DIR);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::vector<Row> rows;
  for (const int n : {1, 8, 32}) {
    for (const bool shared : {false, true}) {
      Row row;
      if (!measure(dir, n, shared, &row)) return 1;
      rows.push_back(row);
    }
  }
  std::printf("Device memory of a program of N single-layer delegates, each needing %.0f MiB of scratch (%s)\n",
              static_cast<double>(etrt::fixtures::kScratchBenchNeed) / kMiB, prop.name);
  std::printf("%-4s %-14s %14s %18s %16s %9s %8s\n", "N", "shared_scratch", "device MiB", "scratch_bytes MiB",
              "expected MiB", "vs. off", "outputs");
  for (size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    const double off = rows[r - (row.shared ? 1 : 0)].device_mib;
    std::printf("%-4d %-14s %14.1f %18.1f %16.1f %8.3fx %8s\n", row.n, row.shared ? "on" : "off", row.device_mib,
                row.counter_mib, row.expected_mib, off > 0 ? row.device_mib / off : 0.0, row.correct ? "ok" : "WRONG");
  }
  bool ok = true;
  for (const Row& row : rows) ok = ok && row.correct && row.counter_mib == row.expected_mib;
  std::printf("%s\n", ok ? "every row: outputs correct, scratch_bytes as expected"
                         : "FAILED: a row's outputs or scratch_bytes differ from what is expected");
  return ok ? 0 : 1;
}
