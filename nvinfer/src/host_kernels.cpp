#include <cstring>

#include "kernels.h"

namespace etrt::gpufree {

namespace {

class HostKernels final : public Kernels {
 public:
  int64_t embedding(const void* ids, DataType id_type, int64_t count, const float* table, int64_t vocab, int64_t hidden,
                    float* out) const override {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t id =
          id_type == DataType::kInt32 ? static_cast<const int32_t*>(ids)[i] : static_cast<const int64_t*>(ids)[i];
      if (id < 0 || id >= vocab) return i;
      std::memcpy(out + i * hidden, table + id * hidden, static_cast<size_t>(hidden) * sizeof(float));
    }
    return -1;
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
};

}  // namespace

const Kernels& host_kernels() {
  static const HostKernels kernels;
  return kernels;
}

}  // namespace etrt::gpufree
