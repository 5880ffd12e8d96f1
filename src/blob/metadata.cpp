#include "blob/metadata.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <string_view>
#include <unordered_map>

#include "blob/json_text.h"
#include "blob/metadata_reader.h"

namespace etrt::blob {
namespace {

// TensorRT's Dims holds at most 8 dimensions (etrt::kMaxRank).
constexpr size_t kMaxSignatureRank = 8;

// A name from the blob, quoted for a message with its control characters escaped.
std::string quoted(const std::string& name) { return "'" + detail::escape_name(name) + "'"; }

// Binding names to bindings, built once, so every lookup is O(1) and validation is linear in the metadata.
using BindingIndex = std::unordered_map<std::string_view, const IoBinding*>;

const IoBinding* find_binding(const BindingIndex& index, const std::string& name) {
  const auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

Error validate_limits(const Metadata& m, Diagnostic& why) {
  if (m.io_bindings.size() > kMaxIoBindings)
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s",
                detail::too_many_entries("io_bindings", m.io_bindings.size(), kMaxIoBindings).c_str());
  if (m.aliased_io.size() > kMaxAliases)
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s",
                detail::too_many_entries("aliased_io", m.aliased_io.size(), kMaxAliases).c_str());
  if (m.delegate_state.size() > kMaxStates)
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s",
                detail::too_many_entries("delegate_state", m.delegate_state.size(), kMaxStates).c_str());
  if (!m.profile_signature) return Error::Ok;
  const ProfileSignature& sig = *m.profile_signature;
  if (sig.inputs.size() > kMaxIoBindings)
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s",
                detail::too_many_entries("profile_signature.inputs", sig.inputs.size(), kMaxIoBindings).c_str());
  if (sig.symbolic_dims.size() > kMaxSymbolicDims)
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s",
                detail::too_many_entries("profile_signature.symbolic_dims", sig.symbolic_dims.size(), kMaxSymbolicDims)
                    .c_str());
  return Error::Ok;
}

// Every string field in the order the JSON holds it, so the first bad one is
// the one reported: name-like strings at most kMaxNameLength bytes, every
// string valid UTF-8. Only the writer can meet invalid UTF-8: the JSON parser
// refuses it on read. Paths are spelled out only for a message.
Error validate_strings(const Metadata& m, Diagnostic& why) {
  // `path` returns the field's path as a std::string, called only to write a refusal.
  const auto check = [&](const std::string& value, auto path) {
    if (detail::is_valid_utf8(value)) return Error::Ok;
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s is not valid UTF-8; re-export the model",
                path().c_str());
  };
  const auto name = [&](const std::string& value, auto path) {
    if (value.size() > kMaxNameLength)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: %s is %zu bytes long, above the limit of %zu; re-export the model", path().c_str(),
                  value.size(), kMaxNameLength);
    return check(value, path);
  };
  const auto at = [](const char* prefix, const char* array, size_t index, const char* field) {
    return std::string(prefix) + array + "[" + std::to_string(index) + "]" + field;
  };
  for (size_t i = 0; i < m.io_bindings.size(); ++i) {
    const IoBinding& b = m.io_bindings[i];
    if (const Error e = name(b.name, [&] { return at("", "io_bindings", i, ".name"); }); e != Error::Ok) return e;
    if (const Error e = name(b.dtype, [&] { return at("", "io_bindings", i, ".dtype"); }); e != Error::Ok) return e;
  }
  for (size_t i = 0; i < m.aliased_io.size(); ++i) {
    const AliasedIo& a = m.aliased_io[i];
    if (const Error e = name(a.output, [&] { return at("", "aliased_io", i, ".output"); }); e != Error::Ok) return e;
    if (const Error e = name(a.input, [&] { return at("", "aliased_io", i, ".input"); }); e != Error::Ok) return e;
    if (const Error e = name(a.kind, [&] { return at("", "aliased_io", i, ".kind"); }); e != Error::Ok) return e;
  }
  if (const Error e = check(m.serialized_metadata, [] { return std::string("serialized_metadata"); }); e != Error::Ok)
    return e;
  if (const Error e = check(m.target_platform, [] { return std::string("target_platform"); }); e != Error::Ok) return e;
  if (m.profile_signature) {
    const ProfileSignature& sig = *m.profile_signature;
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      if (const Error e = name(sig.inputs[i].name, [&] { return at("profile_signature.", "inputs", i, ".name"); });
          e != Error::Ok)
        return e;
    for (size_t i = 0; i < sig.symbolic_dims.size(); ++i) {
      const SymbolicDim& d = sig.symbolic_dims[i];
      if (const Error e = name(d.name, [&] { return at("profile_signature.", "symbolic_dims", i, ".name"); });
          e != Error::Ok)
        return e;
      if (const Error e = name(d.input, [&] { return at("profile_signature.", "symbolic_dims", i, ".input"); });
          e != Error::Ok)
        return e;
    }
  }
  for (size_t i = 0; i < m.delegate_state.size(); ++i) {
    const DelegateState& s = m.delegate_state[i];
    if (const Error e = name(s.name, [&] { return at("", "delegate_state", i, ".name"); }); e != Error::Ok) return e;
    if (const Error e = name(s.input, [&] { return at("", "delegate_state", i, ".input"); }); e != Error::Ok) return e;
    if (const Error e = name(s.output, [&] { return at("", "delegate_state", i, ".output"); }); e != Error::Ok)
      return e;
    if (const Error e = name(s.initial_value, [&] { return at("", "delegate_state", i, ".initial_value"); });
        e != Error::Ok)
      return e;
  }
  return Error::Ok;
}

