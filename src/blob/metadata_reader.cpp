// Decodes the metadata JSON into Metadata, checking the type of every value
// before reading it, then hands the result to validate_metadata. Nothing here
// throws: nlohmann parses in its non-throwing mode, and the one try/catch is
// for allocation failure on absurd input.

#include "blob/metadata_reader.h"

#include <cstring>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>

#include "blob/blob.h"
#include "blob/json_text.h"

namespace etrt::blob {
namespace detail {
namespace {

using Json = nlohmann::json;

// Length cap for parser detail quoted in messages: nlohmann quotes the token
// it stopped in, which for an unterminated string is the rest of the metadata.
constexpr size_t kMaxDetailLength = 240;
// See nests_deeper_than(): far above the schema's 7, far below Python's limit.
constexpr size_t kMaxJsonDepth = 64;

// Runs only after a failed parse, to recover the position and reason that the
// non-throwing parse() discards. Every event is accepted; parse_error records.
class ErrorCapture : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& ex) override {
    message = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; the rest reads as a sentence.
    const size_t tag_end = message.find("] ");
    if (message.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos) message.erase(0, tag_end + 2);
    if (message.size() > kMaxDetailLength) message = message.substr(0, kMaxDetailLength) + "...";
    return false;
  }

  std::string message = "unknown parse error";
};

std::string type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

std::string at(const std::string& array, size_t index) { return array + "[" + std::to_string(index) + "]"; }

// Reads typed values out of the parsed document. Paths in messages name the
// field as a user would write it: io_bindings[1].shape[0].
class Decoder {
 public:
  explicit Decoder(std::string* error) : error_(error) {}

  bool fail(const std::string& message) {
    if (error_ != nullptr) *error_ = "TensorRT blob: " + message;
    return false;
  }
  bool wrong_type(const std::string& path, const char* expected, const Json& v) {
    return fail("metadata field '" + path + "' must be " + expected + ", got " + type_name(v) +
                "; re-export the model");
  }
  bool missing(const std::string& path) { return fail("metadata has no '" + path + "'; re-export the model"); }

  // Null when `key` is absent; `object` is known to be an object.
  static const Json* find(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  bool read_string(const Json& v, const std::string& path, std::string* out) {
    if (!v.is_string()) return wrong_type(path, "a string", v);
    *out = v.get_ref<const std::string&>();
    return true;
  }
  bool read_bool(const Json& v, const std::string& path, bool* out) {
    if (!v.is_boolean()) return wrong_type(path, "a boolean", v);
    *out = v.get<bool>();
    return true;
  }
  bool read_int64(const Json& v, const std::string& path, int64_t* out) {
    if (!v.is_number_integer()) return wrong_type(path, "an integer", v);
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail("metadata field '" + path + "' is " + std::to_string(u) +
                    ", outside the range of a 64-bit signed integer; re-export the model");
      *out = static_cast<int64_t>(u);
    } else {
      *out = v.get<int64_t>();
    }
    return true;
  }
  bool read_int32(const Json& v, const std::string& path, int32_t* out) {
    int64_t wide = 0;
    if (!read_int64(v, path, &wide)) return false;
    if (wide < std::numeric_limits<int32_t>::min() || wide > std::numeric_limits<int32_t>::max())
      return fail("metadata field '" + path + "' is " + std::to_string(wide) +
                  ", outside the range of a 32-bit signed integer; re-export the model");
    *out = static_cast<int32_t>(wide);
    return true;
  }
  bool read_ints(const Json& v, const std::string& path, std::vector<int64_t>* out) {
    if (!v.is_array()) return wrong_type(path, "an array", v);
    out->assign(v.size(), 0);
    for (size_t i = 0; i < v.size(); ++i)
      if (!read_int64(v[i], at(path, i), &(*out)[i])) return false;
    return true;
  }

