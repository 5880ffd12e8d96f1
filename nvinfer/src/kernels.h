#pragma once
// The GPU-free NvInfer's op kernels, apart from the loop that runs them
// (executor.h), a host set and a CUDA set (CUDA mode): the
// executor resolves tensors, shapes and scratch, a Kernels does the arithmetic
// on pointers it is handed. Kernels know nothing of names or messages; they
// report a failure by position and the executor words it.

#include <cstdint>

#include "etrt_gpufree/types.h"

namespace etrt::gpufree {

class Kernels {
 public:
  virtual ~Kernels() = default;

  // out[i, :] = table[ids[i], :] for i < count, and zeros where ids[i] is outside [0, vocab): TensorRT's
  // IGatherLayer stores zeros for an out-of-bounds index (seen on TensorRT 8.6, nvinfer/README.md), it does not fail.
  virtual void embedding(const void* ids, DataType id_type, int64_t count, const float* table, int64_t vocab,
                            int64_t hidden, float* out) const = 0;
  virtual void add(const float* a, const float* b, float* out, int64_t n) const = 0;
  // out[r, j] = a[r, j] + bias[j]
  virtual void add_bias(const float* a, const float* bias, float* out, int64_t rows, int64_t width) const = 0;
  virtual void scale(const float* a, float factor, float* out, int64_t n) const = 0;
  // out[r, :] = a[r, :] x weight, weight [k, n] row-major. `out` must not overlap `a`.
  virtual void matmul(const float* a, const float* weight, float* out, int64_t rows, int64_t k, int64_t n) const = 0;
  // `src` and `dst` may overlap (an output aliasing its input).
  virtual void copy(const void* src, void* dst, uint64_t bytes) const = 0;
  // cache [batch, capacity, width] gets rows indices[b] .. indices[b] + rows - 1 of batch b replaced by
  // update [batch, rows, width]. Returns -1, or the first b whose range leaves [0, capacity) (then nothing is
  // written).
  virtual int64_t kv_cache_update(float* cache, const float* update, const void* indices, DataType index_type,
                                  int64_t batch, int64_t capacity, int64_t rows, int64_t width) const = 0;
  // out [batch, queries, value_width]: query s of batch b sits at position positions[b] + s and attends keys
  // 0 .. positions[b] + s with softmax(scale * q . k) weights over v. q [batch, queries, width], k [batch, keys,
  // width], v [batch, keys, value_width]. Returns -1, or the first b whose last position is outside [0, keys) (then
  // nothing is written).
  virtual int64_t causal_attention(const float* q, const float* k, const float* v, const void* positions,
                                   DataType position_type, int64_t batch, int64_t queries, int64_t keys, int64_t width,
                                   int64_t value_width, float scale, float* out) const = 0;
};

// Element i of an int32 or int64 index tensor.
inline int64_t index_at(const void* indices, DataType type, int64_t i) {
  return type == DataType::kInt32 ? static_cast<const int32_t*>(indices)[i] : static_cast<const int64_t*>(indices)[i];
}

// Plain loops on the CPU, float32 throughout.
const Kernels& host_kernels();

// The CUDA mode's kernels (cuda_kernels.cu): each call launches one kernel on `stream` over device pointers and
// returns without waiting, so an enqueue's ops run in order on its stream, as TensorRT's do. Constructed per
// enqueue (it only holds the stream). Indices live in device memory, and a bad one cannot fail an enqueue that has
// already returned: an embedding id outside [0, vocab) writes its row as zeros (as the host kernel does), a KV-cache
// write index whose range leaves the cache writes nothing for that batch, an attention position past the keys writes
// its batch's rows as NaN; each call then returns -1.
class CudaKernels final : public Kernels {
 public:
  explicit CudaKernels(StreamHandle stream) : stream_(stream) {}
  void embedding(const void* ids, DataType id_type, int64_t count, const float* table, int64_t vocab, int64_t hidden,
                 float* out) const override;
  void add(const float* a, const float* b, float* out, int64_t n) const override;
  void add_bias(const float* a, const float* bias, float* out, int64_t rows, int64_t width) const override;
  void scale(const float* a, float factor, float* out, int64_t n) const override;
  void matmul(const float* a, const float* weight, float* out, int64_t rows, int64_t k, int64_t n) const override;
  void copy(const void* src, void* dst, uint64_t bytes) const override;
  int64_t kv_cache_update(float* cache, const float* update, const void* indices, DataType index_type, int64_t batch,
                          int64_t capacity, int64_t rows, int64_t width) const override;
  int64_t causal_attention(const float* q, const float* k, const float* v, const void* positions,
                           DataType position_type, int64_t batch, int64_t queries, int64_t keys, int64_t width,
                           int64_t value_width, float scale, float* out) const override;

 private:
  StreamHandle stream_;
};

}  // namespace etrt::gpufree
