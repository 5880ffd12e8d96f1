// The GPU-free NvInfer's CUDA-mode kernels (kernels.h): the host set's
// arithmetic, one kernel per op, launched on the enqueue's stream. Sizes are
// tiny in etrt's tests and benchmarks, so the kernels are plain grid-stride
// loops: what they exist for is to put real device work, in device memory, on
// the stream the backend hands over, not to be fast.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "device_runtime.h"
#include "kernels.h"

namespace etrt::gpufree {

namespace {

constexpr int kThreads = 128;
// Enough blocks to cover small tensors in one wave; grid-stride loops cover the rest.
constexpr int64_t kMaxBlocks = 1024;

unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

__device__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ int64_t stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <typename Id>
__global__ void embedding_kernel(const Id* ids, int64_t count, const float* table, int64_t vocab, int64_t hidden,
                                 float* out) {
  for (int64_t i = first_index(); i < count * hidden; i += stride()) {
    const int64_t row = i / hidden;
    const int64_t column = i % hidden;
    const int64_t id = static_cast<int64_t>(ids[row]);
    out[i] = (id >= 0 && id < vocab) ? table[id * hidden + column] : 0.0f;
  }
}

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = a[i] + b[i];
}

__global__ void add_bias_kernel(const float* a, const float* bias, float* out, int64_t n, int64_t width) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = a[i] + bias[i % width];
}

__global__ void scale_kernel(const float* a, float factor, float* out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = a[i] * factor;
}

// One thread per output element; k is small (the hidden size).
__global__ void matmul_kernel(const float* a, const float* weight, float* out, int64_t rows, int64_t k, int64_t n) {
  for (int64_t i = first_index(); i < rows * n; i += stride()) {
    const int64_t r = i / n;
    const int64_t j = i % n;
    float acc = 0.0f;
    for (int64_t x = 0; x < k; ++x) acc += a[r * k + x] * weight[x * n + j];
    out[i] = acc;
  }
}

// memmove for ranges that overlap without being equal: one thread, in the safe direction. Only a hand-made
// binding can get here (an output aliasing part of its input); correctness matters more than speed.
__global__ void overlapping_copy_kernel(const unsigned char* src, unsigned char* dst, uint64_t bytes) {
  if (dst < src) {
    for (uint64_t i = 0; i < bytes; ++i) dst[i] = src[i];
  } else {
    for (uint64_t i = bytes; i > 0; --i) dst[i - 1] = src[i - 1];
  }
}

template <typename Index>
__global__ void kv_cache_update_kernel(float* cache, const float* update, const Index* indices, int64_t batch,
                                       int64_t capacity, int64_t rows, int64_t width) {
  for (int64_t i = first_index(); i < batch * rows * width; i += stride()) {
    const int64_t b = i / (rows * width);
    const int64_t at = static_cast<int64_t>(indices[b]);
    if (at < 0 || at > capacity - rows) continue;
    cache[(b * capacity + at) * width + i % (rows * width)] = update[i];
  }
}

// One thread per output element; each recomputes its row's scores (keys and widths are small here).
template <typename Index>
__global__ void causal_attention_kernel(const float* q, const float* k, const float* v, const Index* positions,
                                        int64_t batch, int64_t queries, int64_t keys, int64_t width,
                                        int64_t value_width, float scale, float* out) {
  for (int64_t i = first_index(); i < batch * queries * value_width; i += stride()) {
    const int64_t e = i % value_width;
    const int64_t s = (i / value_width) % queries;
    const int64_t b = i / (value_width * queries);
    const int64_t at = static_cast<int64_t>(positions[b]);
    if (at < 0 || at > keys - queries) {
      out[i] = NAN;
      continue;
    }
    const float* query = q + (b * queries + s) * width;
    float max_score = -INFINITY;
    float total = 0.0f;
    float acc = 0.0f;
    for (int64_t j = 0; j <= at + s; ++j) {
      const float* key = k + (b * keys + j) * width;
      float score = 0.0f;
      for (int64_t x = 0; x < width; ++x) score += query[x] * key[x];
      score *= scale;
      const float rescale = score > max_score ? expf(max_score - score) : 1.0f;
      const float weight = score > max_score ? 1.0f : expf(score - max_score);
      if (score > max_score) max_score = score;
      total = total * rescale + weight;
      acc = acc * rescale + weight * v[(b * keys + j) * value_width + e];
    }
    out[i] = acc / total;
  }
}

__global__ void store_word_kernel(int32_t* word, int32_t value) { *word = value; }

