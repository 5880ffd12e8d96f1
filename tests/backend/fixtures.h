#pragma once
// The LLM-shaped model every end-to-end fixture uses, shared by the program
// that builds the fixtures (make_fixtures.cpp) and the tests that check their
// outputs: logits = embedding(input_ids, table) x weight.

#include <cstdint>
#include <vector>

namespace etrt::fixtures {

inline constexpr int64_t kVocab = 32;
inline constexpr int64_t kHidden = 16;

inline float table_value(int64_t v, int64_t h) {
  return 0.01f * static_cast<float>(v) + 0.001f * static_cast<float>(h);
}
inline float weight_value(int64_t k, int64_t n) {
  return (k == n ? 1.0f : 0.0f) + 0.01f * static_cast<float>((k + 2 * n) % 5);
}

inline std::vector<float> table() {
  std::vector<float> t(static_cast<size_t>(kVocab * kHidden));
  for (int64_t v = 0; v < kVocab; ++v)
    for (int64_t h = 0; h < kHidden; ++h) t[static_cast<size_t>(v * kHidden + h)] = table_value(v, h);
  return t;
}
inline std::vector<float> weight() {
  std::vector<float> w(static_cast<size_t>(kHidden * kHidden));
  for (int64_t k = 0; k < kHidden; ++k)
    for (int64_t n = 0; n < kHidden; ++n) w[static_cast<size_t>(k * kHidden + n)] = weight_value(k, n);
  return w;
}

// What the model computes for `ids`, [S] -> [S * kHidden].
inline std::vector<float> expected_logits(const std::vector<int64_t>& ids) {
  std::vector<float> out;
  for (int64_t id : ids) {
    for (int64_t n = 0; n < kHidden; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < kHidden; ++k) acc += table_value(id, k) * weight_value(k, n);
      out.push_back(acc);
    }
  }
  return out;
}

// ---- the shared-scratch programs (load option shared_scratch) ----
// Each delegate: x [1, 4] float32 -> h = 2x (an intermediate, in the context's scratch memory) -> y = h + bias, with
// bias[j] = its bias for every j, and a scratch need of its own (Builder::set_device_memory_size).
//   scratch_chain.pte: four delegates in a chain, x -> y0 -> y1 -> y2 -> y3, needing kScratchChainNeeds.
//   scratch_big.pte:   one delegate needing more than any of them, bias kScratchBigBias.
//   scratch_methods.pte: both in one program, method "forward" (the chain) and method "big".
inline constexpr int64_t kScratchChainNeeds[] = {16384, 65536, 32768, 8192};
inline constexpr float kScratchChainBias[] = {1.0f, 2.0f, 3.0f, 4.0f};
inline constexpr int64_t kScratchBigNeed = 262144;
inline constexpr float kScratchBigBias = 10.0f;
// scratch_n1/8/32.pte (the GPU suite's only; bench/gpu/gpu_scratch_bench.cpp): 1, 8, 32 such delegates, bias 1, each
// needing this much.
inline constexpr int64_t kScratchBenchNeed = 64ll << 20;

// What scratch_chain computes for `x` (4 values).
inline std::vector<float> scratch_chain_expected(std::vector<float> x) {
  for (float bias : kScratchChainBias)
    for (float& v : x) v = 2.0f * v + bias;
  return x;
}

}  // namespace etrt::fixtures
