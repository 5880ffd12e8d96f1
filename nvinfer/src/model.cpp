#include "model.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace etrt::gpufree {

namespace {

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF)
// starting at p[0], or 0 when none does. `left` >= 1 bytes are readable.
size_t utf8_sequence_length(const unsigned char* p, size_t left) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (left < n || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

bool is_valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(p + i, s.size() - i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Labels and tensor names are C strings to NvInfer (getIOTensorName), quoted in messages and compared with the
// blob's UTF-8 JSON names: at most kMaxNameLength bytes of UTF-8 without NUL.
bool check_name(const std::string& name, const std::string& what, std::string* error) {
  if (name.size() > kMaxNameLength)
    return fail(error, what + " is " + std::to_string(name.size()) + " bytes long, above the limit of " +
                           std::to_string(kMaxNameLength));
  if (name.find('\0') != std::string::npos)
    return fail(error, what + " '" + escape_name(name) +
                           "' contains a NUL byte; NvInfer names are C strings, so no caller could name it");
  if (!is_valid_utf8(name)) return fail(error, what + " '" + escape_name(name) + "' is not valid UTF-8");
  return true;
}

bool check_count(size_t n, size_t limit, const char* what, std::string* error) {
  return n <= limit || fail(error, std::string("the engine has ") + std::to_string(n) + " " + what +
                                       ", above the limit of " + std::to_string(limit));
}

bool is_float_tensor(const Model& m, int32_t id) { return m.tensor_dtype(id) == DataType::kFloat32; }

bool is_index_tensor(const Model& m, int32_t id) {
  return m.tensor_dtype(id) == DataType::kInt32 || m.tensor_dtype(id) == DataType::kInt64;
}

// How many of an op's operands (a, b, c, d in that order) it reads; the rest are -1.
int operand_count(OpKind kind) {
  switch (kind) {
    case OpKind::kScale:
    case OpKind::kIdentity:
      return 1;
    case OpKind::kKvCacheUpdate:
      return 3;
    case OpKind::kCausalAttention:
      return 4;
    default:
      return 2;
  }
}

std::string quoted(const Model& m, int32_t id) { return "'" + escape_name(m.tensor_name(id)) + "'"; }

std::string op_name(const Model& m, size_t index) {
  const Op& op = m.ops[index];
  return std::string("op #") + std::to_string(index) + " (" + to_string(op.kind) + " -> " + quoted(m, op.out) + ")";
}

bool valid_dim(int64_t d, bool allow_dynamic) { return (allow_dynamic && d == -1) || (d >= 0 && d <= kMaxDim); }

bool valid_shape(const Shape& s, bool allow_dynamic) {
  if (s.rank < 0 || s.rank > kMaxRank) return false;
  for (int32_t i = 0; i < s.rank; ++i)
    if (!valid_dim(s.d[i], allow_dynamic)) return false;
  return true;
}

// The structural rules: names, declared shapes, profiles, op wiring and types. Shapes flowing through the ops are
// checked afterwards by running shape inference on every profile's min, opt and max.
bool validate_structure(const Model& m, std::string* error) {
  if (m.label.empty()) return fail(error, "the engine has no label; give the builder a non-empty name");
  if (!check_name(m.label, "the label", error)) return false;
  if (m.io.empty()) return fail(error, "the engine has no IO tensors");
  // Counts first, so nothing below does work proportional to an absurd one.
  if (!check_count(m.io.size(), kMaxIoTensors, "IO tensors", error) ||
      !check_count(m.constants.size(), kMaxConstants, "constants", error) ||
      !check_count(m.intermediates.size(), kMaxIntermediates, "intermediates", error) ||
      !check_count(m.ops.size(), kMaxOps, "ops", error) ||
      !check_count(m.profiles.size(), kMaxProfiles, "optimization profiles", error))
    return false;
  const size_t n_inputs = static_cast<size_t>(m.num_inputs());
  if (m.profiles.size() * n_inputs > kMaxProfileEntries)
    return fail(error, std::to_string(m.profiles.size()) + " profiles x " + std::to_string(n_inputs) +
                           " inputs = " + std::to_string(m.profiles.size() * n_inputs) +
                           " profile bounds, above the limit of " + std::to_string(kMaxProfileEntries));
  if (m.profiles.size() * m.ops.size() > kMaxShapeInferenceWork)
    return fail(error, std::to_string(m.profiles.size()) + " profiles x " + std::to_string(m.ops.size()) +
                           " ops = " + std::to_string(m.profiles.size() * m.ops.size()) +
                           " shape inferences per bound, above the limit of " + std::to_string(kMaxShapeInferenceWork));

  // Duplicates through a hash map: linear in the number of tensors.
  std::unordered_map<std::string_view, int32_t> names;
  names.reserve(static_cast<size_t>(m.num_tensors()));
  for (int32_t id = 0; id < m.num_tensors(); ++id) {
    const std::string& name = m.tensor_name(id);
    const std::string what = "tensor #" + std::to_string(id);
    if (name.empty()) return fail(error, what + " has an empty name");
    if (!check_name(name, what + " name", error)) return false;
    if (!names.emplace(name, id).second)
      return fail(error, "tensor name '" + escape_name(name) + "' is used twice; names must be unique");
  }

  bool has_output = false;
  for (const TensorDesc& t : m.io) {
    const auto name = [&t] { return escape_name(t.name); };  // built only for a message
    if (element_size(t.dtype) == 0) return fail(error, "IO tensor '" + name() + "' has an unknown data type");
    if (!valid_shape(t.shape, true))
      return fail(error, "IO tensor '" + name() + "' has an invalid shape " + shape_to_string(t.shape) + " (rank 0.." +
                             std::to_string(kMaxRank) + ", dims -1 or 0.." + std::to_string(kMaxDim) + ")");
    if (t.is_input && t.data_dependent)
      return fail(error, "input '" + name() + "' is marked data-dependent; only outputs can be");
    if (!t.is_input && t.is_shape_tensor)
      return fail(error, "output '" + name() + "' is marked as a shape tensor; only inputs can be");
    has_output = has_output || !t.is_input;
  }
  if (!has_output) return fail(error, "the engine has no outputs");

  for (const Constant& c : m.constants) {
    const auto name = [&c] { return escape_name(c.name); };
    if (!valid_shape(c.shape, false))
      return fail(error, "constant '" + name() + "' has an invalid shape " + shape_to_string(c.shape) +
                             "; constants need static dims");
    uint64_t bytes = 0;
    if (!tensor_bytes(c.shape, DataType::kFloat32, &bytes))
      return fail(error, "constant '" + name() + "' is too large");
    if (c.values.size() != bytes / 4)
      return fail(error, "constant '" + name() + "' of shape " + shape_to_string(c.shape) + " needs " +
                             std::to_string(bytes / 4) + " values, got " + std::to_string(c.values.size()));
  }
  for (const Intermediate& t : m.intermediates)
    if (element_size(t.dtype) == 0)
      return fail(error, "intermediate '" + escape_name(t.name) + "' has an unknown data type");

  if (m.profiles.empty()) return fail(error, "the engine has no optimization profiles; it needs at least one");
  for (size_t p = 0; p < m.profiles.size(); ++p) {
    const std::string where = "profile " + std::to_string(p);
    if (m.profiles[p].size() != n_inputs)
      return fail(error, where + " has bounds for " + std::to_string(m.profiles[p].size()) +
                             " inputs, the engine has " + std::to_string(n_inputs));
    size_t k = 0;
    for (const TensorDesc& t : m.io) {
      if (!t.is_input) continue;
      const InputRange& r = m.profiles[p][k++];
      const auto name = [&t] { return escape_name(t.name); };
      const Shape* bounds[] = {&r.min, &r.opt, &r.max};
      for (const Shape* b : bounds)
        if (b->rank != t.shape.rank || !valid_shape(*b, false))
          return fail(error, where + ", input '" + name() + "': bounds min " + shape_to_string(r.min) + " opt " +
                                 shape_to_string(r.opt) + " max " + shape_to_string(r.max) +
                                 " must be static shapes of the declared rank " + std::to_string(t.shape.rank));
      for (int32_t d = 0; d < t.shape.rank; ++d) {
        const auto dim = [&, d] { return where + ", input '" + name() + "' dim " + std::to_string(d) + ": "; };
        if (t.shape.d[d] >= 0 &&
            (r.min.d[d] != t.shape.d[d] || r.opt.d[d] != t.shape.d[d] || r.max.d[d] != t.shape.d[d]))
          return fail(error, dim() + "declared static " + std::to_string(t.shape.d[d]) + " but the profile says min " +
                                 std::to_string(r.min.d[d]) + " opt " + std::to_string(r.opt.d[d]) + " max " +
                                 std::to_string(r.max.d[d]));
        if (r.min.d[d] > r.opt.d[d] || r.opt.d[d] > r.max.d[d])
          return fail(error, dim() + "needs min <= opt <= max, got " + std::to_string(r.min.d[d]) +
                                 " <= " + std::to_string(r.opt.d[d]) + " <= " + std::to_string(r.max.d[d]));
      }
      uint64_t bytes = 0;
      if (!tensor_bytes(r.max, t.dtype, &bytes))
        return fail(error, where + ", input '" + name() + "': max shape " + shape_to_string(r.max) + " is too large");
    }
  }

  if (m.switch_cost_ns < 0 || m.switch_cost_ns > kMaxSwitchCostNs)
    return fail(error, "switch cost " + std::to_string(m.switch_cost_ns) + " ns is outside [0, " +
                           std::to_string(kMaxSwitchCostNs) + "]");
  if (m.requested_device_memory > kMaxDeviceMemory)
    return fail(error, "device memory size " + std::to_string(m.requested_device_memory) + " is above the limit " +
                           std::to_string(kMaxDeviceMemory));

  // Producers: inputs and constants exist up front; ops write outputs and intermediates exactly once, in order.
  std::vector<bool> available(static_cast<size_t>(m.num_tensors()), false);
  for (int32_t id = 0; id < m.num_tensors(); ++id)
    available[static_cast<size_t>(id)] =
        m.is_constant(id) || (id < m.num_io() && m.io[static_cast<size_t>(id)].is_input);
  auto in_range = [&](int32_t id) { return id >= 0 && id < m.num_tensors(); };
  // The kv_cache_update op that updates each IO input, so a second one is found without a scan.
  std::vector<int32_t> updated_by;
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const Op& op = m.ops[k];
    // Spelled out only for a message, so validating many ops builds no strings.
    const auto where = [&op, k] { return "op #" + std::to_string(k) + " (" + to_string(op.kind) + ")"; };
    switch (op.kind) {
      case OpKind::kEmbedding:
      case OpKind::kAdd:
      case OpKind::kAddBias:
      case OpKind::kScale:
      case OpKind::kMatMul:
      case OpKind::kIdentity:
      case OpKind::kKvCacheUpdate:
      case OpKind::kCausalAttention:
        break;
      default:
        return fail(error, where() + " has an unknown kind");
    }
    const int arity = operand_count(op.kind);
    const int32_t operands[] = {op.a, op.b, op.c, op.d};
    if (!in_range(op.out)) return fail(error, where() + " refers to a tensor that does not exist");
    for (int i = 0; i < 4; ++i)
      if (i < arity ? !in_range(operands[i]) : operands[i] != -1)
        return fail(error, where() + (i < arity ? " refers to a tensor that does not exist"
                                                : " has operand " + std::to_string(i) + " set, but " +
                                                      to_string(op.kind) + " takes " + std::to_string(arity)));
    const bool writable =
        m.is_intermediate(op.out) || (op.out < m.num_io() && !m.io[static_cast<size_t>(op.out)].is_input);
    if (!writable)
      return fail(error, where() + " writes " + quoted(m, op.out) + ", which is not an output or intermediate");
    if (available[static_cast<size_t>(op.out)])
      return fail(error, where() + " writes " + quoted(m, op.out) + ", which another op already wrote");
    for (int32_t operand : operands) {
      if (operand < 0) continue;
      if (!available[static_cast<size_t>(operand)])
        return fail(error, where() + " reads " + quoted(m, operand) + " before any op writes it");
      if (operand < m.num_io() && m.io[static_cast<size_t>(operand)].is_shape_tensor)
        return fail(error, where() + " reads shape tensor " + quoted(m, operand) + "; ops cannot compute on those");
    }
    const auto expect = [&where] { return where() + ": "; };
    switch (op.kind) {
      case OpKind::kEmbedding:
        if (m.tensor_dtype(op.a) != DataType::kInt64 && m.tensor_dtype(op.a) != DataType::kInt32)
          return fail(error, expect() + "ids " + quoted(m, op.a) + " must be int64 or int32, not " +
                                 to_string(m.tensor_dtype(op.a)));
        if (!m.is_constant(op.b) || m.constant(op.b).shape.rank != 2)
          return fail(error, expect() + "table " + quoted(m, op.b) + " must be a constant of shape [V, H]");
        break;
      case OpKind::kAdd:
        if (!is_float_tensor(m, op.a) || !is_float_tensor(m, op.b))
          return fail(error, expect() + "operands " + quoted(m, op.a) + " and " + quoted(m, op.b) + " must be float32");
        break;
      case OpKind::kAddBias:
        if (!is_float_tensor(m, op.a)) return fail(error, expect() + "input " + quoted(m, op.a) + " must be float32");
        if (!m.is_constant(op.b) || m.constant(op.b).shape.rank != 1)
          return fail(error, expect() + "bias " + quoted(m, op.b) + " must be a constant of shape [H]");
        break;
      case OpKind::kScale:
        if (!is_float_tensor(m, op.a)) return fail(error, expect() + "input " + quoted(m, op.a) + " must be float32");
        if (!std::isfinite(op.factor)) return fail(error, expect() + "scale factor must be finite");
        break;
      case OpKind::kMatMul:
        if (!is_float_tensor(m, op.a)) return fail(error, expect() + "input " + quoted(m, op.a) + " must be float32");
        if (!m.is_constant(op.b) || m.constant(op.b).shape.rank != 2)
          return fail(error, expect() + "weight " + quoted(m, op.b) + " must be a constant of shape [K, N]");
        break;
      case OpKind::kIdentity:
        break;
      case OpKind::kKvCacheUpdate: {
        const bool cache_is_input = op.a < m.num_io() && m.io[static_cast<size_t>(op.a)].is_input;
        const bool out_is_output = op.out < m.num_io() && !m.io[static_cast<size_t>(op.out)].is_input;
        if (!cache_is_input || !is_float_tensor(m, op.a))
          return fail(error, expect() + "cache " + quoted(m, op.a) + " must be a float32 engine input");
        if (!out_is_output)
          return fail(error, expect() + "its result " + quoted(m, op.out) +
                                 " must be an engine output: it shares the cache input's memory");
        if (m.io[static_cast<size_t>(op.out)].shape != m.io[static_cast<size_t>(op.a)].shape)
          return fail(error, expect() + "output " + quoted(m, op.out) + " is declared " +
                                 shape_to_string(m.io[static_cast<size_t>(op.out)].shape) + " but the cache " +
                                 quoted(m, op.a) + " it aliases is " +
                                 shape_to_string(m.io[static_cast<size_t>(op.a)].shape));
        if (updated_by.empty()) updated_by.assign(m.io.size(), -1);
        int32_t& updater = updated_by[static_cast<size_t>(op.a)];
        if (updater >= 0)
          return fail(error, expect() + "cache " + quoted(m, op.a) + " is already updated by op #" +
                                 std::to_string(updater) + "; an input is aliased by one output at most");
        updater = static_cast<int32_t>(k);
        if (!is_float_tensor(m, op.b)) return fail(error, expect() + "update " + quoted(m, op.b) + " must be float32");
        if (!is_index_tensor(m, op.c))
          return fail(error, expect() + "write indices " + quoted(m, op.c) + " must be int32 or int64");
        break;
      }
      case OpKind::kCausalAttention:
        if (!is_float_tensor(m, op.a) || !is_float_tensor(m, op.b) || !is_float_tensor(m, op.c))
          return fail(error, expect() + "queries " + quoted(m, op.a) + ", keys " + quoted(m, op.b) + " and values " +
                                 quoted(m, op.c) + " must be float32");
        if (!is_index_tensor(m, op.d))
          return fail(error, expect() + "positions " + quoted(m, op.d) + " must be int32 or int64");
        if (!std::isfinite(op.factor)) return fail(error, expect() + "scale factor must be finite");
        break;
    }
    const DataType produced = op.kind == OpKind::kIdentity ? m.tensor_dtype(op.a) : DataType::kFloat32;
    if (m.tensor_dtype(op.out) != produced)
      return fail(error, where() + " produces " + to_string(produced) + " but " + quoted(m, op.out) + " is " +
                             to_string(m.tensor_dtype(op.out)));
    available[static_cast<size_t>(op.out)] = true;
  }
  for (int32_t id = 0; id < m.num_tensors(); ++id)
    if (!available[static_cast<size_t>(id)])
      return fail(error, std::string(m.is_intermediate(id) ? "intermediate " : "output ") + quoted(m, id) +
                             " is never written by any op");
  return true;
}

}  // namespace

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbedding:
      return "embedding";
    case OpKind::kAdd:
      return "add";
    case OpKind::kAddBias:
      return "add_bias";
    case OpKind::kScale:
      return "scale";
    case OpKind::kMatMul:
      return "matmul";
    case OpKind::kIdentity:
      return "identity";
    case OpKind::kKvCacheUpdate:
      return "kv_cache_update";
    case OpKind::kCausalAttention:
      return "causal_attention";
  }
  return "unknown";
}

