// Runs one prefill-shaped forward() under a pin through an installed etrt.
// usage: consumer <llm.pte>   (exit 0 on success)
#include <cstdio>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <etrt/profile_guard.h>
#include <etrt/report.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  executorch::extension::Module module(argv[1]);
  std::vector<int64_t> ids(40, 3);
  etrt::OptimizationProfileGuard pin(1);
  etrt::ExecutionReport report;
  auto result = module.forward(
      executorch::extension::from_blob(ids.data(), {1, 40}, executorch::aten::ScalarType::Long));
  if (!result.ok()) {
    std::fprintf(stderr, "forward failed: %s\n", etrt::last_error_message());
    return 1;
  }
  if (report.entries().size() != 1 || report.entries()[0].profile != 1) {
    std::fprintf(stderr, "expected one execution on profile 1\n");
    return 1;
  }
  std::printf("ok: profile %d\n", report.entries()[0].profile);
  return 0;
}
