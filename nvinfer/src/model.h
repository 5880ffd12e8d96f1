#pragma once
// The GPU-free NvInfer's in-memory model: what a serialized engine holds once
// parsed. The builder produces one, the format encodes/decodes one, and the
// engine runs one. validate() is the single gate both the builder and the
// parser go through, so a hand-crafted blob is held to the same rules as a
// built one.

#include <cstdint>
#include <string>
#include <vector>

#include "etrt_gpufree/types.h"

namespace etrt::gpufree {

enum class OpKind : uint8_t {
  kEmbedding = 1,  // out[..., :] = table[ids[...], :]
  kAdd = 2,        // out = a + b, same shapes
  kAddBias = 3,    // out = a + bias, bias [H] broadcast over a's last dim
  kScale = 4,      // out = a * factor
  kMatMul = 5,     // out[..., N] = a[..., K] x weight[K, N]
  kIdentity = 6,   // out = a, any dtype
  // TensorRT's IKVCacheUpdateLayer: the cache a (an IO input [B, T, D]) with rows c[b] .. c[b] + S - 1 of batch b
  // replaced by the update b [B, S, D]; c: write indices [B], int32/int64. `out` is an IO output that shares the
  // cache's memory (getAliasedInputTensor), so the update happens in place.
  kKvCacheUpdate = 7,
  // out[b, s, :] = softmax_j(factor * a[b, s, :] . b[b, j, :]) over j in [0, d[b] + s], weighted sum of c[b, j, :]:
  // causal attention of queries a [B, S, D] at positions d[b] + s over keys b and values c [B, T, D].
  kCausalAttention = 8,
};
const char* to_string(OpKind kind);

// Tensor ids index one space: IO tensors first (engine order, so an IO id is
// its io_index), then constants, then intermediates.
struct Op {
  OpKind kind = OpKind::kIdentity;
  int32_t a = -1;       // first operand
  int32_t b = -1;       // second operand (embedding: table; add: rhs; add_bias: bias; matmul: weight;
                        // kv_cache_update: update; causal_attention: keys)
  int32_t c = -1;       // kv_cache_update: write indices; causal_attention: values
  int32_t d = -1;       // causal_attention: positions
  int32_t out = -1;     // an IO output or an intermediate, written by exactly one op
  float factor = 1.0f;  // kScale and kCausalAttention
};

struct Constant {
  std::string name;
  Shape shape;
  std::vector<float> values;  // float32, row-major, numel(shape) of them
};

// A tensor an op writes that is not an engine output. Lives in scratch memory.
struct Intermediate {
  std::string name;
  DataType dtype = DataType::kFloat32;
};

struct InputRange {
  Shape min, opt, max;
};

// Exported (like validate() and the format functions) for the format tests and the load benchmark; not API.
struct ETRT_GPUFREE_API Model {
  std::string label;
  std::vector<TensorDesc> io;
  std::vector<Constant> constants;
  std::vector<Intermediate> intermediates;
  // profiles[p][k]: the bounds of the k-th input (in IO order) under profile p.
  std::vector<std::vector<InputRange>> profiles;
  std::vector<Op> ops;
  int64_t switch_cost_ns = 0;            // busy-waited on every successful profile switch
  uint64_t requested_device_memory = 0;  // lower bound on device_memory_size()
  bool tracing = true;                   // record calls in the trace sink (see trace.h)
  // kHost: ops run on the CPU over host pointers. kDevice (CUDA mode): ops run as CUDA kernels on the enqueue's
  // stream over device pointers, with the weights in device memory (see nvinfer/README.md).
  MemoryKind memory_kind = MemoryKind::kHost;
  // Built with weight streaming: every constant is a streamable weight (getStreamableWeightsSize > 0).
  bool streamable_weights = false;
  // A profile is held by one live context at a time: TensorRT 8.6 without PreviewFeature::kPROFILE_SHARING_0806.
  // Otherwise (10.x, 11.x; 8.6 with the flag) contexts share profiles.
  bool exclusive_profiles = false;

  // Lookup indexes built by build_indexes() (deserialize_model calls it), so that name lookups and
  // getAliasedInputTensor stay cheap on engines with many IO tensors and ops. Indices, not pointers, so copies of
  // the model stay correct; when their size differs from io's, the lookups scan instead.
  std::vector<int32_t> io_by_name;  // IO indices sorted by name
  std::vector<int32_t> io_alias;    // per IO tensor, aliased_input()