int32_t Model::aliased_input(int32_t io_index) const {
  if (io_alias.size() == io.size())
    return io_index >= 0 && io_index < num_io() ? io_alias[static_cast<size_t>(io_index)] : -1;
  for (const Op& op : ops)
    if (op.kind == OpKind::kKvCacheUpdate && op.out == io_index) return op.a;
  return -1;
}

uint64_t Model::constant_bytes() const {
  uint64_t bytes = 0;
  for (const Constant& c : constants) bytes += c.values.size() * sizeof(float);
  return bytes;
}

uint64_t Model::largest_constant_bytes() const {
  uint64_t bytes = 0;
  for (const Constant& c : constants) bytes = std::max<uint64_t>(bytes, c.values.size() * sizeof(float));
  return bytes;
}

int32_t Model::num_inputs() const {
  int32_t n = 0;
  for (const TensorDesc& t : io) n += t.is_input ? 1 : 0;
  return n;
}

int32_t Model::find_io(const char* name) const {
  if (name == nullptr) return -1;
  if (io_by_name.size() != io.size() || io.size() <= 16) {
    for (size_t i = 0; i < io.size(); ++i)
      if (io[i].name == name) return static_cast<int32_t>(i);
    return -1;
  }
  const std::string_view key(name);
  const auto it = std::lower_bound(io_by_name.begin(), io_by_name.end(), key, [this](int32_t i, std::string_view k) {
    return std::string_view(io[static_cast<size_t>(i)].name) < k;
  });
  return it != io_by_name.end() && io[static_cast<size_t>(*it)].name == key ? *it : -1;
}