// Inputs and outputs may interleave: the delegate's arguments are the inputs in their listed order, then the
// outputs in theirs. Fills `index` with every binding by name.
Error validate_bindings(const Metadata& m, BindingIndex* index, Diagnostic& why) {
  const std::vector<IoBinding>& bindings = m.io_bindings;
  std::unordered_map<std::string_view, size_t> first;
  first.reserve(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    const IoBinding& b = bindings[i];
    if (b.name.empty())
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: io_bindings[%zu].name is empty; every engine input and output needs its TensorRT "
                  "tensor name, re-export the model",
                  i);
    if (b.name.find('\0') != std::string::npos)
      return fail(
          why, Error::InvalidArgument,
          "TensorRT blob: io_bindings[%zu].name %s contains a NUL byte; TensorRT tensor names are C strings, so "
          "no engine tensor has this name, re-export the model",
          i, quoted(b.name).c_str());
    const auto [it, fresh] = first.emplace(b.name, i);
    if (!fresh)
      return fail(
          why, Error::InvalidArgument,
          "TensorRT blob: io_bindings[%zu] and io_bindings[%zu] are both named %s; binding names must be unique, "
          "re-export the model",
          it->second, i, quoted(b.name).c_str());
    index->emplace(b.name, &b);
  }
  return Error::Ok;
}

Error validate_aliases(const Metadata& m, const BindingIndex& index, Diagnostic& why) {
  std::unordered_map<std::string_view, size_t> first;
  first.reserve(m.aliased_io.size());
  for (size_t i = 0; i < m.aliased_io.size(); ++i) {
    const AliasedIo& a = m.aliased_io[i];
    const IoBinding* out = find_binding(index, a.output);
    if (out == nullptr || out->is_input)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: aliased_io[%zu].output %s is not an output in io_bindings; re-export the model", i,
                  quoted(a.output).c_str());
    const IoBinding* in = find_binding(index, a.input);
    if (in == nullptr || !in->is_input)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: aliased_io[%zu].input %s is not an input in io_bindings; re-export the model", i,
                  quoted(a.input).c_str());
    if (a.kind.empty())
      return fail(why, Error::InvalidArgument, "TensorRT blob: aliased_io[%zu].kind is empty; use '%s' or '%s'", i,
                  kAliasKindKvCacheUpdate, kAliasKindUser);
    const auto [it, fresh] = first.emplace(a.output, i);
    if (!fresh)
      return fail(
          why, Error::InvalidArgument,
          "TensorRT blob: aliased_io[%zu] and aliased_io[%zu] both alias output %s; an output aliases one input "
          "at most, re-export the model",
          it->second, i, quoted(a.output).c_str());
  }
  return Error::Ok;
}

