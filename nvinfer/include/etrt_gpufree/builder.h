#pragma once
// Builds GPU-free NvInfer engines: declare IO tensors, optimization profiles,
// constants and ops, then build() validates the graph and writes the
// serialized engine -- bytes that go wherever a TensorRT plan would (a .pte's
// TensorRT blob, IRuntime::deserializeCudaEngine).
//
//   Builder b("decoder");
//   b.add_input("ids", DataType::kInt64, make_shape({1, -1}))
//    .add_output("logits", DataType::kFloat32, make_shape({1, -1, 4}));
//   int32_t decode = b.add_profile(), prefill = b.add_profile();
//   b.set_profile_shape(decode, "ids", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}))
//    .set_profile_shape(prefill, "ids", make_shape({1, 2}), make_shape({1, 64}), make_shape({1, 128}))
//    .add_constant("table", make_shape({16, 8}), table_values)
//    .add_constant("w", make_shape({8, 4}), w_values)
//    .embedding("ids", "table", "hidden")        // "hidden" becomes an intermediate, in scratch memory
//    .matmul("hidden", "w", "logits");
//   std::string error;
//   std::vector<uint8_t> engine;
//   if (!b.build(&engine, &error)) ...            // false, with the reason, if the graph is invalid

#include <cstdint>
#include <string>
#include <vector>

#include "etrt_gpufree/types.h"

namespace etrt::gpufree {

class ETRT_GPUFREE_API Builder {
 public:
  // `label` names the engine in errors and keys its trace (trace.h).
  explicit Builder(std::string label);

  // IO tensors, in engine order: io indices follow the order of these calls. -1 marks a dynamic dim.
  Builder& add_input(const std::string& name, DataType dtype, const Shape& shape);
  Builder& add_output(const std::string& name, DataType dtype, const Shape& shape);
  // Declares an input a TensorRT shape tensor. No op can read it; it exists so backends can be tested on
  // refusing such engines.
  Builder& mark_shape_tensor(const std::string& input);
  // Makes getTensorLocation() report kHOST for an IO tensor (TensorRT does so for shape tensors and for some
  // tensors it computes on the host); the data still flows like any other. Lets backends be tested on refusing it.
  Builder& place_on_host(const std::string& tensor);
  // Makes an output's dynamic dims data-dependent: getTensorShape keeps them -1 after every input shape is set,
  // and enqueueV3 refuses (this implementation has no IOutputAllocator). For testing backends on such engines.
  Builder& mark_data_dependent(const std::string& output);

  // Appends an optimization profile and returns its index. Every input with a dynamic dim needs bounds on every
  // profile; fully static inputs get min = opt = max = their shape. With no profile added and every input
  // static, the engine gets one such profile implicitly (as TensorRT does).
  int32_t add_profile();
  Builder& set_profile_shape(int32_t profile, const std::string& input, const Shape& min, const Shape& opt,
                             const Shape& max);

  // A float32 weight, row-major.
  Builder& add_constant(const std::string& name, const Shape& shape, std::vector<float> values);

  // Ops run in the order added. `output` names a declared output or, on first use, a new intermediate that lives
  // in the context's scratch memory. Each tensor is written by exactly one op.
  //   embedding: ids [...] int64/int32, table a constant [V, H]  -> [..., H] float32; an id outside [0, V) fails
  //              the enqueue
  //   add:       a + b of one shape, or a + b where b is a constant [H] broadcast over a's last dim
  //   scale:     a * factor
  //   matmul:    a [..., K] x weight (a constant [K, N]) -> [..., N]
  //   identity:  a copy, any dtype
  //   kv_cache_update: TensorRT's IKVCacheUpdateLayer. `cache` an input [B, T, D] float32, `update` [B, S, D]
  //              float32 with S <= T, `write_indices` [B] int32/int64; `output` must be a declared output of the
  //              cache's shape. Rows write_indices[b] .. + S - 1 of batch b become the update, in place:
  //              getAliasedInputTensor(output) names the cache, and enqueueV3 refuses unless the output is bound
  //              to the cache's address. A range past T fails the enqueue (CUDA mode: that batch is not written).
  //   causal_attention: queries `q` [B, S, D] at positions positions[b] + s attend keys `k` [B, T, D] 0 .. that
  //              position with softmax(scale * q . k) over values `v` [B, T, E] -> [B, S, E]; `positions` [B]
  //              int32/int64. A position past T fails the enqueue (CUDA mode: that batch's rows are NaN).
  Builder& embedding(const std::string& ids, const std::string& table, const std::string& output);
  Builder& add(const std::string& a, const std::string& b, const std::string& output);
  Builder& scale(const std::string& input, float factor, const std::string& output);
  Builder& matmul(const std::string& input, const std::string& weight, const std::string& output);
  Builder& identity(const std::string& input, const std::string& output);
  Builder& kv_cache_update(const std::string& cache, const std::string& update, const std::string& write_indices,
                           const std::string& output);
  Builder& causal_attention(const std::string& q, const std::string& k, const std::string& v,
                            const std::string& positions, float scale, const std::string& output);