void Model::build_indexes() {
  io_by_name.resize(io.size());
  for (size_t i = 0; i < io.size(); ++i) io_by_name[i] = static_cast<int32_t>(i);
  std::sort(io_by_name.begin(), io_by_name.end(),
            [this](int32_t a, int32_t b) { return io[static_cast<size_t>(a)].name < io[static_cast<size_t>(b)].name; });
  io_alias.assign(io.size(), -1);
  for (const Op& op : ops)
    if (op.kind == OpKind::kKvCacheUpdate && op.out >= 0 && op.out < num_io())
      io_alias[static_cast<size_t>(op.out)] = op.a;
}

std::vector<int32_t> Model::input_ordinals() const {
  std::vector<int32_t> ordinals(io.size(), -1);
  int32_t k = 0;
  for (size_t i = 0; i < io.size(); ++i)
    if (io[i].is_input) ordinals[i] = k++;
  return ordinals;
}

const std::string& Model::tensor_name(int32_t id) const {
  if (id < num_io()) return io[static_cast<size_t>(id)].name;
  if (is_constant(id)) return constant(id).name;
  return intermediates[static_cast<size_t>(id - intermediate_id(0))].name;
}

DataType Model::tensor_dtype(int32_t id) const {
  if (id < num_io()) return io[static_cast<size_t>(id)].dtype;
  if (is_constant(id)) return DataType::kFloat32;
  return intermediates[static_cast<size_t>(id - intermediate_id(0))].dtype;
}