  // Optional keys keep the value *out already holds when absent.
  template <typename T, typename Read>
  bool optional(const Json& object, const char* key, const std::string& prefix, T* out, Read read) {
    const Json* v = find(object, key);
    return v == nullptr || (this->*read)(*v, prefix + key, out);
  }
  template <typename T, typename Read>
  bool required(const Json& object, const char* key, const std::string& prefix, T* out, Read read) {
    const Json* v = find(object, key);
    if (v == nullptr) return missing(prefix + key);
    return (this->*read)(*v, prefix + key, out);
  }

  bool read_binding(const Json& v, const std::string& path, IoBinding* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    const std::string prefix = path + ".";
    return required(v, "name", prefix, &out->name, &Decoder::read_string) &&
           optional(v, "dtype", prefix, &out->dtype, &Decoder::read_string) &&
           optional(v, "shape", prefix, &out->shape, &Decoder::read_ints) &&
           optional(v, "is_input", prefix, &out->is_input, &Decoder::read_bool);
  }

  bool read_alias(const Json& v, const std::string& path, AliasedIo* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    const std::string prefix = path + ".";
    if (!required(v, "output", prefix, &out->output, &Decoder::read_string) ||
        !required(v, "input", prefix, &out->input, &Decoder::read_string) ||
        !optional(v, "kind", prefix, &out->kind, &Decoder::read_string))
      return false;
    // Upstream's C++ reader treats an empty kind like a missing one.
    if (out->kind.empty()) out->kind = kAliasKindKvCacheUpdate;
    return true;
  }

  bool read_bounds(const Json& v, const std::string& path, ProfileBounds* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    const std::string prefix = path + ".";
    return required(v, "min", prefix, &out->min, &Decoder::read_ints) &&
           required(v, "opt", prefix, &out->opt, &Decoder::read_ints) &&
           required(v, "max", prefix, &out->max, &Decoder::read_ints);
  }

  bool read_signature_input(const Json& v, const std::string& path, SignatureInput* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    const std::string prefix = path + ".";
    return required(v, "name", prefix, &out->name, &Decoder::read_string) &&
           required(v, "profiles", prefix, &out->profiles, &Decoder::read_array<ProfileBounds, &Decoder::read_bounds>);
  }

  bool read_range(const Json& v, const std::string& path, std::pair<int64_t, int64_t>* out) {
    if (!v.is_array() || v.size() != 2) {
      if (!v.is_array()) return wrong_type(path, "an array of two integers [lo, hi]", v);
      return fail("metadata field '" + path + "' must be an array of two integers [lo, hi], got an array of " +
                  std::to_string(v.size()) + "; re-export the model");
    }
    return read_int64(v[0], at(path, 0), &out->first) && read_int64(v[1], at(path, 1), &out->second);
  }

  bool read_symbolic_dim(const Json& v, const std::string& path, SymbolicDim* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    const std::string prefix = path + ".";
    return required(v, "name", prefix, &out->name, &Decoder::read_string) &&
           required(v, "input", prefix, &out->input, &Decoder::read_string) &&
           required(v, "dim", prefix, &out->dim, &Decoder::read_int32) &&
           required(v, "ranges", prefix, &out->ranges,
                    &Decoder::read_array<std::pair<int64_t, int64_t>, &Decoder::read_range>);
  }

  bool read_signature(const Json& v, const std::string& path, std::optional<ProfileSignature>* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    ProfileSignature& sig = out->emplace();
    const std::string prefix = path + ".";
    return required(v, "num_profiles", prefix, &sig.num_profiles, &Decoder::read_int32) &&
           required(v, "inputs", prefix, &sig.inputs,
                    &Decoder::read_array<SignatureInput, &Decoder::read_signature_input>) &&
           optional(v, "symbolic_dims", prefix, &sig.symbolic_dims,
                    &Decoder::read_array<SymbolicDim, &Decoder::read_symbolic_dim>);
  }

