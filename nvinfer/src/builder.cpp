#include "etrt_gpufree/builder.h"

#include <unordered_map>

#include "format.h"
#include "model.h"

namespace etrt::gpufree {

namespace {

bool failed(std::string* error, std::string message) {
  if (error != nullptr) *error = "GPU-free NvInfer builder: " + std::move(message);
  return false;
}

}  // namespace

Builder::Builder(std::string label) : label_(std::move(label)) {}

void Builder::note_error(std::string message) {
  if (first_error_.empty()) first_error_ = std::move(message);
}

Builder& Builder::add_input(const std::string& name, DataType dtype, const Shape& shape) {
  io_.push_back({name, true, dtype, shape});
  return *this;
}

Builder& Builder::add_output(const std::string& name, DataType dtype, const Shape& shape) {
  io_.push_back({name, false, dtype, shape});
  return *this;
}

Builder& Builder::mark_shape_tensor(const std::string& input) {
  for (IoSpec& t : io_)
    if (t.is_input && t.name == input) {
      t.is_shape_tensor = true;
      return *this;
    }
  note_error("mark_shape_tensor('" + input + "'): no input of that name has been added");
  return *this;
}

Builder& Builder::place_on_host(const std::string& tensor) {
  for (IoSpec& t : io_)
    if (t.name == tensor) {
      t.on_host = true;
      return *this;
    }
  note_error("place_on_host('" + tensor + "'): no IO tensor of that name has been added");
  return *this;
}

Builder& Builder::mark_data_dependent(const std::string& output) {
  for (IoSpec& t : io_)
    if (!t.is_input && t.name == output) {
      t.data_dependent = true;
      return *this;
    }
  note_error("mark_data_dependent('" + output + "'): no output of that name has been added");
  return *this;
}

int32_t Builder::add_profile() { return num_profiles_++; }

Builder& Builder::set_profile_shape(int32_t profile, const std::string& input, const Shape& min, const Shape& opt,
                                    const Shape& max) {
  if (profile < 0 || profile >= num_profiles_)
    note_error("set_profile_shape(" + std::to_string(profile) + ", '" + input +
               "'): no such profile; add_profile() "
               "has been called " +
               std::to_string(num_profiles_) + " time(s)");
  bounds_.push_back({profile, input, min, opt, max});
  return *this;
}

Builder& Builder::add_constant(const std::string& name, const Shape& shape, std::vector<float> values) {
  constants_.push_back({name, shape, std::move(values)});
  return *this;
}

Builder& Builder::embedding(const std::string& ids, const std::string& table, const std::string& output) {
  ops_.push_back({OpSpecKind::kEmbedding, ids, table, output, 1.0f, "", ""});
  return *this;
}

Builder& Builder::add(const std::string& a, const std::string& b, const std::string& output) {
  ops_.push_back({OpSpecKind::kAdd, a, b, output, 1.0f, "", ""});
  return *this;
}

Builder& Builder::scale(const std::string& input, float factor, const std::string& output) {
  ops_.push_back({OpSpecKind::kScale, input, "", output, factor, "", ""});
  return *this;
}

Builder& Builder::matmul(const std::string& input, const std::string& weight, const std::string& output) {
  ops_.push_back({OpSpecKind::kMatMul, input, weight, output, 1.0f, "", ""});
  return *this;
}

Builder& Builder::identity(const std::string& input, const std::string& output) {
  ops_.push_back({OpSpecKind::kIdentity, input, "", output, 1.0f, "", ""});
  return *this;
}

Builder& Builder::kv_cache_update(const std::string& cache, const std::string& update, const std::string& write_indices,
                                  const std::string& output) {
  ops_.push_back({OpSpecKind::kKvCacheUpdate, cache, update, output, 1.0f, write_indices, ""});
  return *this;
}

Builder& Builder::causal_attention(const std::string& q, const std::string& k, const std::string& v,
                                   const std::string& positions, float scale, const std::string& output) {
  ops_.push_back({OpSpecKind::kCausalAttention, q, k, output, scale, v, positions});
  return *this;
}

Builder& Builder::enable_weight_streaming(bool enabled) {
  weight_streaming_ = enabled;
  return *this;
}

Builder& Builder::set_switch_cost_ns(int64_t ns) {
  switch_cost_ns_ = ns;
  return *this;
}

Builder& Builder::set_device_memory_size(uint64_t bytes) {
  device_memory_size_ = bytes;
  return *this;
}

Builder& Builder::set_tracing(bool enabled) {
  tracing_ = enabled;
  return *this;
}

Builder& Builder::set_memory_kind(MemoryKind kind) {
  memory_kind_ = kind;
  return *this;
}

Builder& Builder::set_tensorrt_version(TensorRTVersion version) {
  version_ = version;
  return *this;
}

Builder& Builder::set_preview_feature(PreviewFeature feature, bool enabled) {
  if (feature == PreviewFeature::kPROFILE_SHARING_0806)
    profile_sharing_0806_ = enabled;
  else
    note_error("set_preview_feature: preview feature " + std::to_string(static_cast<int32_t>(feature)) +
               " is not modelled; only kPROFILE_SHARING_0806 (2) is");
  return *this;
}

bool Builder::build(std::vector<uint8_t>* engine, std::string* error) const {
  if (!first_error_.empty()) return failed(error, first_error_);
  Model m;
  m.label = label_;
  m.switch_cost_ns = switch_cost_ns_;
  m.requested_device_memory = device_memory_size_;
  m.tracing = tracing_;
  m.memory_kind = memory_kind_;
  m.streamable_weights = weight_streaming_;
  m.exclusive_profiles = version_ == TensorRTVersion::k8_6 && !profile_sharing_0806_;
  for (const IoSpec& t : io_) {
    TensorDesc d;
    d.name = t.name;
    d.is_input = t.is_input;
    d.dtype = t.dtype;
    d.shape = t.shape;
    d.is_shape_tensor = t.is_shape_tensor;
    d.on_host = t.on_host;
    d.data_dependent = t.data_dependent;
    m.io.push_back(std::move(d));
  }
  for (const ConstantSpec& c : constants_) m.constants.push_back({c.name, c.shape, c.values});

  // Profiles: explicit bounds first, then the implicit ones of static inputs; anything left unset is an error.
  const std::vector<int32_t> ordinals = m.input_ordinals();
  const int32_t n_inputs = m.num_inputs();
  int32_t n_profiles = num_profiles_;
  if (n_profiles == 0) {
    for (const TensorDesc& t : m.io)
      if (t.is_input && !is_static(t.shape))
        return failed(error, "input '" + t.name + "' " + shape_to_string(t.shape) +
                                 " has dynamic dims, so the engine needs add_profile() and set_profile_shape()");
    n_profiles = 1;
  }
  m.profiles.assign(static_cast<size_t>(n_profiles), std::vector<InputRange>(static_cast<size_t>(n_inputs)));
  std::vector<std::vector<bool>> have(static_cast<size_t>(n_profiles), std::vector<bool>(m.io.size(), false));
  std::unordered_map<std::string, int32_t> input_index;
  for (size_t i = 0; i < m.io.size(); ++i)
    if (m.io[i].is_input) input_index[m.io[i].name] = static_cast<int32_t>(i);
  for (const BoundsSpec& b : bounds_) {
    const auto found = input_index.find(b.input);
    const int32_t io_index = found == input_index.end() ? -1 : found->second;
    if (io_index < 0)
      return failed(error,
                    "set_profile_shape(" + std::to_string(b.profile) + ", '" + b.input + "'): no input of that name");
    const auto p = static_cast<size_t>(b.profile);
    if (have[p][static_cast<size_t>(io_index)])
      return failed(error, "set_profile_shape(" + std::to_string(b.profile) + ", '" + b.input + "') called twice");
    have[p][static_cast<size_t>(io_index)] = true;
    m.profiles[p][static_cast<size_t>(ordinals[static_cast<size_t>(io_index)])] = {b.min, b.opt, b.max};
  }
  for (size_t p = 0; p < m.profiles.size(); ++p)
    for (size_t i = 0; i < m.io.size(); ++i) {
      const TensorDesc& t = m.io[i];
      if (!t.is_input || have[p][i]) continue;
      if (!is_static(t.shape))
        return failed(error, "profile " + std::to_string(p) + " has no bounds for input '" + t.name + "' " +
                                 shape_to_string(t.shape) + "; call set_profile_shape");
      m.profiles[p][static_cast<size_t>(ordinals[i])] = {t.shape, t.shape, t.shape};
    }

  // Ops: resolve names; an unknown output name becomes an intermediate of the dtype the op produces.
  // Names to ids through a hash map (kept up to date as intermediates appear), so building stays linear.
  std::unordered_map<std::string, int32_t> ids;
  for (int32_t id = 0; id < m.num_tensors(); ++id) ids.emplace(m.tensor_name(id), id);
  auto find = [&ids](const std::string& name) {
    const auto it = ids.find(name);
    return it == ids.end() ? -1 : it->second;
  };
  for (size_t k = 0; k < ops_.size(); ++k) {
    const OpSpec& spec = ops_[k];
    const std::string where = "op #" + std::to_string(k) + " -> '" + spec.out + "'";
    Op op;
    op.factor = spec.factor;
    op.a = find(spec.a);
    if (op.a < 0) return failed(error, where + " reads '" + spec.a + "', which is not a tensor");
    int32_t* operands[] = {&op.b, &op.c, &op.d};
    const std::string* names[] = {&spec.b, &spec.c, &spec.d};
    for (int i = 0; i < 3; ++i) {
      if (names[i]->empty()) continue;
      *operands[i] = find(*names[i]);
      if (*operands[i] < 0) return failed(error, where + " reads '" + *names[i] + "', which is not a tensor");
    }
    switch (spec.kind) {
      case OpSpecKind::kEmbedding:
        op.kind = OpKind::kEmbedding;
        break;
      case OpSpecKind::kScale:
        op.kind = OpKind::kScale;
        break;
      case OpSpecKind::kMatMul:
        op.kind = OpKind::kMatMul;
        break;
      case OpSpecKind::kIdentity:
        op.kind = OpKind::kIdentity;
        break;
      case OpSpecKind::kKvCacheUpdate:
        op.kind = OpKind::kKvCacheUpdate;
        break;
      case OpSpecKind::kCausalAttention:
        op.kind = OpKind::kCausalAttention;
        break;
      case OpSpecKind::kAdd: {
        // A rank-1 constant on either side is a bias over the other operand's last dim.
        auto is_bias = [&m](int32_t id) { return m.is_constant(id) && m.constant(id).shape.rank == 1; };
        if (is_bias(op.a) && !is_bias(op.b)) std::swap(op.a, op.b);
        op.kind = is_bias(op.b) ? OpKind::kAddBias : OpKind::kAdd;
        break;
      }
    }
    op.out = find(spec.out);
    if (op.out < 0) {
      const DataType produced = op.kind == OpKind::kIdentity ? m.tensor_dtype(op.a) : DataType::kFloat32;
      m.intermediates.push_back({spec.out, produced});
      op.out = m.intermediate_id(m.intermediates.size() - 1);
      ids.emplace(spec.out, op.out);
    }
    m.ops.push_back(op);
  }

  std::string why;
  if (!validate(m, &why)) return failed(error, why);
  MemoryPlan plan;
  if (!plan_memory(m, &plan, &why)) return failed(error, why);
  *engine = serialize(m);
  return true;
}

}  // namespace etrt::gpufree
