#pragma once
// The demo's model: a one-layer attention decoder with a KV cache, built with
// the GPU-free NvInfer builder. One header so that the .pte generator
// (make_demo_pte.cpp) and the GPU suite (tests/gpu) build the very same engine
// from the very same weights.
//
//   x      = embedding[tokens]                              [1, S, H]
//   q      = x Wq,  k = x Wk,  v = x Wv                     [1, S, D]
//   k_cache_out = k_cache with rows start_pos .. start_pos+S-1 = k    (in place: kv_cache_update)
//   v_cache_out = v_cache with rows start_pos .. start_pos+S-1 = v    (in place)
//   a      = causal_attention(q, k_cache_out, v_cache_out, start_pos, 1/sqrt(D))   [1, S, D]
//   h      = x + a Wo                                       [1, S, H]
//   logits = h Wlm                                          [1, S, V]
//
// Engine IO, in order: inputs tokens [1, S] int64, start_pos [1] int64, k_cache [1, T, D], v_cache [1, T, D];
// outputs logits [1, S, V], k_cache_out, v_cache_out (aliases of the caches: getAliasedInputTensor). Profile 0
// (decode) is S = 1, profile 1 (prefill) S in 32..2048; T holds a 2048-token prompt plus kDecodeRoom steps.
//
// The weights come from a fixed-seed generator and are written next to the .pte (write_weights) so that an
// independent implementation (tests/python/test_decoder_demo.py, NumPy) can recompute every logit.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "etrt_gpufree/builder.h"
#include "weight_rng.h"

namespace etrt::demo {

inline constexpr int64_t kVocab = 64;      // V
inline constexpr int64_t kHidden = 32;     // H
inline constexpr int64_t kHeadDim = 32;    // D (one head)
inline constexpr int64_t kMinPrompt = 32;  // the prefill profile's bounds
inline constexpr int64_t kOptPrompt = 512;
inline constexpr int64_t kMaxPrompt = 2048;
inline constexpr int64_t kDecodeRoom = 256;                    // decode steps after a longest prompt
inline constexpr int64_t kContext = kMaxPrompt + kDecodeRoom;  // T: cache rows
inline constexpr int32_t kDecodeProfile = 0;
inline constexpr int32_t kPrefillProfile = 1;
inline constexpr uint64_t kSeed = 0x5eed'decd'0001ULL;

inline float attention_scale() { return 1.0f / std::sqrt(static_cast<float>(kHeadDim)); }

struct Weight {
  const char* name;
  int64_t rows, cols;
  // Uniform in [-bound, bound]: bounds keep the logits within a few units (well conditioned for comparisons) and
  // the attention scores spread enough (|q.k|/sqrt(D) ~ 1) that what the cache holds changes the result.
  float bound;
};

// In engine-constant order, which is also the order of the weights file.
inline const std::vector<Weight>& weight_specs() {
  static const std::vector<Weight> specs = {
      {"embedding", kVocab, kHidden, 1.0f}, {"wq", kHidden, kHeadDim, 0.6f}, {"wk", kHidden, kHeadDim, 0.6f},
      {"wv", kHidden, kHeadDim, 0.5f},      {"wo", kHeadDim, kHidden, 0.3f}, {"lm_head", kHidden, kVocab, 0.4f},
  };
  return specs;
}

// Every weight, row-major, in weight_specs() order.
inline std::vector<std::vector<float>> make_weights() {
  WeightRng rng(kSeed);
  std::vector<std::vector<float>> out;
  for (const Weight& w : weight_specs()) {
    std::vector<float> values(static_cast<size_t>(w.rows * w.cols));
    for (float& v : values) v = rng.uniform(w.bound);
    out.push_back(std::move(values));
  }
  return out;
}

// The decoder engine, in host mode or CUDA mode (MemoryKind::kDevice).
inline etrt::gpufree::Builder decoder_builder(const std::string& label, etrt::gpufree::MemoryKind kind) {
  using etrt::gpufree::DataType;
  using etrt::gpufree::make_shape;
  etrt::gpufree::Builder b(label);
  b.add_input("tokens", DataType::kInt64, make_shape({1, -1}))
      .add_input("start_pos", DataType::kInt64, make_shape({1}))
      .add_input("k_cache", DataType::kFloat32, make_shape<int64_t>({1, kContext, kHeadDim}))
      .add_input("v_cache", DataType::kFloat32, make_shape<int64_t>({1, kContext, kHeadDim}))
      .add_output("logits", DataType::kFloat32, make_shape<int64_t>({1, -1, kVocab}))
      .add_output("k_cache_out", DataType::kFloat32, make_shape<int64_t>({1, kContext, kHeadDim}))
      .add_output("v_cache_out", DataType::kFloat32, make_shape<int64_t>({1, kContext, kHeadDim}));
  const int32_t decode = b.add_profile();
  const int32_t prefill = b.add_profile();
  b.set_profile_shape(decode, "tokens", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}))
      .set_profile_shape(prefill, "tokens", make_shape<int64_t>({1, kMinPrompt}), make_shape<int64_t>({1, kOptPrompt}),
                         make_shape<int64_t>({1, kMaxPrompt}));
  const std::vector<std::vector<float>> weights = make_weights();
  for (size_t i = 0; i < weights.size(); ++i) {
    const Weight& w = weight_specs()[i];
    b.add_constant(w.name, make_shape({w.rows, w.cols}), weights[i]);
  }
  b.embedding("tokens", "embedding", "x")
      .matmul("x", "wq", "q")
      .matmul("x", "wk", "k")
      .matmul("x", "wv", "v")
      .kv_cache_update("k_cache", "k", "start_pos", "k_cache_out")
      .kv_cache_update("v_cache", "v", "start_pos", "v_cache_out")
      .causal_attention("q", "k_cache_out", "v_cache_out", "start_pos", attention_scale(), "attended")
      .matmul("attended", "wo", "projected")
      .add("x", "projected", "h")
      .matmul("h", "lm_head", "logits")
      .set_memory_kind(kind);
  return b;
}

