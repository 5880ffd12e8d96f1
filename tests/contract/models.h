#pragma once
// The models the NvInfer contract suite runs, as data: one description per model, which plans_gpufree.cpp turns
// into a GPU-free NvInfer engine (etrt::gpufree::Builder) and plans_nvidia.cpp into NVIDIA's INetworkDefinition, so one
// definition yields both engines and both must give the same numbers (reference() below). Only what TensorRT 8.6
// can build: INT32 token ids (8.6 has no INT64 tensors), FLOAT everything else.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/data_type.h"
#include "fixtures.h"
#include "weight_rng.h"

namespace etrt::contract {

struct TensorSpec {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;  // -1 marks a dynamic dim
};

struct Bounds {
  std::vector<int64_t> min, opt, max;
};

struct ConstantSpec {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// embedding: ids (int32) gathered from the constant table b [V, H] -> [..., H]; matmul: a [..., K] x constant b [K, N];
// scale: a * factor; add: a + b, tensors of one shape;
// cache_write: `out` is the cache a [B, T, D] with rows positions[b] .. positions[b] + S - 1 replaced by b [B, S, D]
//   (positions [B] int32), in place where the implementation can alias an output to an input;
// causal_attention: the queries a [B, S, D] at positions[b] + s attend the keys b [B, T, D] 0 .. that position:
//   softmax(factor * q . k) over the values c [B, T, D] -> [B, S, D].
enum class OpKind : uint8_t { kEmbedding, kMatMul, kScale, kAdd, kCacheWrite, kCausalAttention };
struct OpSpec {
  OpKind kind;
  std::string a, b, out;  // b: the constant, where the op takes one
  float factor = 1.0f;
  std::string c = {}, positions = {};  // c: a third operand; positions: int32 [B]
};

struct ModelSpec {
  std::string label;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<std::vector<Bounds>> profiles;  // [profile][input]; empty: one implicit profile (all inputs static)
  std::vector<ConstantSpec> constants;
  std::vector<OpSpec> ops;
  // Built with TensorRT 8.6's IBuilderConfig::setPreviewFeature(PreviewFeature::kPROFILE_SHARING_0806, true):
  // execution contexts share optimization profiles (always so from TensorRT 10.0 on; shares_profiles(), plans.h).
  bool profile_sharing_0806 = false;
};

inline constexpr int64_t kVocab = fixtures::kVocab;
inline constexpr int64_t kHidden = fixtures::kHidden;

inline Bounds ids_bounds(int64_t lo, int64_t opt, int64_t hi) { return {{1, lo}, {1, opt}, {1, hi}}; }

// input_ids [1, S] int32 -> logits [1, S, kHidden] = embedding(ids, table) x weight, under `profiles` (bounds of S).
inline ModelSpec llm(std::string label, std::vector<Bounds> profiles) {
  ModelSpec m;
  m.label = std::move(label);
  m.inputs = {{"input_ids", DataType::kInt32, {1, -1}}};
  m.outputs = {{"logits", DataType::kFloat32, {1, -1, kHidden}}};
  for (Bounds& b : profiles) m.profiles.push_back({std::move(b)});
  m.constants = {{"table", {kVocab, kHidden}, fixtures::table()}, {"weight", {kHidden, kHidden}, fixtures::weight()}};
  m.ops = {{OpKind::kEmbedding, "input_ids", "table", "hidden"}, {OpKind::kMatMul, "hidden", "weight", "logits"}};
  return m;
}

inline constexpr int32_t kDecode = 0;
inline constexpr int32_t kPrefill = 1;
inline constexpr int64_t kMaxPrefill = 2048;

// The RFC's workload: decode profile S = 1, prefill profile S = 32..2048.
inline ModelSpec two_profile_llm() {
  return llm("contract_llm", {ids_bounds(1, 1, 1), ids_bounds(32, 512, kMaxPrefill)});
}
// The same, built with profile sharing (ModelSpec::profile_sharing_0806).
inline ModelSpec two_profile_llm_sharing() {
  ModelSpec m = two_profile_llm();
  m.label = "contract_llm_sharing";
  m.profile_sharing_0806 = true;
  return m;
}
// Three overlapping profiles: exactly one token, 1..64, 1..2048.
inline ModelSpec three_profile_llm() {
  return llm("contract_overlap", {ids_bounds(1, 1, 1), ids_bounds(1, 16, 64), ids_bounds(1, 256, kMaxPrefill)});
}
// x [1, 4] -> y = 2x: static, one implicit profile.
inline ModelSpec static_scale() {
  ModelSpec m;
  m.label = "contract_static";
  m.inputs = {{"x", DataType::kFloat32, {1, 4}}};
  m.outputs = {{"y", DataType::kFloat32, {1, 4}}};
  m.ops = {{OpKind::kScale, "x", "", "y", 2.0f}};
  return m;
}
// x [1, N] -> y = 2x with N = 0..8: a profile that admits empty tensors.
inline ModelSpec empty_capable_scale() {
  ModelSpec m = static_scale();
  m.label = "contract_empty";
  m.inputs = {{"x", DataType::kFloat32, {1, -1}}};
  m.outputs = {{"y", DataType::kFloat32, {1, -1}}};
  m.profiles = {{{{1, 0}, {1, 4}, {1, 8}}}};
  return m;
}

// The benchmark's many-layer decoder (bench/nvidia): token ids [1, S] int32 -> embedding [64 x 256] -> `layers`
// matrix products by [256 x 256] weights -> logits [1, S, 256], with a decode profile (S = 1) and a prefill profile
// (S = 16..512). Small weights keep the values bounded; what it computes is not checked, what it costs is.
inline constexpr int64_t kDeepVocab = 64;
inline constexpr int64_t kDeepWidth = 256;
inline ModelSpec deep_decoder(int layers) {
  ModelSpec m;
  m.label = "deep_decoder_" + std::to_string(layers);
  m.inputs = {{"input_ids", DataType::kInt32, {1, -1}}};
  m.outputs = {{"logits", DataType::kFloat32, {1, -1, kDeepWidth}}};
  m.profiles = {{ids_bounds(1, 1, 1)}, {ids_bounds(16, 128, 512)}};
  std::vector<float> table(static_cast<size_t>(kDeepVocab * kDeepWidth));
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.001f * static_cast<float>(i % 97);
  m.constants.push_back({"table", {kDeepVocab, kDeepWidth}, std::move(table)});
  std::string previous = "x0";
  m.ops.push_back({OpKind::kEmbedding, "input_ids", "table", previous});
  for (int l = 0; l < layers; ++l) {
    std::vector<float> w(static_cast<size_t>(kDeepWidth * kDeepWidth));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = (i % static_cast<size_t>(kDeepWidth + 1) == 0 ? 1.0f : 0.0f) +
             0.0001f * static_cast<float>((i + static_cast<size_t>(l)) % 13);
    const std::string weight = "w" + std::to_string(l);
    const std::string next = l + 1 == layers ? "logits" : "x" + std::to_string(l + 1);
    m.constants.push_back({weight, {kDeepWidth, kDeepWidth}, std::move(w)});
    m.ops.push_back({OpKind::kMatMul, previous, weight, next});
    previous = next;
  }
  return m;
}

// The demo's attention decoder (examples/llm_runner/decoder_model.h) at sizes that build quickly, with its KV caches
// as plain inputs and outputs (TensorRT 8.6 has no IKVCacheUpdateLayer and no aliasing):
//   x = embedding[tokens]; q, k, v = x Wq, x Wk, x Wv;
//   k_cache_out, v_cache_out = the caches with rows start_pos .. start_pos + S - 1 = k, v;
//   a = causal_attention(q, k_cache_out, v_cache_out, start_pos, 1/sqrt(D)); logits = (x + a Wo) Wlm.
// IO, in order: tokens [1, S] int32, start_pos [1] int32, k_cache, v_cache [1, T, D]; logits [1, S, V], k_cache_out,
// v_cache_out [1, T, D]. Profile kDecode: S = 1; profile kPrefill: S = kMinPrompt..kMaxPrompt.
// decoder_reference.h computes the same with plain loops.
namespace decoder {
inline constexpr int64_t kVocab = 64;    // V
inline constexpr int64_t kHidden = 32;   // H
inline constexpr int64_t kHeadDim = 32;  // D
inline constexpr int64_t kMinPrompt = 16;
inline constexpr int64_t kOptPrompt = 64;
inline constexpr int64_t kMaxPrompt = 256;
inline constexpr int64_t kContext = 320;  // T: a longest prompt and 64 decode steps
inline constexpr uint64_t kSeed = 0x5eed'c0de'0021ULL;

inline float attention_scale() { return 1.0f / std::sqrt(static_cast<float>(kHeadDim)); }

// Uniform in [-bound, bound] from the demo's generator; the bounds are the demo's (logits of a few units, attention
// scores spread enough that what the caches hold changes the result).
struct Weights {
  std::vector<float> embedding, wq, wk, wv, wo, lm_head;
};
inline const Weights& weights() {
  static const Weights w = [] {
    demo::WeightRng rng(kSeed);
    auto draw = [&rng](int64_t rows, int64_t cols, float bound) {
      std::vector<float> values(static_cast<size_t>(rows * cols));
      for (float& v : values) v = rng.uniform(bound);
      return values;
    };
    Weights out;
    out.embedding = draw(kVocab, kHidden, 1.0f);
    out.wq = draw(kHidden, kHeadDim, 0.6f);
    out.wk = draw(kHidden, kHeadDim, 0.6f);
    out.wv = draw(kHidden, kHeadDim, 0.5f);
    out.wo = draw(kHeadDim, kHidden, 0.3f);
    out.lm_head = draw(kHidden, kVocab, 0.4f);
    return out;
  }();
  return w;
}
}  // namespace decoder

inline ModelSpec attention_decoder() {
  ModelSpec m;
  m.label = "contract_decoder";
  m.inputs = {{"tokens", DataType::kInt32, {1, -1}},
              {"start_pos", DataType::kInt32, {1}},
              {"k_cache", DataType::kFloat32, {1, decoder::kContext, decoder::kHeadDim}},
              {"v_cache", DataType::kFloat32, {1, decoder::kContext, decoder::kHeadDim}}};
  m.outputs = {{"logits", DataType::kFloat32, {1, -1, decoder::kVocab}},
               {"k_cache_out", DataType::kFloat32, {1, decoder::kContext, decoder::kHeadDim}},
               {"v_cache_out", DataType::kFloat32, {1, decoder::kContext, decoder::kHeadDim}}};
  m.profiles = {{ids_bounds(1, 1, 1)}, {ids_bounds(decoder::kMinPrompt, decoder::kOptPrompt, decoder::kMaxPrompt)}};
  const decoder::Weights& w = decoder::weights();
  m.constants = {{"embedding", {decoder::kVocab, decoder::kHidden}, w.embedding},
                 {"wq", {decoder::kHidden, decoder::kHeadDim}, w.wq},
                 {"wk", {decoder::kHidden, decoder::kHeadDim}, w.wk},
                 {"wv", {decoder::kHidden, decoder::kHeadDim}, w.wv},
                 {"wo", {decoder::kHeadDim, decoder::kHidden}, w.wo},
                 {"lm_head", {decoder::kHidden, decoder::kVocab}, w.lm_head}};
  m.ops = {{OpKind::kEmbedding, "tokens", "embedding", "x"},
           {OpKind::kMatMul, "x", "wq", "q"},
           {OpKind::kMatMul, "x", "wk", "k"},
           {OpKind::kMatMul, "x", "wv", "v"},
           {OpKind::kCacheWrite, "k_cache", "k", "k_cache_out", 1.0f, "", "start_pos"},
           {OpKind::kCacheWrite, "v_cache", "v", "v_cache_out", 1.0f, "", "start_pos"},
           {OpKind::kCausalAttention, "q", "k_cache_out", "attended", decoder::attention_scale(), "v_cache_out",
            "start_pos"},
           {OpKind::kMatMul, "attended", "wo", "projected"},
           {OpKind::kAdd, "x", "projected", "h"},
           {OpKind::kMatMul, "h", "lm_head", "logits"}};
  return m;
}

// `n` token ids for the llm models, all in the vocabulary; `seed` varies them.
inline std::vector<int32_t> tokens(size_t n, int32_t seed = 3) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 7 + static_cast<size_t>(seed)) % kVocab);
  return t;
}

// What the llm models compute for `ids`: [S] -> [S * kHidden].
inline std::vector<float> llm_reference(const std::vector<int32_t>& ids) {
  return fixtures::expected_logits(std::vector<int64_t>(ids.begin(), ids.end()));
}

}  // namespace etrt::contract
