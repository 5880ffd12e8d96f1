// The NvInfer contract suite's GPU-free side: plans from etrt::gpufree::Builder as host-memory engines, so the suite
// runs in CI without a GPU.

#include <cstdlib>
#include <cstring>

#include "etrt_gpufree/builder.h"
#include "plans.h"

namespace etrt::contract {
namespace {

gpufree::Shape to_shape(const std::vector<int64_t>& dims) {
  gpufree::Shape s;
  s.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) s.d[i] = dims[i];
  return s;
}

// The models speak etrt's element types, the Builder its own (the GPU-free NvInfer stands alone): one spelling names
// one type in both.
gpufree::DataType to_gpufree(DataType type) {
  auto code = gpufree::DataType::kFloat32;
  while (gpufree::element_size(code) != 0 && std::strcmp(gpufree::to_string(code), to_string(type)) != 0)
    code = static_cast<gpufree::DataType>(static_cast<uint8_t>(code) + 1);
  return code;  // past the last type, which the build refuses, when etrt has one the Builder does not
}

}  // namespace

std::string implementation() { return "GPU-free NvInfer"; }
bool is_nvidia() { return false; }
bool shares_profiles(const ModelSpec& model) { return model.profile_sharing_0806; }

std::vector<uint8_t> build_plan(const ModelSpec& model, std::string* error) {
  gpufree::Builder b(model.label);
  for (const TensorSpec& t : model.inputs) b.add_input(t.name, to_gpufree(t.dtype), to_shape(t.shape));
  for (const TensorSpec& t : model.outputs) b.add_output(t.name, to_gpufree(t.dtype), to_shape(t.shape));
  for (const std::vector<Bounds>& profile : model.profiles) {
    const int32_t p = b.add_profile();
    for (size_t i = 0; i < profile.size(); ++i) {
      b.set_profile_shape(p, model.inputs[i].name, to_shape(profile[i].min), to_shape(profile[i].opt),
                          to_shape(profile[i].max));
    }
  }
  for (const ConstantSpec& c : model.constants) b.add_constant(c.name, to_shape(c.shape), c.values);
  for (const OpSpec& op : model.ops) {
    switch (op.kind) {
      case OpKind::kEmbedding:
        b.embedding(op.a, op.b, op.out);
        break;
      case OpKind::kMatMul:
        b.matmul(op.a, op.b, op.out);
        break;
      case OpKind::kScale:
        b.scale(op.a, op.factor, op.out);
        break;
      case OpKind::kAdd:
        b.add(op.a, op.b, op.out);
        break;
      // In place: the output aliases the cache, as TensorRT 10.15's IKVCacheUpdateLayer's does.
      case OpKind::kCacheWrite:
        b.kv_cache_update(op.a, op.b, op.positions, op.out);
        break;
      case OpKind::kCausalAttention:
        b.causal_attention(op.a, op.b, op.c, op.positions, op.factor, op.out);
        break;
    }
  }
  b.set_memory_kind(gpufree::MemoryKind::kHost).set_tracing(false);
  // TensorRT 8.6's rules, as the GPU side runs: profiles held by one context unless built with profile sharing.
  b.set_tensorrt_version(gpufree::TensorRTVersion::k8_6)
      .set_preview_feature(gpufree::PreviewFeature::kPROFILE_SHARING_0806, model.profile_sharing_0806);
  std::vector<uint8_t> plan;
  if (!b.build(&plan, error)) plan.clear();
  return plan;
}

Memory::Memory(size_t bytes) : size_(bytes) {
  const size_t rounded =
      (bytes + engine::kIoAddressAlignment - 1) / engine::kIoAddressAlignment * engine::kIoAddressAlignment;
  data_ = std::aligned_alloc(engine::kIoAddressAlignment, rounded > 0 ? rounded : engine::kIoAddressAlignment);
  std::memset(data_, 0, rounded > 0 ? rounded : engine::kIoAddressAlignment);
}
Memory::~Memory() { std::free(data_); }
void Memory::upload(const void* host, size_t bytes) { std::memcpy(data_, host, bytes); }
void Memory::download(void* host, size_t bytes) const { std::memcpy(host, data_, bytes); }

engine::StreamHandle stream() { return nullptr; }
void synchronize() {}

}  // namespace etrt::contract