std::string escape_name(const std::string& name) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(name.size());
  const auto* p = reinterpret_cast<const unsigned char*>(name.data());
  for (size_t i = 0; i < name.size();) {
    const unsigned char c = p[i];
    if (c == '\\') {
      out += "\\\\";
      ++i;
      continue;
    }
    const size_t n = c < 0x20 || c == 0x7F ? 0 : utf8_sequence_length(p + i, name.size() - i);
    if (n == 0) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    } else {
      out.append(name, i, n);
      i += n;
    }
  }
  return out;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (int32_t i = 0; i < shape.rank && i < kMaxRank; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape.d[i]);
  }
  return s + "]";
}

bool tensor_bytes(const Shape& shape, DataType dtype, uint64_t* bytes) {
  uint64_t n = element_size(dtype);
  if (n == 0 || shape.rank < 0 || shape.rank > kMaxRank) return false;
  for (int32_t i = 0; i < shape.rank; ++i) {
    if (shape.d[i] < 0) return false;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(shape.d[i]), &n)) return false;
  }
  if (n > kMaxTensorBytes) return false;
  *bytes = n;
  return true;
}

bool infer_shapes(const Model& m, std::vector<Shape>& shapes, std::string* error) {
  for (size_t i = 0; i < m.constants.size(); ++i) shapes[static_cast<size_t>(m.constant_id(i))] = m.constants[i].shape;
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const Op& op = m.ops[k];
    const Shape& a = shapes[static_cast<size_t>(op.a)];
    Shape out = a;
    switch (op.kind) {
      case OpKind::kEmbedding: {
        const Shape& table = shapes[static_cast<size_t>(op.b)];
        if (a.rank >= kMaxRank)
          return fail(error, op_name(m, k) + ": ids " + shape_to_string(a) + " leave no room for the hidden dim");
        out.d[out.rank++] = table.d[1];
        break;
      }
      case OpKind::kAdd:
        if (a != shapes[static_cast<size_t>(op.b)])
          return fail(error, op_name(m, k) + ": operands " + quoted(m, op.a) + " " + shape_to_string(a) + " and " +
                                 quoted(m, op.b) + " " + shape_to_string(shapes[static_cast<size_t>(op.b)]) +
                                 " must have the same shape");
        break;
      case OpKind::kAddBias: {
        const Shape& bias = shapes[static_cast<size_t>(op.b)];
        if (a.rank < 1 || a.d[a.rank - 1] != bias.d[0])
          return fail(error, op_name(m, k) + ": input " + quoted(m, op.a) + " " + shape_to_string(a) +
                                 " must end in the bias length " + std::to_string(bias.d[0]));
        break;
      }
      case OpKind::kMatMul: {
        const Shape& w = shapes[static_cast<size_t>(op.b)];
        if (a.rank < 1 || a.d[a.rank - 1] != w.d[0])
          return fail(error, op_name(m, k) + ": input " + quoted(m, op.a) + " " + shape_to_string(a) +
                                 " must end in K = " + std::to_string(w.d[0]) + " to multiply weight " +
                                 quoted(m, op.b) + " " + shape_to_string(w));
        out.d[out.rank - 1] = w.d[1];
        break;
      }
      case OpKind::kScale:
      case OpKind::kIdentity:
        break;
      case OpKind::kKvCacheUpdate: {
        const Shape& update = shapes[static_cast<size_t>(op.b)];
        const Shape& indices = shapes[static_cast<size_t>(op.c)];
        if (a.rank != 3 || update.rank != 3 || update.d[0] != a.d[0] || update.d[2] != a.d[2] || update.d[1] > a.d[1])
          return fail(error, op_name(m, k) + ": cache " + quoted(m, op.a) + " " + shape_to_string(a) +
                                 " must be [B, T, D] and update " + quoted(m, op.b) + " " + shape_to_string(update) +
                                 " [B, S, D] with S <= T");
        if (indices.rank != 1 || indices.d[0] != a.d[0])
          return fail(error, op_name(m, k) + ": write indices " + quoted(m, op.c) + " " + shape_to_string(indices) +
                                 " must be [B] = [" + std::to_string(a.d[0]) + "]");
        break;
      }
      case OpKind::kCausalAttention: {
        const Shape& keys = shapes[static_cast<size_t>(op.b)];
        const Shape& values = shapes[static_cast<size_t>(op.c)];
        const Shape& positions = shapes[static_cast<size_t>(op.d)];
        if (a.rank != 3 || keys.rank != 3 || values.rank != 3 || keys.d[0] != a.d[0] || keys.d[2] != a.d[2] ||
            values.d[0] != a.d[0] || values.d[1] != keys.d[1] || a.d[1] > keys.d[1])
          return fail(error, op_name(m, k) + ": queries " + quoted(m, op.a) + " " + shape_to_string(a) + ", keys " +
                                 quoted(m, op.b) + " " + shape_to_string(keys) + " and values " + quoted(m, op.c) +
                                 " " + shape_to_string(values) + " must be [B, S, D], [B, T, D] and [B, T, E], S <= T");
        if (positions.rank != 1 || positions.d[0] != a.d[0])
          return fail(error, op_name(m, k) + ": positions " + quoted(m, op.d) + " " + shape_to_string(positions) +
                                 " must be [B] = [" + std::to_string(a.d[0]) + "]");
        out.d[2] = values.d[2];
        break;
      }
    }
    if (op.out < m.num_io()) {
      // The engine must produce what it declares: rank and every static dim.
      const Shape& declared = m.io[static_cast<size_t>(op.out)].shape;
      bool matches = declared.rank == out.rank;
      for (int32_t d = 0; matches && d < out.rank; ++d) matches = declared.d[d] < 0 || declared.d[d] == out.d[d];
      if (!matches)
        return fail(error, op_name(m, k) + " produces " + shape_to_string(out) + " but output " + quoted(m, op.out) +
                               " is declared " + shape_to_string(declared));
    }
    shapes[static_cast<size_t>(op.out)] = out;
  }
  return true;
}

