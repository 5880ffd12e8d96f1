#include "blob/metadata.h"

#include <algorithm>

#include "blob/json_text.h"

namespace etrt::blob {
namespace {

// TensorRT's Dims holds at most 8 dimensions (etrt::kMaxRank).
constexpr size_t kMaxSignatureRank = 8;

bool fail(std::string* error, const std::string& message) {
  if (error != nullptr) *error = "TensorRT blob: " + message;
  return false;
}

std::string at(const char* array, size_t index) { return std::string(array) + "[" + std::to_string(index) + "]"; }

const IoBinding* find_binding(const Metadata& m, const std::string& name) {
  for (const IoBinding& b : m.io_bindings)
    if (b.name == name) return &b;
  return nullptr;
}

// Every string field in the order the JSON holds it, so the first bad one is
// the one reported. Only the writer can meet invalid UTF-8: the JSON parser
// refuses it on read.
bool validate_utf8(const Metadata& m, std::string* error) {
  const auto check = [&](const std::string& value, const std::string& path) {
    return detail::is_valid_utf8(value) || fail(error, path + " is not valid UTF-8; re-export the model");
  };
  for (size_t i = 0; i < m.io_bindings.size(); ++i) {
    const std::string path = at("io_bindings", i);
    if (!check(m.io_bindings[i].name, path + ".name") || !check(m.io_bindings[i].dtype, path + ".dtype")) return false;
  }
  for (size_t i = 0; i < m.aliased_io.size(); ++i) {
    const std::string path = at("aliased_io", i);
    const AliasedIo& a = m.aliased_io[i];
    if (!check(a.output, path + ".output") || !check(a.input, path + ".input") || !check(a.kind, path + ".kind"))
      return false;
  }
  if (!check(m.serialized_metadata, "serialized_metadata") || !check(m.target_platform, "target_platform"))
    return false;
  if (!m.profile_signature) return true;
  const ProfileSignature& sig = *m.profile_signature;
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (!check(sig.inputs[i].name, "profile_signature." + at("inputs", i) + ".name")) return false;
  for (size_t i = 0; i < sig.symbolic_dims.size(); ++i) {
    const std::string path = "profile_signature." + at("symbolic_dims", i);
    if (!check(sig.symbolic_dims[i].name, path + ".name") || !check(sig.symbolic_dims[i].input, path + ".input"))
      return false;
  }
  return true;
}

// Inputs and outputs may interleave: the delegate's arguments are the inputs in their listed order, then the
// outputs in theirs.
bool validate_bindings(const Metadata& m, std::string* error) {
  const std::vector<IoBinding>& bindings = m.io_bindings;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const IoBinding& b = bindings[i];
    if (b.name.empty())
      return fail(error, at("io_bindings", i) +
                             ".name is empty; every engine input and output needs its TensorRT tensor name, "
                             "re-export the model");
    for (size_t j = 0; j < i; ++j)
      if (bindings[j].name == b.name)
        return fail(error, at("io_bindings", j) + " and " + at("io_bindings", i) + " are both named '" + b.name +
                               "'; binding names must be unique, re-export the model");
  }
  return true;
}

bool validate_aliases(const Metadata& m, std::string* error) {
  for (size_t i = 0; i < m.aliased_io.size(); ++i) {
    const AliasedIo& a = m.aliased_io[i];
    const std::string path = at("aliased_io", i);
    const IoBinding* out = find_binding(m, a.output);
    if (out == nullptr || out->is_input)
      return fail(error, path + ".output '" + a.output + "' is not an output in io_bindings; re-export the model");
    const IoBinding* in = find_binding(m, a.input);
    if (in == nullptr || !in->is_input)
      return fail(error, path + ".input '" + a.input + "' is not an input in io_bindings; re-export the model");
    if (a.kind.empty()) return fail(error, path + ".kind is empty; use '" + kAliasKindKvCacheUpdate + "' or '" + kAliasKindUser + "'");
    for (size_t j = 0; j < i; ++j)
      if (m.aliased_io[j].output == a.output)
        return fail(error, at("aliased_io", j) + " and " + path + " both alias output '" + a.output +
                               "'; an output aliases one input at most, re-export the model");
  }
  return true;
}

bool validate_signature_input(const ProfileSignature& sig, size_t i, std::string* error) {
  const SignatureInput& input = sig.inputs[i];
  const std::string what = "profile_signature." + at("inputs", i) + " '" + input.name + "'";
  if (input.profiles.size() != static_cast<size_t>(sig.num_profiles))
    return fail(error, what + " has " + std::to_string(input.profiles.size()) + " profiles but num_profiles is " +
                           std::to_string(sig.num_profiles) + "; re-export the model");
  const size_t rank = input.profiles[0].min.size();
  for (size_t p = 0; p < input.profiles.size(); ++p) {
    const ProfileBounds& b = input.profiles[p];
    const std::string profile = " profile " + std::to_string(p);
    if (b.opt.size() != b.min.size() || b.max.size() != b.min.size())
      return fail(error, what + profile + " has min of rank " + std::to_string(b.min.size()) + ", opt of rank " +
                             std::to_string(b.opt.size()) + " and max of rank " + std::to_string(b.max.size()) +
                             "; they must have the same rank, re-export the model");
    if (p == 0 && rank > kMaxSignatureRank)
      return fail(error, what + " has rank " + std::to_string(rank) +
                             "; TensorRT tensors have at most 8 dimensions, re-export the model");
    if (b.min.size() != rank)
      return fail(error, what + " has rank " + std::to_string(b.min.size()) + " in" + profile + " but rank " +
                             std::to_string(rank) +
                             " in profile 0; an input has one rank in every profile, "
                             "re-export the model");
    for (size_t d = 0; d < rank; ++d)
      if (b.min[d] < 0 || b.min[d] > b.opt[d] || b.opt[d] > b.max[d])
        return fail(error, what + profile + " dim " + std::to_string(d) + " has min " + std::to_string(b.min[d]) +
                               ", opt " + std::to_string(b.opt[d]) + ", max " + std::to_string(b.max[d]) +
                               "; bounds must satisfy 0 <= min <= opt <= max, re-export the model");
  }
  return true;
}

bool validate_symbolic_dim(const Metadata& m, size_t i, std::string* error) {
  const ProfileSignature& sig = *m.profile_signature;
  const SymbolicDim& s = sig.symbolic_dims[i];
  const std::string path = "profile_signature." + at("symbolic_dims", i);
  if (s.name.empty()) return fail(error, path + ".name is empty; re-export the model");
  const std::string what = path + " '" + s.name + "'";
  const IoBinding* binding = find_binding(m, s.input);
  if (binding == nullptr || !binding->is_input)
    return fail(error,
                what + " refers to '" + s.input + "', which is not an input in io_bindings; re-export the model");
  const auto described =
      std::find_if(sig.inputs.begin(), sig.inputs.end(), [&](const SignatureInput& in) { return in.name == s.input; });
  if (described == sig.inputs.end())
    return fail(error, what + " refers to input '" + s.input +
                           "', which has no bounds in profile_signature.inputs; re-export the model");
  const size_t rank = described->profiles[0].min.size();
  if (s.dim < 0 || static_cast<size_t>(s.dim) >= rank)
    return fail(error, what + " is dim " + std::to_string(s.dim) + " of input '" + s.input + "', which has rank " +
                           std::to_string(rank) + "; re-export the model");
  if (s.ranges.size() != static_cast<size_t>(sig.num_profiles))
    return fail(error, what + " has " + std::to_string(s.ranges.size()) + " ranges but num_profiles is " +
                           std::to_string(sig.num_profiles) + "; re-export the model");
  for (size_t p = 0; p < s.ranges.size(); ++p)
    if (s.ranges[p].first < 0 || s.ranges[p].first > s.ranges[p].second)
      return fail(error, what + " range " + std::to_string(p) + " is [" + std::to_string(s.ranges[p].first) + ", " +
                             std::to_string(s.ranges[p].second) +
                             "]; a range must satisfy 0 <= lo <= hi, re-export the model");
  for (size_t j = 0; j < i; ++j)
    if (sig.symbolic_dims[j].input == s.input && sig.symbolic_dims[j].dim == s.dim)
      return fail(error, "profile_signature." + at("symbolic_dims", j) + " and " + path + " both describe dim " +
                             std::to_string(s.dim) + " of input '" + s.input + "'; re-export the model");
  return true;
}

bool validate_signature(const Metadata& m, std::string* error) {
  const ProfileSignature& sig = *m.profile_signature;
  if (sig.num_profiles < 1)
    return fail(error, "profile_signature.num_profiles is " + std::to_string(sig.num_profiles) +
                           "; an engine has at least one optimization profile, re-export the model");
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const std::string& name = sig.inputs[i].name;
    const IoBinding* binding = find_binding(m, name);
    if (binding == nullptr || !binding->is_input)
      return fail(error, "profile_signature." + at("inputs", i) + " '" + name +
                             "' is not an input in io_bindings; re-export the model");
    for (size_t j = 0; j < i; ++j)
      if (sig.inputs[j].name == name)
        return fail(error, "profile_signature." + at("inputs", j) + " and profile_signature." + at("inputs", i) +
                               " both describe input '" + name + "'; re-export the model");
    if (!validate_signature_input(sig, i, error)) return false;
  }
  for (size_t i = 0; i < sig.symbolic_dims.size(); ++i)
    if (!validate_symbolic_dim(m, i, error)) return false;
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
  return validate_utf8(metadata, error) && validate_bindings(metadata, error) && validate_aliases(metadata, error) &&
         (!metadata.profile_signature || validate_signature(metadata, error));
}

}  // namespace etrt::blob