// Writes <dir>/<stem>.bin (every weight as little-endian float32, in weight_specs() order, back to back) and
// <dir>/<stem>.json, the manifest an independent implementation reads: sizes, the attention scale, each tensor's
// name, shape and element offset, and the graph in words.
inline bool write_weights(const std::string& dir, const std::string& stem, std::string* error) {
  const std::vector<std::vector<float>> weights = make_weights();
  const std::string bin = dir + "/" + stem + ".bin";
  std::FILE* f = std::fopen(bin.c_str(), "wb");
  if (f == nullptr) {
    *error = "could not write " + bin;
    return false;
  }
  std::string tensors;
  int64_t offset = 0;
  bool ok = true;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Weight& w = weight_specs()[i];
    ok = ok && std::fwrite(weights[i].data(), sizeof(float), weights[i].size(), f) == weights[i].size();
    char line[160];
    std::snprintf(line, sizeof(line), "%s    {\"name\": \"%s\", \"shape\": [%lld, %lld], \"offset\": %lld}",
                  i == 0 ? "" : ",\n", w.name, static_cast<long long>(w.rows), static_cast<long long>(w.cols),
                  static_cast<long long>(offset));
    tensors += line;
    offset += w.rows * w.cols;
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    *error = "could not write " + bin;
    return false;
  }
  char head[512];
  std::snprintf(head, sizeof(head),
                "{\n  \"file\": \"%s.bin\",\n  \"dtype\": \"float32\",\n  \"byte_order\": \"little\",\n"
                "  \"vocab\": %lld,\n  \"hidden\": %lld,\n  \"head_dim\": %lld,\n  \"context\": %lld,\n"
                "  \"attention_scale\": %.9g,\n  \"seed\": %llu,\n",
                stem.c_str(), static_cast<long long>(kVocab), static_cast<long long>(kHidden),
                static_cast<long long>(kHeadDim), static_cast<long long>(kContext),
                static_cast<double>(attention_scale()), static_cast<unsigned long long>(kSeed));
  const std::string json = std::string(head) +
                           "  \"graph\": \"x = embedding[tokens]; q, k, v = x wq, x wk, x wv; caches[start_pos + s] = "
                           "k, v; a = softmax(attention_scale q k_cache^T, causal at start_pos + s) v_cache; "
                           "logits = (x + a wo) lm_head\",\n  \"tensors\": [\n" +
                           tensors + "\n  ]\n}\n";
  const std::string path = dir + "/" + stem + ".json";
  f = std::fopen(path.c_str(), "wb");
  ok = f != nullptr && std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok) *error = "could not write " + path;
  return ok;
}

}  // namespace etrt::demo
