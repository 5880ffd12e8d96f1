// An LLM-style runner on ExecuTorch's Module API: one prefill over the prompt,
// then one-token decode steps, each under the optimization profile made for
// it. The .pte's TensorRT delegate carries both profiles over one set of
// weights; etrt switches per execution.
//
// usage: etrt_llm_runner <model.pte> [prompt_tokens=48] [decode_steps=8]

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include "etrt/profile_guard.h"
#include "etrt/report.h"

namespace {

constexpr int32_t kDecodeProfile = 0;   // input_ids [1, 1]
constexpr int32_t kPrefillProfile = 1;  // input_ids [1, 32..2048]

using executorch::aten::ScalarType;
using executorch::extension::from_blob;
using executorch::extension::Module;

// Greedy choice: the vocabulary entry with the largest logit at the last position.
int64_t next_token(const executorch::aten::Tensor& logits) {
  const int64_t vocab = logits.size(2);
  const float* last = logits.const_data_ptr<float>() + (logits.size(1) - 1) * vocab;
  int64_t best = 0;
  for (int64_t v = 1; v < vocab; ++v)
    if (last[v] > last[best]) best = v;
  return best;
}

bool run(Module& module, std::vector<int64_t>& ids, const char* phase, int64_t* token) {
  etrt::ExecutionReport report;
  auto input = from_blob(ids.data(), {1, static_cast<int32_t>(ids.size())}, ScalarType::Long);
  auto result = module.forward(input);
  if (!result.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", phase, etrt::last_error_message());
    return false;
  }
  *token = next_token(result.get()[0].toTensor());
  for (const auto& e : report.entries())
    std::printf("%-8s tokens=%-4zu delegate=%s profile=%d%s -> next token %lld\n", phase, ids.size(), e.delegate,
                e.profile, e.switched ? " (switched)" : "", static_cast<long long>(*token));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <model.pte> [prompt_tokens=48] [decode_steps=8]\n", argv[0]);
    return 2;
  }
  const size_t prompt_tokens = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 48;
  const int decode_steps = argc > 3 ? std::atoi(argv[3]) : 8;

  Module module(argv[1]);
  if (module.load_forward() != executorch::runtime::Error::Ok) {
    std::fprintf(stderr, "loading %s failed: %s\n", argv[1], etrt::last_error_message());
    return 1;
  }

  etrt::ExecutionReport whole_run;
  std::vector<int64_t> prompt(prompt_tokens);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int64_t>((i * 5 + 1) % 64);
  int64_t token = 0;
  {
    etrt::OptimizationProfileGuard prefill(kPrefillProfile);
    if (!run(module, prompt, "prefill", &token)) return 1;
  }
  {
    etrt::OptimizationProfileGuard decode(kDecodeProfile);
    for (int step = 0; step < decode_steps; ++step) {
      std::vector<int64_t> one = {token};
      if (!run(module, one, "decode", &token)) return 1;
    }
  }
  {
    // Or let the input shapes choose.
    auto automatic = etrt::OptimizationProfileGuard::automatic();
    if (!run(module, prompt, "auto", &token)) return 1;
    std::vector<int64_t> one = {token};
    if (!run(module, one, "auto", &token)) return 1;
  }
  std::printf("executions=%zu profile switches=%zu\n", whole_run.total(), whole_run.switches());
  return 0;
}