bool validate(const Model& m, std::string* error) {
  if (!validate_structure(m, error)) return false;
  // Profiles' shapes are checked below; the scratch memory they imply is checked last (plan_memory).
  std::vector<Shape> shapes(static_cast<size_t>(m.num_tensors()));
  for (size_t p = 0; p < m.profiles.size(); ++p) {
    const char* kWhich[] = {"min", "opt", "max"};
    for (int w = 0; w < 3; ++w) {
      for (size_t i = 0, k = 0; i < m.io.size(); ++i) {
        if (!m.io[i].is_input) continue;
        const InputRange& r = m.profiles[p][k++];
        shapes[i] = w == 0 ? r.min : w == 1 ? r.opt : r.max;
      }
      std::string why;
      if (!infer_shapes(m, shapes, &why))
        return fail(error, "profile " + std::to_string(p) + " (" + kWhich[w] + " shapes): " + why);
    }
  }
  // The scratch a context would allocate, refused here rather than when a context tries to allocate it.
  MemoryPlan plan;
  return plan_memory(m, &plan, error);
}

bool plan_memory(const Model& m, MemoryPlan* plan, std::string* error) {
  // Intermediates' dims are copies of input dims or constants, so they are largest at each profile's max shapes.
  std::vector<uint64_t> need(m.intermediates.size(), 0);
  std::vector<Shape> shapes(static_cast<size_t>(m.num_tensors()));
  for (size_t p = 0; p < m.profiles.size(); ++p) {
    for (size_t i = 0, k = 0; i < m.io.size(); ++i)
      if (m.io[i].is_input) shapes[i] = m.profiles[p][k++].max;
    if (!infer_shapes(m, shapes, error)) return false;
    for (size_t i = 0; i < m.intermediates.size(); ++i) {
      uint64_t bytes = 0;
      if (!tensor_bytes(shapes[static_cast<size_t>(m.intermediate_id(i))], m.intermediates[i].dtype, &bytes))
        return fail(error, "intermediate '" + escape_name(m.intermediates[i].name) + "' is too large under profile " +
                               std::to_string(p));
      if (bytes > need[i]) need[i] = bytes;
    }
  }
  plan->intermediate_offsets.assign(m.intermediates.size(), 0);
  uint64_t offset = 0;
  for (size_t i = 0; i < need.size(); ++i) {
    plan->intermediate_offsets[i] = offset;
    offset += (need[i] + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
    if (offset > kMaxDeviceMemory)
      return fail(error, "the intermediates need more than " + std::to_string(kMaxDeviceMemory) +
                             " bytes of scratch memory, the limit");
  }
  plan->intermediate_bytes = offset;
  plan->device_memory_size = offset > m.requested_device_memory ? offset : m.requested_device_memory;
  return true;
}

}  // namespace etrt::gpufree