// Each state names an input and an output binding that no other state uses, under a name no other state has: the
// delegate binds both to storage it owns, so the call passes neither.
Error validate_states(const Metadata& m, const BindingIndex& index, Diagnostic& why) {
  std::unordered_map<std::string_view, size_t> names, inputs, outputs;
  for (size_t i = 0; i < m.delegate_state.size(); ++i) {
    const DelegateState& s = m.delegate_state[i];
    if (s.name.empty())
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: delegate_state[%zu].name is empty; a state needs a name (the mutable buffer's) for "
                  "delegates to share it by, re-export the model",
                  i);
    const IoBinding* in = find_binding(index, s.input);
    if (in == nullptr || !in->is_input)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: delegate_state[%zu] %s: input %s is not an input in io_bindings; re-export the model",
                  i, quoted(s.name).c_str(), quoted(s.input).c_str());
    const IoBinding* out = find_binding(index, s.output);
    if (out == nullptr || out->is_input)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: delegate_state[%zu] %s: output %s is not an output in io_bindings; re-export the "
                  "model",
                  i, quoted(s.name).c_str(), quoted(s.output).c_str());
    const struct {
      std::unordered_map<std::string_view, size_t>& seen;
      const std::string& value;
      const char* what;
    } unique[] = {{names, s.name, "name"}, {inputs, s.input, "input"}, {outputs, s.output, "output"}};
    for (const auto& u : unique) {
      const auto [it, fresh] = u.seen.emplace(u.value, i);
      if (!fresh)
        return fail(why, Error::InvalidArgument,
                    "TensorRT blob: delegate_state[%zu] and delegate_state[%zu] have the same %s %s; each state has "
                    "its own name, input and output, re-export the model",
                    it->second, i, u.what, quoted(u.value).c_str());
    }
  }
  return Error::Ok;
}

Error validate_signature_input(const ProfileSignature& sig, size_t i, Diagnostic& why) {
  const SignatureInput& input = sig.inputs[i];
  const std::string& name = input.name;
  if (input.profiles.size() != static_cast<size_t>(sig.num_profiles))
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.inputs[%zu] %s has %zu profiles but num_profiles is %" PRId32
                "; re-export the model",
                i, quoted(name).c_str(), input.profiles.size(), sig.num_profiles);
  const size_t rank = input.profiles[0].min.size();
  for (size_t p = 0; p < input.profiles.size(); ++p) {
    const ProfileBounds& b = input.profiles[p];
    if (b.opt.size() != b.min.size() || b.max.size() != b.min.size())
      return fail(
          why, Error::InvalidArgument,
          "TensorRT blob: profile_signature.inputs[%zu] %s profile %zu has min of rank %zu, opt of rank %zu and "
          "max of rank %zu; they must have the same rank, re-export the model",
          i, quoted(name).c_str(), p, b.min.size(), b.opt.size(), b.max.size());
    if (p == 0 && rank > kMaxSignatureRank)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: profile_signature.inputs[%zu] %s has rank %zu; TensorRT tensors have at most 8 "
                  "dimensions, re-export the model",
                  i, quoted(name).c_str(), rank);
    if (b.min.size() != rank)
      return fail(
          why, Error::InvalidArgument,
          "TensorRT blob: profile_signature.inputs[%zu] %s has rank %zu in profile %zu but rank %zu in profile 0; "
          "an input has one rank in every profile, re-export the model",
          i, quoted(name).c_str(), b.min.size(), p, rank);
    for (size_t d = 0; d < rank; ++d)
      if (b.min[d] < 0 || b.min[d] > b.opt[d] || b.opt[d] > b.max[d])
        return fail(why, Error::InvalidArgument,
                    "TensorRT blob: profile_signature.inputs[%zu] %s profile %zu dim %zu has min %" PRId64
                    ", opt %" PRId64 ", max %" PRId64
                    "; bounds must satisfy 0 <= min <= opt <= max, re-export the model",
                    i, quoted(name).c_str(), p, d, b.min[d], b.opt[d], b.max[d]);
  }
  return Error::Ok;
}

