// Writes the metadata JSON exactly as python/etrt/blob.py does
// (json.dumps(..., separators=(",", ":")) over a dict built in this key
// order). tests/vectors/blob holds the bytes both must produce.

#include "blob/blob.h"
#include "blob/json_text.h"

namespace etrt::blob {
namespace {

using detail::append_json_int;
using detail::append_json_string;

void append_key(std::string& out, const char* key) {
  out += '"';
  out += key;  // keys are ASCII identifiers, nothing to escape
  out += "\":";
}

void append_bool(std::string& out, bool value) { out += value ? "true" : "false"; }

void append_ints(std::string& out, const std::vector<int64_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    append_json_int(out, values[i]);
  }
  out += ']';
}

void append_signature(std::string& out, const ProfileSignature& sig) {
  out += '{';
  append_key(out, "num_profiles");
  append_json_int(out, sig.num_profiles);
  out += ',';
  append_key(out, "inputs");
  out += '[';
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    if (i > 0) out += ',';
    out += '{';
    append_key(out, "name");
    append_json_string(out, sig.inputs[i].name);
    out += ',';
    append_key(out, "profiles");
    out += '[';
    for (size_t p = 0; p < sig.inputs[i].profiles.size(); ++p) {
      const ProfileBounds& b = sig.inputs[i].profiles[p];
      if (p > 0) out += ',';
      out += '{';
      append_key(out, "min");
      append_ints(out, b.min);
      out += ',';
      append_key(out, "opt");
      append_ints(out, b.opt);
      out += ',';
      append_key(out, "max");
      append_ints(out, b.max);
      out += '}';
    }
    out += "]}";
  }
  out += "],";
  append_key(out, "symbolic_dims");
  out += '[';
  for (size_t i = 0; i < sig.symbolic_dims.size(); ++i) {
    const SymbolicDim& s = sig.symbolic_dims[i];
    if (i > 0) out += ',';
    out += '{';
    append_key(out, "name");
    append_json_string(out, s.name);
    out += ',';
    append_key(out, "input");
    append_json_string(out, s.input);
    out += ',';
    append_key(out, "dim");
    append_json_int(out, s.dim);
    out += ',';
    append_key(out, "ranges");
    out += '[';
    for (size_t p = 0; p < s.ranges.size(); ++p) {
      if (p > 0) out += ',';
      out += '[';
      append_json_int(out, s.ranges[p].first);
      out += ',';
      append_json_int(out, s.ranges[p].second);
      out += ']';
    }
    out += "]}";
  }
  out += "]}";
}

}  // namespace

std::string metadata_to_json(const Metadata& metadata) {
  std::string out;
  out += '{';
  append_key(out, "io_bindings");
  out += '[';
  for (size_t i = 0; i < metadata.io_bindings.size(); ++i) {
    const IoBinding& b = metadata.io_bindings[i];
    if (i > 0) out += ',';
    out += '{';
    append_key(out, "name");
    append_json_string(out, b.name);
    out += ',';
    append_key(out, "dtype");
    append_json_string(out, b.dtype);
    out += ',';
    append_key(out, "shape");
    append_ints(out, b.shape);
    out += ',';
    append_key(out, "is_input");
    append_bool(out, b.is_input);
    out += '}';
  }
  out += "],";
  append_key(out, "aliased_io");
  out += '[';
  for (size_t i = 0; i < metadata.aliased_io.size(); ++i) {
    const AliasedIo& a = metadata.aliased_io[i];
    if (i > 0) out += ',';
    out += '{';
    append_key(out, "output");
    append_json_string(out, a.output);
    out += ',';
    append_key(out, "input");
    append_json_string(out, a.input);
    out += ',';
    append_key(out, "kind");
    append_json_string(out, a.kind);
    out += '}';
  }
  out += "],";
  append_key(out, "hardware_compatible");
  append_bool(out, metadata.hardware_compatible);
  out += ',';
  append_key(out, "device_id");
  append_json_int(out, metadata.device_id);
  out += ',';
  append_key(out, "serialized_metadata");
  append_json_string(out, metadata.serialized_metadata);
  out += ',';
  append_key(out, "target_platform");
  append_json_string(out, metadata.target_platform);
  // Appended after upstream's keys, and only when present, so a blob without
  // a signature is byte-identical to what Torch-TensorRT writes.
  if (metadata.profile_signature) {
    out += ',';
    append_key(out, "profile_signature");
    append_signature(out, *metadata.profile_signature);
  }
  out += '}';
  return out;
}

}  // namespace etrt::blob
