#include "blob/metadata.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "blob/json_text.h"
#include "blob/metadata_reader.h"

namespace etrt::blob {
namespace {

// TensorRT's Dims holds at most 8 dimensions (etrt::kMaxRank).
constexpr size_t kMaxSignatureRank = 8;

bool fail(std::string* error, const std::string& message) {
  if (error != nullptr) *error = "TensorRT blob: " + message;
  return false;
}

std::string at(const char* array, size_t index) { return std::string(array) + "[" + std::to_string(index) + "]"; }

// A name from the blob, quoted for a message with its control characters escaped.
std::string quoted(const std::string& name) { return "'" + detail::escape_name(name) + "'"; }

// Binding names to bindings, built once, so every lookup is O(1) and validation is linear in the metadata.
using BindingIndex = std::unordered_map<std::string_view, const IoBinding*>;

const IoBinding* find_binding(const BindingIndex& index, const std::string& name) {
  const auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

bool validate_limits(const Metadata& m, std::string* error) {
  if (m.io_bindings.size() > kMaxIoBindings)
    return fail(error, detail::too_many_entries("io_bindings", m.io_bindings.size(), kMaxIoBindings));
  if (m.aliased_io.size() > kMaxAliases)
    return fail(error, detail::too_many_entries("aliased_io", m.aliased_io.size(), kMaxAliases));
  if (!m.profile_signature) return true;
  const ProfileSignature& sig = *m.profile_signature;
  if (sig.inputs.size() > kMaxIoBindings)
    return fail(error, detail::too_many_entries("profile_signature.inputs", sig.inputs.size(), kMaxIoBindings));
  if (sig.symbolic_dims.size() > kMaxSymbolicDims)
    return fail(
        error, detail::too_many_entries("profile_signature.symbolic_dims", sig.symbolic_dims.size(), kMaxSymbolicDims));
  return true;
}

// Every string field in the order the JSON holds it, so the first bad one is
// the one reported: name-like strings at most kMaxNameLength bytes, every
// string valid UTF-8. Only the writer can meet invalid UTF-8: the JSON parser
// refuses it on read. Paths are spelled out only for a message.
bool validate_strings(const Metadata& m, std::string* error) {
  const auto check = [&](const std::string& value, auto path) {
    return detail::is_valid_utf8(value) || fail(error, path() + " is not valid UTF-8; re-export the model");
  };
  const auto name = [&](const std::string& value, auto path) {
    if (value.size() > kMaxNameLength)
      return fail(error, path() + " is " + std::to_string(value.size()) + " bytes long, above the limit of " +
                             std::to_string(kMaxNameLength) + "; re-export the model");
    return check(value, path);
  };
  for (size_t i = 0; i < m.io_bindings.size(); ++i) {
    const IoBinding& b = m.io_bindings[i];
    if (!name(b.name, [&] { return at("io_bindings", i) + ".name"; }) ||
        !name(b.dtype, [&] { return at("io_bindings", i) + ".dtype"; }))
      return false;
  }
  for (size_t i = 0; i < m.aliased_io.size(); ++i) {
    const AliasedIo& a = m.aliased_io[i];
    if (!name(a.output, [&] { return at("aliased_io", i) + ".output"; }) ||
        !name(a.input, [&] { return at("aliased_io", i) + ".input"; }) ||
        !name(a.kind, [&] { return at("aliased_io", i) + ".kind"; }))
      return false;
  }
  if (!check(m.serialized_metadata, [] { return std::string("serialized_metadata"); }) ||
      !check(m.target_platform, [] { return std::string("target_platform"); }))
    return false;
  if (!m.profile_signature) return true;
  const ProfileSignature& sig = *m.profile_signature;
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (!name(sig.inputs[i].name, [&] { return "profile_signature." + at("inputs", i) + ".name"; })) return false;
  for (size_t i = 0; i < sig.symbolic_dims.size(); ++i) {
    const SymbolicDim& d = sig.symbolic_dims[i];
    if (!name(d.name, [&] { return "profile_signature." + at("symbolic_dims", i) + ".name"; }) ||
        !name(d.input, [&] { return "profile_signature." + at("symbolic_dims", i) + ".input"; }))
      return false;
  }
  return true;
}

// Inputs and outputs may interleave: the delegate's arguments are the inputs in their listed order, then the
// outputs in theirs. Fills `index` with every binding by name.
bool validate_bindings(const Metadata& m, BindingIndex* index, std::string* error) {
  const std::vector<IoBinding>& bindings = m.io_bindings;
  std::unordered_map<std::string_view, size_t> first;
  first.reserve(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    const IoBinding& b = bindings[i];
    if (b.name.empty())
      return fail(error, at("io_bindings", i) +
                             ".name is empty; every engine input and output needs its TensorRT tensor name, "
                             "re-export the model");
    if (b.name.find('\0') != std::string::npos)
      return fail(error, at("io_bindings", i) + ".name " + quoted(b.name) +
                             " contains a NUL byte; TensorRT tensor names are C strings, so no engine tensor has "
                             "this name, re-export the model");
    const auto [it, fresh] = first.emplace(b.name, i);
    if (!fresh)
      return fail(error, at("io_bindings", it->second) + " and " + at("io_bindings", i) + " are both named " +
                             quoted(b.name) + "; binding names must be unique, re-export the model");
    index->emplace(b.name, &b);
  }
  return true;
}

bool validate_aliases(const Metadata& m, const BindingIndex& index, std::string* error) {
  std::unordered_map<std::string_view, size_t> first;
  first.reserve(m.aliased_io.size());
  for (size_t i = 0; i < m.aliased_io.size(); ++i) {
    const AliasedIo& a = m.aliased_io[i];
    const auto path = [i] { return at("aliased_io", i); };
    const IoBinding* out = find_binding(index, a.output);
    if (out == nullptr || out->is_input)
      return fail(error,
                  path() + ".output " + quoted(a.output) + " is not an output in io_bindings; re-export the model");
    const IoBinding* in = find_binding(index, a.input);
    if (in == nullptr || !in->is_input)
      return fail(error, path() + ".input " + quoted(a.input) + " is not an input in io_bindings; re-export the model");
    if (a.kind.empty())
      return fail(error, path() + ".kind is empty; use '" + kAliasKindKvCacheUpdate + "' or '" + kAliasKindUser + "'");
    const auto [it, fresh] = first.emplace(a.output, i);
    if (!fresh)
      return fail(error, at("aliased_io", it->second) + " and " + path() + " both alias output " + quoted(a.output) +
                             "; an output aliases one input at most, re-export the model");
  }
  return true;
}

bool validate_signature_input(const ProfileSignature& sig, size_t i, std::string* error) {
  const SignatureInput& input = sig.inputs[i];
  const auto what = [&] { return "profile_signature." + at("inputs", i) + " " + quoted(input.name); };
  if (input.profiles.size() != static_cast<size_t>(sig.num_profiles))
    return fail(error, what() + " has " + std::to_string(input.profiles.size()) + " profiles but num_profiles is " +
                           std::to_string(sig.num_profiles) + "; re-export the model");
  const size_t rank = input.profiles[0].min.size();
  for (size_t p = 0; p < input.profiles.size(); ++p) {
    const ProfileBounds& b = input.profiles[p];
    const auto profile = [p] { return " profile " + std::to_string(p); };
    if (b.opt.size() != b.min.size() || b.max.size() != b.min.size())
      return fail(error, what() + profile() + " has min of rank " + std::to_string(b.min.size()) + ", opt of rank " +
                             std::to_string(b.opt.size()) + " and max of rank " + std::to_string(b.max.size()) +
                             "; they must have the same rank, re-export the model");
    if (p == 0 && rank > kMaxSignatureRank)
      return fail(error, what() + " has rank " + std::to_string(rank) +
                             "; TensorRT tensors have at most 8 dimensions, re-export the model");
    if (b.min.size() != rank)
      return fail(error, what() + " has rank " + std::to_string(b.min.size()) + " in" + profile() + " but rank " +
                             std::to_string(rank) +
                             " in profile 0; an input has one rank in every profile, "
                             "re-export the model");
    for (size_t d = 0; d < rank; ++d)
      if (b.min[d] < 0 || b.min[d] > b.opt[d] || b.opt[d] > b.max[d])
        return fail(error, what() + profile() + " dim " + std::to_string(d) + " has min " + std::to_string(b.min[d]) +
                               ", opt " + std::to_string(b.opt[d]) + ", max " + std::to_string(b.max[d]) +
                               "; bounds must satisfy 0 <= min <= opt <= max, re-export the model");
  }
  return true;
}

// Signature inputs by name, and for each (input, dim) the first symbolic dim naming it.
struct SignatureIndex {
  std::unordered_map<std::string_view, const SignatureInput*> inputs;
  std::unordered_map<std::string_view, std::array<int64_t, kMaxSignatureRank>> dims;
};

bool validate_symbolic_dim(const Metadata& m, const BindingIndex& bindings, SignatureIndex& index, size_t i,
                           std::string* error) {
  const ProfileSignature& sig = *m.profile_signature;
  const SymbolicDim& s = sig.symbolic_dims[i];
  const auto path = [i] { return "profile_signature." + at("symbolic_dims", i); };
  if (s.name.empty()) return fail(error, path() + ".name is empty; re-export the model");
  const auto what = [&] { return path() + " " + quoted(s.name); };
  const IoBinding* binding = find_binding(bindings, s.input);
  if (binding == nullptr || !binding->is_input)
    return fail(error, what() + " refers to " + quoted(s.input) +
                           ", which is not an input in io_bindings; re-export the model");
  const auto described = index.inputs.find(s.input);
  if (described == index.inputs.end())
    return fail(error, what() + " refers to input " + quoted(s.input) +
                           ", which has no bounds in profile_signature.inputs; re-export the model");
  const size_t rank = described->second->profiles[0].min.size();
  if (s.dim < 0 || static_cast<size_t>(s.dim) >= rank)
    return fail(error, what() + " is dim " + std::to_string(s.dim) + " of input " + quoted(s.input) +
                           ", which has rank " + std::to_string(rank) + "; re-export the model");
  if (s.ranges.size() != static_cast<size_t>(sig.num_profiles))
    return fail(error, what() + " has " + std::to_string(s.ranges.size()) + " ranges but num_profiles is " +
                           std::to_string(sig.num_profiles) + "; re-export the model");
  for (size_t p = 0; p < s.ranges.size(); ++p)
    if (s.ranges[p].first < 0 || s.ranges[p].first > s.ranges[p].second)
      return fail(error, what() + " range " + std::to_string(p) + " is [" + std::to_string(s.ranges[p].first) + ", " +
                             std::to_string(s.ranges[p].second) +
                             "]; a range must satisfy 0 <= lo <= hi, re-export the model");
  std::array<int64_t, kMaxSignatureRank> empty;
  empty.fill(-1);
  int64_t& first = index.dims.emplace(s.input, empty).first->second[static_cast<size_t>(s.dim)];
  if (first >= 0)
    return fail(error, "profile_signature." + at("symbolic_dims", static_cast<size_t>(first)) + " and " + path() +
                           " both describe dim " + std::to_string(s.dim) + " of input " + quoted(s.input) +
                           "; re-export the model");
  first = static_cast<int64_t>(i);
  return true;
}

bool validate_signature(const Metadata& m, const BindingIndex& bindings, std::string* error) {
  const ProfileSignature& sig = *m.profile_signature;
  if (sig.num_profiles < 1)
    return fail(error, "profile_signature.num_profiles is " + std::to_string(sig.num_profiles) +
                           "; an engine has at least one optimization profile, re-export the model");
  if (sig.num_profiles > kMaxProfiles)
    return fail(error, "profile_signature.num_profiles is " + std::to_string(sig.num_profiles) +
                           ", above the limit of " + std::to_string(kMaxProfiles) + "; re-export the model");
  const auto profiles = static_cast<size_t>(sig.num_profiles);
  if (sig.inputs.size() * profiles > kMaxProfileEntries)
    return fail(error, detail::too_many_profile_entries("inputs", sig.inputs.size(), profiles));
  if (sig.symbolic_dims.size() * profiles > kMaxProfileEntries)
    return fail(error, detail::too_many_profile_entries("symbolic dims", sig.symbolic_dims.size(), profiles));
  SignatureIndex index;
  index.inputs.reserve(sig.inputs.size());
  std::unordered_map<std::string_view, size_t> first;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const std::string& name = sig.inputs[i].name;
    const IoBinding* binding = find_binding(bindings, name);
    if (binding == nullptr || !binding->is_input)
      return fail(error, "profile_signature." + at("inputs", i) + " " + quoted(name) +
                             " is not an input in io_bindings; re-export the model");
    const auto [it, fresh] = first.emplace(name, i);
    if (!fresh)
      return fail(error, "profile_signature." + at("inputs", it->second) + " and profile_signature." + at("inputs", i) +
                             " both describe input " + quoted(name) + "; re-export the model");
    if (!validate_signature_input(sig, i, error)) return false;
    index.inputs.emplace(name, &sig.inputs[i]);
  }
  for (size_t i = 0; i < sig.symbolic_dims.size(); ++i)
    if (!validate_symbolic_dim(m, bindings, index, i, error)) return false;
  return true;
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
bool operator==(const Metadata& a, const Metadata& b) {
  return a.io_bindings == b.io_bindings && a.aliased_io == b.aliased_io &&
         a.hardware_compatible == b.hardware_compatible && a.device_id == b.device_id &&
         a.serialized_metadata == b.serialized_metadata && a.target_platform == b.target_platform &&
         a.profile_signature == b.profile_signature;
}

bool validate_metadata(const Metadata& metadata, std::string* error) {
  BindingIndex bindings;
  bindings.reserve(metadata.io_bindings.size());
  return validate_limits(metadata, error) && validate_strings(metadata, error) &&
         validate_bindings(metadata, &bindings, error) && validate_aliases(metadata, bindings, error) &&
         (!metadata.profile_signature || validate_signature(metadata, bindings, error));
}

}  // namespace etrt::blob