// Signature inputs by name, and for each (input, dim) the first symbolic dim naming it.
struct SignatureIndex {
  std::unordered_map<std::string_view, const SignatureInput*> inputs;
  std::unordered_map<std::string_view, std::array<int64_t, kMaxSignatureRank>> dims;
};

Error validate_symbolic_dim(const Metadata& m, const BindingIndex& bindings, SignatureIndex& index, size_t i,
                            Diagnostic& why) {
  const ProfileSignature& sig = *m.profile_signature;
  const SymbolicDim& s = sig.symbolic_dims[i];
  if (s.name.empty())
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.symbolic_dims[%zu].name is empty; re-export the model", i);
  const IoBinding* binding = find_binding(bindings, s.input);
  if (binding == nullptr || !binding->is_input)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.symbolic_dims[%zu] %s refers to %s, which is not an input in "
                "io_bindings; re-export the model",
                i, quoted(s.name).c_str(), quoted(s.input).c_str());
  const auto described = index.inputs.find(s.input);
  if (described == index.inputs.end())
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.symbolic_dims[%zu] %s refers to input %s, which has no bounds in "
                "profile_signature.inputs; re-export the model",
                i, quoted(s.name).c_str(), quoted(s.input).c_str());
  const size_t rank = described->second->profiles[0].min.size();
  if (s.dim < 0 || static_cast<size_t>(s.dim) >= rank)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.symbolic_dims[%zu] %s is dim %" PRId32
                " of input %s, which has rank %zu; re-export the model",
                i, quoted(s.name).c_str(), s.dim, quoted(s.input).c_str(), rank);
  if (s.ranges.size() != static_cast<size_t>(sig.num_profiles))
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.symbolic_dims[%zu] %s has %zu ranges but num_profiles is %" PRId32
                "; re-export the model",
                i, quoted(s.name).c_str(), s.ranges.size(), sig.num_profiles);
  for (size_t p = 0; p < s.ranges.size(); ++p)
    if (s.ranges[p].first < 0 || s.ranges[p].first > s.ranges[p].second)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: profile_signature.symbolic_dims[%zu] %s range %zu is [%" PRId64 ", %" PRId64
                  "]; a range must satisfy 0 <= lo <= hi, re-export the model",
                  i, quoted(s.name).c_str(), p, s.ranges[p].first, s.ranges[p].second);
  std::array<int64_t, kMaxSignatureRank> empty;
  empty.fill(-1);
  int64_t& first = index.dims.emplace(s.input, empty).first->second[static_cast<size_t>(s.dim)];
  if (first >= 0)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.symbolic_dims[%zu] and profile_signature.symbolic_dims[%zu] both "
                "describe dim %" PRId32 " of input %s; re-export the model",
                static_cast<size_t>(first), i, s.dim, quoted(s.input).c_str());
  first = static_cast<int64_t>(i);
  return Error::Ok;
}

