#pragma once
// What the attention decoder (models.h, attention_decoder()) computes, with plain loops over decoder::weights() and
// double sums, independent of either NvInfer: both suites check the engines against it, not against each other.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "models.h"

namespace etrt::contract {

inline constexpr size_t kDecoderCacheElements = static_cast<size_t>(decoder::kContext * decoder::kHeadDim);

// Cache contents no step wrote, so that a row an engine should keep, or must not attend, is not all zeros.
inline std::vector<float> stale_cache(float salt) {
  std::vector<float> c(kDecoderCacheElements);
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.5f * std::sin(salt + 0.37f * static_cast<float>(i));
  return c;
}

class DecoderReference {
 public:
  DecoderReference(std::vector<float> k_cache, std::vector<float> v_cache)
      : k_(std::move(k_cache)), v_(std::move(v_cache)) {}

  // One forward of `tokens` at `start_pos`: writes their keys and values into the caches and returns the logits,
  // [S * V].
  std::vector<float> step(const std::vector<int32_t>& tokens, int64_t start_pos) {
    constexpr int64_t vocab = decoder::kVocab, hidden = decoder::kHidden, width = decoder::kHeadDim;
    const decoder::Weights& w = decoder::weights();
    const size_t s_count = tokens.size();
    std::vector<double> x(s_count * hidden), q(s_count * width);
    for (size_t s = 0; s < s_count; ++s) {
      for (int64_t h = 0; h < hidden; ++h)
        x[s * hidden + static_cast<size_t>(h)] = w.embedding[static_cast<size_t>(tokens[s] * hidden + h)];
      const size_t row = static_cast<size_t>(start_pos) + s;
      for (int64_t d = 0; d < width; ++d) {
        double qd = 0.0, kd = 0.0, vd = 0.0;
        for (int64_t h = 0; h < hidden; ++h) {
          const double xh = x[s * hidden + static_cast<size_t>(h)];
          const size_t at = static_cast<size_t>(h * width + d);
          qd += xh * w.wq[at];
          kd += xh * w.wk[at];
          vd += xh * w.wv[at];
        }
        q[s * width + static_cast<size_t>(d)] = qd;
        k_[row * width + static_cast<size_t>(d)] = static_cast<float>(kd);
        v_[row * width + static_cast<size_t>(d)] = static_cast<float>(vd);
      }
    }
    std::vector<float> logits(s_count * vocab);
    for (size_t s = 0; s < s_count; ++s) {
      // Query s sees rows 0 .. start_pos + s of the caches as this step leaves them.
      const size_t visible = static_cast<size_t>(start_pos) + s + 1;
      std::vector<double> score(visible);
      for (size_t j = 0; j < visible; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < width; ++d)
          dot += q[s * width + static_cast<size_t>(d)] * k_[j * width + static_cast<size_t>(d)];
        score[j] = dot * decoder::attention_scale();
      }
      const double top = *std::max_element(score.begin(), score.end());
      double total = 0.0;
      for (double& e : score) total += (e = std::exp(e - top));
      std::vector<double> attended(width, 0.0);
      for (size_t j = 0; j < visible; ++j)
        for (int64_t d = 0; d < width; ++d)
          attended[static_cast<size_t>(d)] += score[j] / total * v_[j * width + static_cast<size_t>(d)];
      std::vector<double> h(hidden);
      for (int64_t o = 0; o < hidden; ++o) {
        double projected = 0.0;
        for (int64_t d = 0; d < width; ++d)
          projected += attended[static_cast<size_t>(d)] * w.wo[static_cast<size_t>(d * hidden + o)];
        h[static_cast<size_t>(o)] = x[s * hidden + static_cast<size_t>(o)] + projected;
      }
      for (int64_t n = 0; n < vocab; ++n) {
        double acc = 0.0;
        for (int64_t o = 0; o < hidden; ++o)
          acc += h[static_cast<size_t>(o)] * w.lm_head[static_cast<size_t>(o * vocab + n)];
        logits[s * vocab + static_cast<size_t>(n)] = static_cast<float>(acc);
      }
    }
    return logits;
  }

  const std::vector<float>& k_cache() const { return k_; }
  const std::vector<float>& v_cache() const { return v_; }

 private:
  std::vector<float> k_, v_;
};

// Float32 engines sum in another order than the reference's doubles: logits of a few units agree within ~1e-6; a
// stale cache row or a wrong mask moves them by 1e-2 and more.
inline constexpr float kDecoderTolerance = 1e-4f;

}  // namespace etrt::contract
