#include <cmath>
#include <cstring>

#include "kernels.h"

namespace etrt::gpufree {

namespace {

class HostKernels final : public Kernels {
 public:
  void embedding(const void* ids, DataType id_type, int64_t count, const float* table, int64_t vocab, int64_t hidden,
                 float* out) const override {
    const size_t row_bytes = static_cast<size_t>(hidden) * sizeof(float);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t id =
          id_type == DataType::kInt32 ? static_cast<const int32_t*>(ids)[i] : static_cast<const int64_t*>(ids)[i];
      if (id < 0 || id >= vocab) {
        std::memset(out + i * hidden, 0, row_bytes);
      } else {
        std::memcpy(out + i * hidden, table + id * hidden, row_bytes);
      }
    }
  }

  void add(const float* a, const float* b, float* out, int64_t n) const override {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }

  void add_bias(const float* a, const float* bias, float* out, int64_t rows, int64_t width) const override {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width; ++j) out[r * width + j] = a[r * width + j] + bias[j];
  }

  void scale(const float* a, float factor, float* out, int64_t n) const override {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] * factor;
  }

  void matmul(const float* a, const float* weight, float* out, int64_t rows, int64_t k, int64_t n) const override {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = out + r * n;
      for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
      // i-outer keeps the weight reads sequential.
      for (int64_t i = 0; i < k; ++i) {
        const float x = a[r * k + i];
        const float* w = weight + i * n;
        for (int64_t j = 0; j < n; ++j) row[j] += x * w[j];
      }
    }
  }

  void copy(const void* src, void* dst, uint64_t bytes) const override {
    if (bytes > 0 && src != dst) std::memmove(dst, src, static_cast<size_t>(bytes));
  }

  int64_t kv_cache_update(float* cache, const float* update, const void* indices, DataType index_type, int64_t batch,
                          int64_t capacity, int64_t rows, int64_t width) const override {
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t at = index_at(indices, index_type, b);
      if (at < 0 || at > capacity - rows) return b;
    }
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t at = index_at(indices, index_type, b);
      std::memmove(cache + (b * capacity + at) * width, update + b * rows * width,
                   static_cast<size_t>(rows * width) * sizeof(float));
    }
    return -1;
  }

  int64_t causal_attention(const float* q, const float* k, const float* v, const void* positions,
                           DataType position_type, int64_t batch, int64_t queries, int64_t keys, int64_t width,
                           int64_t value_width, float scale, float* out) const override {
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t at = index_at(positions, position_type, b);
      if (at < 0 || at > keys - queries) return b;
    }
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t at = index_at(positions, position_type, b);
      for (int64_t s = 0; s < queries; ++s) {
        const float* query = q + (b * queries + s) * width;
        float* row = out + (b * queries + s) * value_width;
        // Softmax in one pass: a running maximum rescales what has been summed so far.
        float max_score = -INFINITY;
        float total = 0.0f;
        for (int64_t e = 0; e < value_width; ++e) row[e] = 0.0f;
        for (int64_t j = 0; j <= at + s; ++j) {
          const float* key = k + (b * keys + j) * width;
          float score = 0.0f;
          for (int64_t x = 0; x < width; ++x) score += query[x] * key[x];
          score *= scale;
          const float rescale = score > max_score ? std::exp(max_score - score) : 1.0f;
          const float weight = score > max_score ? 1.0f : std::exp(score - max_score);
          if (score > max_score) max_score = score;
          total = total * rescale + weight;
          const float* value = v + (b * keys + j) * value_width;
          for (int64_t e = 0; e < value_width; ++e) row[e] = row[e] * rescale + weight * value[e];
        }
        for (int64_t e = 0; e < value_width; ++e) row[e] /= total;
      }
    }
    return -1;
  }
};

}  // namespace

const Kernels& host_kernels() {
  static const HostKernels kernels;
  return kernels;
}

}  // namespace etrt::gpufree