  // Modeled cost of a profile switch: every successful set_optimization_profile busy-waits this long (0..10 s).
  Builder& set_switch_cost_ns(int64_t ns);
  // Scratch memory the engine asks for beyond what its intermediates need (device_memory_size() is the larger of
  // the two). Every enqueue touches the whole region.
  Builder& set_device_memory_size(uint64_t bytes);
  // Whether engines loaded from these bytes record calls in the trace (default on).
  Builder& set_tracing(bool enabled);
  // kDevice builds a CUDA-mode engine: memory_kind() == kDevice, its ops run as CUDA kernels on the enqueue's
  // stream over device pointers, its weights live in device memory. Such bytes load anywhere (to be inspected or
  // packed), but their contexts need an etrt built with -DETRT_WITH_CUDA=ON and a GPU. Default kHost.
  Builder& set_memory_kind(MemoryKind kind);
  // Builds with weight streaming (TensorRT's BuilderFlag::kWEIGHT_STREAMING): every constant counts as a
  // streamable weight, so getStreamableWeightsSize() > 0 and the budget calls apply. Default off.
  Builder& enable_weight_streaming(bool enabled = true);
  // The TensorRT release whose rules the engine follows where releases differ. k10 (the default, 10.x and 11.x):
  // execution contexts share optimization profiles, as they always do from TensorRT 10.0 on. k8_6: a profile is held
  // by one live context at a time (a second context starts on no profile; a switch to a held profile is refused),
  // unless the engine is built with PreviewFeature::kPROFILE_SHARING_0806.
  Builder& set_tensorrt_version(TensorRTVersion version);
  // IBuilderConfig::setPreviewFeature. kPROFILE_SHARING_0806 on a k8_6 engine turns profile sharing on; on a k10
  // engine it changes nothing (TensorRT 10: "deprecated ... on and cannot be changed").
  Builder& set_preview_feature(PreviewFeature feature, bool enabled);

  // The serialized engine into *engine; false, with the reason in *error, if the graph is invalid.
  [[nodiscard]] bool build(std::vector<uint8_t>* engine, std::string* error) const;

 private:
  struct IoSpec {
    std::string name;
    bool is_input;
    DataType dtype;
    Shape shape;
    bool is_shape_tensor = false;
    bool on_host = false;
    bool data_dependent = false;
  };
  struct BoundsSpec {
    int32_t profile;
    std::string input;
    Shape min, opt, max;
  };
  struct ConstantSpec {
    std::string name;
    Shape shape;
    std::vector<float> values;
  };
  enum class OpSpecKind : uint8_t { kEmbedding, kAdd, kScale, kMatMul, kIdentity, kKvCacheUpdate, kCausalAttention };
  struct OpSpec {
    OpSpecKind kind;
    std::string a, b, out;
    float factor = 1.0f;
    std::string c, d;
  };

  void note_error(std::string message);

  std::string label_;
  std::vector<IoSpec> io_;
  int32_t num_profiles_ = 0;
  std::vector<BoundsSpec> bounds_;
  std::vector<ConstantSpec> constants_;
  std::vector<OpSpec> ops_;
  int64_t switch_cost_ns_ = 0;
  uint64_t device_memory_size_ = 0;
  bool tracing_ = true;
  MemoryKind memory_kind_ = MemoryKind::kHost;
  bool weight_streaming_ = false;
  TensorRTVersion version_ = TensorRTVersion::k10;
  bool profile_sharing_0806_ = false;
  std::string first_error_;  // misuse seen before build(), reported by it
};

}  // namespace etrt::gpufree