  int32_t num_io() const { return static_cast<int32_t>(io.size()); }
  int32_t num_inputs() const;
  // io_index -> k for inputs, -1 for outputs.
  std::vector<int32_t> input_ordinals() const;
  // The IO index of the tensor named `name`, or -1 (also for null). Allocates nothing.
  int32_t find_io(const char* name) const;
  void build_indexes();
  int32_t num_tensors() const { return static_cast<int32_t>(io.size() + constants.size() + intermediates.size()); }
  int32_t constant_id(size_t i) const { return static_cast<int32_t>(io.size() + i); }
  int32_t intermediate_id(size_t i) const { return static_cast<int32_t>(io.size() + constants.size() + i); }
  bool is_constant(int32_t id) const { return id >= num_io() && id < intermediate_id(0); }
  bool is_intermediate(int32_t id) const { return id >= intermediate_id(0) && id < num_tensors(); }
  const Constant& constant(int32_t id) const { return constants[static_cast<size_t>(id - num_io())]; }
  const std::string& tensor_name(int32_t id) const;
  // The IO input whose memory IO output `io_index` shares (a kv_cache_update's cache), or -1.
  int32_t aliased_input(int32_t io_index) const;
  // Bytes of every constant, float32: what weight streaming can stream.
  uint64_t constant_bytes() const;
  // Bytes of the largest constant: what weight streaming stages at once (EngineImpl::State::streaming_scratch).
  uint64_t largest_constant_bytes() const;
  DataType tensor_dtype(int32_t id) const;
};

// Whether `s` has a zero dim: a tensor of no elements.
inline bool is_empty(const Shape& s) {
  for (int32_t i = 0; i < s.rank; ++i)
    if (s.d[i] == 0) return true;
  return false;
}

// Whether `s` has no dynamic (-1) dim: an input of that shape needs no setInputShape, and needs no profile bounds.
inline bool is_static(const Shape& s) {
  for (int32_t i = 0; i < s.rank; ++i)
    if (s.d[i] < 0) return false;
  return true;
}

// Bounds that keep a crafted blob from asking for absurd work or memory (docs/limits.md says why each is far above
// any real engine). The decoder checks every count against them before allocating anything sized by it, and
// validate() holds built engines to the same numbers. Python reads engines through this decoder (libetrt's
// etrt_engine_describe); python/etrt/gpufree/format.py repeats the numbers only for its engine writer.
inline constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;  // one IO tensor at a profile's max shapes
inline constexpr int64_t kMaxSwitchCostNs = 10'000'000'000;     // 10 s
inline constexpr size_t kMaxIoTensors = 16384;
inline constexpr size_t kMaxConstants = 65536;
inline constexpr size_t kMaxIntermediates = 65536;
inline constexpr size_t kMaxOps = 65536;
inline constexpr size_t kMaxProfiles = 256;
// profiles x inputs: the size of the profile table (each entry is three shapes).
inline constexpr size_t kMaxProfileEntries = 65536;
// profiles x ops: validation infers every op's shapes at each profile's min, opt and max shapes.
inline constexpr size_t kMaxShapeInferenceWork = size_t{1} << 16;
// Bytes of a label or tensor name.
inline constexpr size_t kMaxNameLength = 4096;
// Scratch memory (device_memory_size(): the requested size and the intermediates' plan): 64 GiB.
inline constexpr uint64_t kMaxDeviceMemory = uint64_t{64} << 30;
// Scratch memory and every intermediate inside it are aligned like cudaMalloc's.
inline constexpr uint64_t kScratchAlignment = 256;
// What setTensorAddress requires of I/O addresses (TensorRT's documented rule).
inline constexpr uint64_t kIoAlignment = 256;

// Where each intermediate lives inside a context's scratch memory.
struct MemoryPlan {
  std::vector<uint64_t> intermediate_offsets;
  uint64_t intermediate_bytes = 0;  // what the ops need, for the largest profile
  uint64_t device_memory_size = 0;  // max(intermediate_bytes, requested), what the engine reports
};

// Every structural and shape rule; on failure says which, naming tensors and numbers.
ETRT_GPUFREE_API bool validate(const Model& model, std::string* error);

// Shapes of every tensor (indexed by tensor id) given the IO input shapes in
// `shapes` (slots of inputs filled, everything else overwritten). Fails when
// the inputs are inconsistent with each other, with the message in *error.
bool infer_shapes(const Model& model, std::vector<Shape>& shapes, std::string* error);

// Requires a validated model.
ETRT_GPUFREE_API bool plan_memory(const Model& model, MemoryPlan* plan, std::string* error);

// A name as error messages quote it: control characters, DEL, backslash and bytes that are not UTF-8 as \xNN
// (backslash as \\), so a message never carries a NUL that would cut it short or raw binary.
ETRT_GPUFREE_API std::string escape_name(const std::string& name);

// numel * element size with overflow and kMaxTensorBytes checks; false if dynamic or too large.
bool tensor_bytes(const Shape& shape, DataType dtype, uint64_t* bytes);

std::string shape_to_string(const Shape& shape);

}  // namespace etrt::gpufree