__global__ void check_word_kernel(const int32_t* word, int32_t expected, int* flag) {
  if (*word != expected) *static_cast<volatile int*>(flag) = 1;
}

cudaStream_t as_stream(StreamHandle stream) { return static_cast<cudaStream_t>(stream); }

bool launched(const char* what, std::string* error) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return true;
  if (error != nullptr) *error = std::string(what) + " launch failed: " + cudaGetErrorName(status);
  return false;
}

}  // namespace

namespace device {

bool store_word(int32_t* word, int32_t value, StreamHandle stream, std::string* error) {
  store_word_kernel<<<1, 1, 0, as_stream(stream)>>>(word, value);
  return launched("store_word", error);
}

bool check_word(const int32_t* word, int32_t expected, int* flag, StreamHandle stream, std::string* error) {
  check_word_kernel<<<1, 1, 0, as_stream(stream)>>>(word, expected, flag);
  return launched("check_word", error);
}

}  // namespace device

// Launch failures are not reported per kernel: the enqueue checks cudaGetLastError once after all its ops
// (device::launch_status), as TensorRT reports a failed enqueue as a whole.

void CudaKernels::embedding(const void* ids, DataType id_type, int64_t count, const float* table, int64_t vocab,
                            int64_t hidden, float* out) const {
  if (count * hidden == 0) return;
  if (id_type == DataType::kInt32) {
    embedding_kernel<<<blocks_for(count * hidden), kThreads, 0, as_stream(stream_)>>>(static_cast<const int32_t*>(ids),
                                                                                      count, table, vocab, hidden, out);
  } else {
    embedding_kernel<<<blocks_for(count * hidden), kThreads, 0, as_stream(stream_)>>>(static_cast<const int64_t*>(ids),
                                                                                      count, table, vocab, hidden, out);
  }
}

void CudaKernels::add(const float* a, const float* b, float* out, int64_t n) const {
  if (n > 0) add_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream_)>>>(a, b, out, n);
}

void CudaKernels::add_bias(const float* a, const float* bias, float* out, int64_t rows, int64_t width) const {
  if (rows * width > 0)
    add_bias_kernel<<<blocks_for(rows * width), kThreads, 0, as_stream(stream_)>>>(a, bias, out, rows * width, width);
}

void CudaKernels::scale(const float* a, float factor, float* out, int64_t n) const {
  if (n > 0) scale_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream_)>>>(a, factor, out, n);
}

void CudaKernels::matmul(const float* a, const float* weight, float* out, int64_t rows, int64_t k, int64_t n) const {
  if (rows * n > 0)
    matmul_kernel<<<blocks_for(rows * n), kThreads, 0, as_stream(stream_)>>>(a, weight, out, rows, k, n);
}

void CudaKernels::copy(const void* src, void* dst, uint64_t bytes) const {
  if (bytes == 0 || src == dst) return;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  if (s + bytes <= d || d + bytes <= s) {
    (void)cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, as_stream(stream_));
  } else {
    overlapping_copy_kernel<<<1, 1, 0, as_stream(stream_)>>>(s, d, bytes);
  }
}

int64_t CudaKernels::kv_cache_update(float* cache, const float* update, const void* indices, DataType index_type,
                                     int64_t batch, int64_t capacity, int64_t rows, int64_t width) const {
  const int64_t n = batch * rows * width;
  if (n == 0) return -1;
  if (index_type == DataType::kInt32) {
    kv_cache_update_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream_)>>>(
        cache, update, static_cast<const int32_t*>(indices), batch, capacity, rows, width);
  } else {
    kv_cache_update_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream_)>>>(
        cache, update, static_cast<const int64_t*>(indices), batch, capacity, rows, width);
  }
  return -1;
}

int64_t CudaKernels::causal_attention(const float* q, const float* k, const float* v, const void* positions,
                                      DataType position_type, int64_t batch, int64_t queries, int64_t keys,
                                      int64_t width, int64_t value_width, float scale, float* out) const {
  const int64_t n = batch * queries * value_width;
  if (n == 0) return -1;
  if (position_type == DataType::kInt32) {
    causal_attention_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream_)>>>(
        q, k, v, static_cast<const int32_t*>(positions), batch, queries, keys, width, value_width, scale, out);
  } else {
    causal_attention_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream_)>>>(
        q, k, v, static_cast<const int64_t*>(positions), batch, queries, keys, width, value_width, scale, out);
  }
  return -1;
}

}  // namespace etrt::gpufree