  template <typename T, bool (Decoder::*ReadElement)(const Json&, const std::string&, T*)>
  bool read_array(const Json& v, const std::string& path, std::vector<T>* out) {
    if (!v.is_array()) return wrong_type(path, "an array", v);
    out->assign(v.size(), T{});
    for (size_t i = 0; i < v.size(); ++i)
      if (!(this->*ReadElement)(v[i], at(path, i), &(*out)[i])) return false;
    return true;
  }

  // Keys in the order the writer emits them, so the first problem reported is
  // the first one in the text. Unknown keys are ignored: newer writers append.
  bool read_metadata(const Json& doc, Metadata* out) {
    if (!doc.is_object())
      return fail("metadata must be a JSON object, got " + type_name(doc) + "; re-export the model");
    return required(doc, "io_bindings", "", &out->io_bindings,
                    &Decoder::read_array<IoBinding, &Decoder::read_binding>) &&
           optional(doc, "aliased_io", "", &out->aliased_io, &Decoder::read_array<AliasedIo, &Decoder::read_alias>) &&
           optional(doc, "hardware_compatible", "", &out->hardware_compatible, &Decoder::read_bool) &&
           optional(doc, "device_id", "", &out->device_id, &Decoder::read_int64) &&
           optional(doc, "serialized_metadata", "", &out->serialized_metadata, &Decoder::read_string) &&
           optional(doc, "target_platform", "", &out->target_platform, &Decoder::read_string) &&
           optional(doc, "profile_signature", "", &out->profile_signature, &Decoder::read_signature);
  }

 private:
  std::string* error_;
};

}  // namespace

bool decode_metadata(const char* json, size_t size, std::optional<uint64_t> offset, Metadata* out, std::string* error) {
  Decoder decoder(error);
  std::string where = "metadata (" + std::to_string(size) + " bytes";
  if (offset) where += " at offset " + std::to_string(*offset);
  where += ")";
  // UTF-8 and depth are checked before parsing, in the same order and with the
  // same words as python/etrt/blob.py, which must decode before it can parse.
  const size_t bad_byte = find_invalid_utf8(json, size);
  if (bad_byte != size)
    return decoder.fail(where + " is not valid JSON: invalid UTF-8 at byte " + std::to_string(bad_byte) +
                        "; re-export the model");
  // nlohmann stops at a NUL byte as if the input ended there, so metadata
  // followed by padding and garbage would parse; Python's json refuses it. A
  // raw NUL is never valid JSON, so refuse it up front, for both.
  const void* nul = std::memchr(json, 0, size);
  if (nul != nullptr)
    return decoder.fail(where + " is not valid JSON: NUL byte at byte " +
                        std::to_string(static_cast<const char*>(nul) - json) + "; re-export the model");
  if (nests_deeper_than(json, size, kMaxJsonDepth))
    return decoder.fail(where + " nests deeper than " + std::to_string(kMaxJsonDepth) + " levels; re-export the model");
  try {
    const Json doc = Json::parse(json, json + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      ErrorCapture capture;
      Json::sax_parse(json, json + size, &capture);
      return decoder.fail(where + " is not valid JSON: " + capture.message + "; re-export the model");
    }
    *out = Metadata{};
    return decoder.read_metadata(doc, out) && validate_metadata(*out, error);
  } catch (const std::bad_alloc&) {
    return decoder.fail("ran out of memory decoding " + where + "; the blob is probably corrupt, re-export the model");
  } catch (const std::exception& e) {
    // Not expected (every access above is type-checked); kept so that a
    // library surprise becomes an error, never an exception across the API.
    return decoder.fail("could not decode " + where + ": " + e.what() + "; re-export the model");
  }
}

}  // namespace detail

bool parse_metadata_json(const char* json, size_t size, Metadata* out, std::string* error) {
  if (json == nullptr && size != 0) {
    if (error != nullptr) *error = "TensorRT blob: metadata pointer is null but its size is " + std::to_string(size);
    return false;
  }
  static const char kEmpty = '\0';
  return detail::decode_metadata(json == nullptr ? &kEmpty : json, size, std::nullopt, out, error);
}

}  // namespace etrt::blob
