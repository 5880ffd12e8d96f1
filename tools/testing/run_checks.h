#pragma once
// The GPU benchmarks' setup checks (bench/llm, bench/nvidia): a failed CUDA call or etrt call ends the run with a
// message naming the step, and etrt's last error when there is one. `program` starts the message.
//
//   const etrt::testing::RunChecks check("llm_bench");
//   check(cudaMalloc(&p, n), "cudaMalloc");  check(module.load() == Error::Ok, "load");

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime_api.h>

#include "etrt/report.h"

namespace etrt::testing {

class RunChecks {
 public:
  explicit constexpr RunChecks(const char* program) : program_(program) {}

  void operator()(cudaError_t status, const char* what) const {
    if (status == cudaSuccess) return;
    std::fprintf(stderr, "%s: %s: %s\n", program_, what, cudaGetErrorString(status));
    std::exit(1);
  }
  void operator()(bool ok, const char* what) const {
    if (ok) return;
    std::fprintf(stderr, "%s: %s failed%s%s\n", program_, what, etrt::has_last_error() ? ": " : "",
                 etrt::has_last_error() ? etrt::last_error_message() : "");
    std::exit(1);
  }

 private:
  const char* program_;
};

}  // namespace etrt::testing
