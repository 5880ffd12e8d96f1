#include "executor.h"

namespace etrt::gpufree {

namespace {

const float* as_floats(void* p) { return static_cast<const float*>(p); }

// Product of every dim but the last: the rows a last-dim op (add_bias, matmul) runs over.
// The product of the first `rank - 1` dims (rows of a row-major tensor), or of all of them (elements).
int64_t product(const Shape& s, int32_t dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < dims; ++i) n *= s.d[i];
  return n;
}
int64_t leading_rows(const Shape& s) { return product(s, s.rank - 1); }

}  // namespace

bool run_ops(const Model& m, const std::vector<void*>& data, const std::vector<Shape>& shapes, const Kernels& kernels,
             std::string* error) {
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const Op& op = m.ops[k];
    const auto a = static_cast<size_t>(op.a);
    const auto out = static_cast<size_t>(op.out);
    const int64_t n = product(shapes[out], shapes[out].rank);
    auto* dst = static_cast<float*>(data[out]);
    switch (op.kind) {
      case OpKind::kEmbedding: {
        const Shape& table = shapes[static_cast<size_t>(op.b)];
        kernels.embedding(data[a], m.tensor_dtype(op.a), product(shapes[a], shapes[a].rank), as_floats(data[op.b]),
                          table.d[0], table.d[1], dst);
        break;
      }
      case OpKind::kAdd:
        kernels.add(as_floats(data[a]), as_floats(data[op.b]), dst, n);
        break;
      case OpKind::kAddBias: {
        const int64_t width = shapes[static_cast<size_t>(op.b)].d[0];
        kernels.add_bias(as_floats(data[a]), as_floats(data[op.b]), dst, leading_rows(shapes[a]), width);
        break;
      }
      case OpKind::kScale:
        kernels.scale(as_floats(data[a]), op.factor, dst, n);
        break;
      case OpKind::kMatMul: {
        const Shape& w = shapes[static_cast<size_t>(op.b)];
        kernels.matmul(as_floats(data[a]), as_floats(data[op.b]), dst, leading_rows(shapes[a]), w.d[0], w.d[1]);
        break;
      }
      case OpKind::kIdentity:
        kernels.copy(data[a], data[out], static_cast<uint64_t>(n) * element_size(m.tensor_dtype(op.out)));
        break;
      case OpKind::kKvCacheUpdate: {
        // The output shares the cache input's memory (the enqueue checked), so the update lands in place.
        const Shape& cache = shapes[a];
        const int64_t rows = shapes[static_cast<size_t>(op.b)].d[1];
        const int64_t bad = kernels.kv_cache_update(dst, as_floats(data[op.b]), data[op.c], m.tensor_dtype(op.c),
                                                    cache.d[0], cache.d[1], rows, cache.d[2]);
        if (bad >= 0) {
          if (error != nullptr)
            *error = "op #" + std::to_string(k) + " (kv_cache_update of '" + m.tensor_name(op.a) + "'): write index " +
                     std::to_string(index_at(data[op.c], m.tensor_dtype(op.c), bad)) + " of batch " +
                     std::to_string(bad) + " in '" + m.tensor_name(op.c) + "' puts " + std::to_string(rows) +
                     " rows outside the cache's " + std::to_string(cache.d[1]);
          return false;
        }
        break;
      }
      case OpKind::kCausalAttention: {
        const Shape& q = shapes[a];
        const Shape& keys = shapes[static_cast<size_t>(op.b)];
        const int64_t bad = kernels.causal_attention(as_floats(data[a]), as_floats(data[op.b]), as_floats(data[op.c]),
                                                     data[op.d], m.tensor_dtype(op.d), q.d[0], q.d[1], keys.d[1],
                                                     q.d[2], shapes[static_cast<size_t>(op.c)].d[2], op.factor, dst);
        if (bad >= 0) {
          if (error != nullptr)
            *error = "op #" + std::to_string(k) + " (causal_attention -> '" + m.tensor_name(op.out) + "'): position " +
                     std::to_string(index_at(data[op.d], m.tensor_dtype(op.d), bad)) + " of batch " +
                     std::to_string(bad) + " in '" + m.tensor_name(op.d) + "' with " + std::to_string(q.d[1]) +
                     " queries reaches past the " + std::to_string(keys.d[1]) + " keys";
          return false;
        }
        break;
      }
    }
  }
  return true;
}

}  // namespace etrt::gpufree