Error validate_signature(const Metadata& m, const BindingIndex& bindings, Diagnostic& why) {
  const ProfileSignature& sig = *m.profile_signature;
  if (sig.num_profiles < 1)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.num_profiles is %" PRId32
                "; an engine has at least one optimization profile, re-export the model",
                sig.num_profiles);
  if (sig.num_profiles > kMaxProfiles)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: profile_signature.num_profiles is %" PRId32 ", above the limit of %" PRId32
                "; re-export the model",
                sig.num_profiles, kMaxProfiles);
  const auto profiles = static_cast<size_t>(sig.num_profiles);
  if (sig.inputs.size() * profiles > kMaxProfileEntries)
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s",
                detail::too_many_profile_entries("inputs", sig.inputs.size(), profiles).c_str());
  if (sig.symbolic_dims.size() * profiles > kMaxProfileEntries)
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s",
                detail::too_many_profile_entries("symbolic dims", sig.symbolic_dims.size(), profiles).c_str());
  SignatureIndex index;
  index.inputs.reserve(sig.inputs.size());
  std::unordered_map<std::string_view, size_t> first;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const std::string& name = sig.inputs[i].name;
    const IoBinding* binding = find_binding(bindings, name);
    if (binding == nullptr || !binding->is_input)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: profile_signature.inputs[%zu] %s is not an input in io_bindings; re-export the model",
                  i, quoted(name).c_str());
    const auto [it, fresh] = first.emplace(name, i);
    if (!fresh)
      return fail(why, Error::InvalidArgument,
                  "TensorRT blob: profile_signature.inputs[%zu] and profile_signature.inputs[%zu] both describe input "
                  "%s; re-export the model",
                  it->second, i, quoted(name).c_str());
    if (const Error e = validate_signature_input(sig, i, why); e != Error::Ok) return e;
    index.inputs.emplace(name, &sig.inputs[i]);
  }
  for (size_t i = 0; i < sig.symbolic_dims.size(); ++i)
    if (const Error e = validate_symbolic_dim(m, bindings, index, i, why); e != Error::Ok) return e;
  return Error::Ok;
}

}  // namespace

size_t Metadata::num_inputs() const {
  return static_cast<size_t>(
      std::count_if(io_bindings.begin(), io_bindings.end(), [](const IoBinding& b) { return b.is_input; }));
}

size_t Metadata::num_outputs() const { return io_bindings.size() - num_inputs(); }

bool operator==(const IoBinding& a, const IoBinding& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.is_input == b.is_input;
}
bool operator==(const AliasedIo& a, const AliasedIo& b) {
  return a.output == b.output && a.input == b.input && a.kind == b.kind;
}
bool operator==(const ProfileBounds& a, const ProfileBounds& b) {
  return a.min == b.min && a.opt == b.opt && a.max == b.max;
}
bool operator==(const SignatureInput& a, const SignatureInput& b) {
  return a.name == b.name && a.profiles == b.profiles;
}
bool operator==(const SymbolicDim& a, const SymbolicDim& b) {
  return a.name == b.name && a.input == b.input && a.dim == b.dim && a.ranges == b.ranges;
}
bool operator==(const ProfileSignature& a, const ProfileSignature& b) {
  return a.num_profiles == b.num_profiles && a.inputs == b.inputs && a.symbolic_dims == b.symbolic_dims;
}
bool operator==(const DelegateState& a, const DelegateState& b) {
  return a.name == b.name && a.input == b.input && a.output == b.output && a.initial_value == b.initial_value;
}
bool operator==(const Metadata& a, const Metadata& b) {
  return a.io_bindings == b.io_bindings && a.aliased_io == b.aliased_io &&
         a.hardware_compatible == b.hardware_compatible && a.device_id == b.device_id &&
         a.serialized_metadata == b.serialized_metadata && a.target_platform == b.target_platform &&
         a.profile_signature == b.profile_signature && a.delegate_state == b.delegate_state;
}

Error validate_metadata(const Metadata& metadata, Diagnostic& why) {
  BindingIndex bindings;
  bindings.reserve(metadata.io_bindings.size());
  if (const Error e = validate_limits(metadata, why); e != Error::Ok) return e;
  if (const Error e = validate_strings(metadata, why); e != Error::Ok) return e;
  if (const Error e = validate_bindings(metadata, &bindings, why); e != Error::Ok) return e;
  if (const Error e = validate_aliases(metadata, bindings, why); e != Error::Ok) return e;
  if (metadata.profile_signature)
    if (const Error e = validate_signature(metadata, bindings, why); e != Error::Ok) return e;
  return validate_states(metadata, bindings, why);
}

}  // namespace etrt::blob
