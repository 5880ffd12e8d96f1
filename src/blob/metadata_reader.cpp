// Decodes the metadata JSON into Metadata, checking the type of every value
// before reading it, then hands the result to validate_metadata. Nothing here
// throws: nlohmann parses in its non-throwing mode, and the one try/catch is
// for allocation failure on absurd input.

#include "blob/metadata_reader.h"

#include <cinttypes>
#include <cstdarg>
#include <cstring>
#include <iterator>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <utility>

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

const char* type_name(const Json& v) {
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

// Where a value sits in the document, as a chain of keys and indices; spelled out (io_bindings[1].shape[0]) only
// when a message needs it, so reading a valid blob builds no path strings.
struct Path {
  const Path* parent = nullptr;
  const char* key = nullptr;  // a key of the parent object, or null for an index
  size_t index = 0;           // an index into the parent array, when key is null
  static const Path& root() {
    static const Path r;
    return r;
  }
  bool is_root() const { return parent == nullptr; }
  Path field(const char* k) const { return Path{this, k, 0}; }
  Path element(size_t i) const { return Path{this, nullptr, i}; }
  std::string str() const {
    if (is_root()) return std::string();
    std::string s = parent->str();
    if (key != nullptr) return s.empty() ? std::string(key) : s + "." + key;
    return s + "[" + std::to_string(index) + "]";
  }
};

// Reads typed values out of the parsed document. Paths in messages name the
// field as a user would write it: io_bindings[1].shape[0].
//
// Its readers chain with && and return false on a refusal, with the reason in the caller's Diagnostic: every
// refusal is the document's fault, so decode_metadata turns false into InvalidArgument.
class Decoder {
 public:
  explicit Decoder(Diagnostic& why) : why_(why) {}

  // Writes "TensorRT blob: " and the printf-formatted reason; returns false.
  bool refuse(const char* format, ...) ETRT_PRINTF_FORMAT(2, 3) {
    why_.clear();
    why_.append("TensorRT blob: ");
    va_list args;
    va_start(args, format);
    why_.vappend(format, args);
    va_end(args);
    return false;
  }
  bool wrong_type(const Path& path, const char* expected, const Json& v) {
    return refuse("metadata field '%s' must be %s, got %s; re-export the model", path.str().c_str(), expected,
                  type_name(v));
  }
  bool missing(const Path& path) { return refuse("metadata has no '%s'; re-export the model", path.str().c_str()); }

  // Null when `key` is absent; `object` is known to be an object.
  static const Json* find(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  bool read_string(const Json& v, const Path& path, std::string* out) {
    if (!v.is_string()) return wrong_type(path, "a string", v);
    *out = v.get_ref<const std::string&>();
    return true;
  }
  bool read_bool(const Json& v, const Path& path, bool* out) {
    if (!v.is_boolean()) return wrong_type(path, "a boolean", v);
    *out = v.get<bool>();
    return true;
  }
  bool read_int64(const Json& v, const Path& path, int64_t* out) {
    if (!v.is_number_integer()) return wrong_type(path, "an integer", v);
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return refuse("metadata field '%s' is %" PRIu64
                      ", outside the range of a 64-bit signed integer; re-export the model",
                      path.str().c_str(), u);
      *out = static_cast<int64_t>(u);
    } else {
      *out = v.get<int64_t>();
    }
    return true;
  }
  bool read_int32(const Json& v, const Path& path, int32_t* out) {
    int64_t wide = 0;
    if (!read_int64(v, path, &wide)) return false;
    if (wide < std::numeric_limits<int32_t>::min() || wide > std::numeric_limits<int32_t>::max())
      return refuse("metadata field '%s' is %" PRId64
                    ", outside the range of a 32-bit signed integer; re-export the model",
                    path.str().c_str(), wide);
    *out = static_cast<int32_t>(wide);
    return true;
  }
  bool read_ints(const Json& v, const Path& path, std::vector<int64_t>* out) {
    if (!v.is_array()) return wrong_type(path, "an array", v);
    out->assign(v.size(), 0);
    for (size_t i = 0; i < v.size(); ++i)
      if (!read_int64(v[i], path.element(i), &(*out)[i])) return false;
    return true;
  }

  // Optional keys keep the value *out already holds when absent.
  template <typename T, typename Read>
  bool optional(const Json& object, const char* key, const Path& parent, T* out, Read read) {
    const Json* v = find(object, key);
    return v == nullptr || (this->*read)(*v, parent.field(key), out);
  }
  template <typename T, typename Read>
  bool required(const Json& object, const char* key, const Path& parent, T* out, Read read) {
    const Json* v = find(object, key);
    if (v == nullptr) return missing(parent.field(key));
    return (this->*read)(*v, parent.field(key), out);
  }

  bool read_binding(const Json& v, const Path& path, IoBinding* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    return required(v, "name", path, &out->name, &Decoder::read_string) &&
           optional(v, "dtype", path, &out->dtype, &Decoder::read_string) &&
           optional(v, "shape", path, &out->shape, &Decoder::read_ints) &&
           optional(v, "is_input", path, &out->is_input, &Decoder::read_bool);
  }

  bool read_alias(const Json& v, const Path& path, AliasedIo* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    if (!required(v, "output", path, &out->output, &Decoder::read_string) ||
        !required(v, "input", path, &out->input, &Decoder::read_string) ||
        !optional(v, "kind", path, &out->kind, &Decoder::read_string))
      return false;
    // Upstream's C++ reader treats an empty kind like a missing one.
    if (out->kind.empty()) out->kind = kAliasKindKvCacheUpdate;
    return true;
  }

  bool read_bounds(const Json& v, const Path& path, ProfileBounds* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    return required(v, "min", path, &out->min, &Decoder::read_ints) &&
           required(v, "opt", path, &out->opt, &Decoder::read_ints) &&
           required(v, "max", path, &out->max, &Decoder::read_ints);
  }

  // The number of entries of the signature's inputs and symbolic_dims arrays, for the table-size limits.
  size_t signature_inputs_ = 0;
  size_t symbolic_dims_ = 0;

  // A per-profile array (an input's profiles, a symbolic dim's ranges) of one of `rows` rows: at most kMaxProfiles
  // entries, and rows x entries at most kMaxProfileEntries, checked before anything is built for it.
  template <typename T, bool (Decoder::*ReadElement)(const Json&, const Path&, T*)>
  bool read_per_profile(const Json& object, const char* key, const Path& parent, size_t rows, const char* what,
                        std::vector<T>* out) {
    const Json* v = find(object, key);
    if (v == nullptr) return missing(parent.field(key));
    if (v->is_array() && v->size() <= static_cast<size_t>(kMaxProfiles) && rows * v->size() > kMaxProfileEntries)
      return refuse("%s", too_many_profile_entries(what, rows, v->size()).c_str());
    return read_array<T, ReadElement, static_cast<size_t>(kMaxProfiles)>(*v, parent.field(key), out);
  }

  bool read_signature_input(const Json& v, const Path& path, SignatureInput* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    return required(v, "name", path, &out->name, &Decoder::read_string) &&
           read_per_profile<ProfileBounds, &Decoder::read_bounds>(v, "profiles", path, signature_inputs_, "inputs",
                                                                  &out->profiles);
  }

  bool read_range(const Json& v, const Path& path, std::pair<int64_t, int64_t>* out) {
    if (!v.is_array() || v.size() != 2) {
      if (!v.is_array()) return wrong_type(path, "an array of two integers [lo, hi]", v);
      return refuse(
          "metadata field '%s' must be an array of two integers [lo, hi], got an array of %zu; re-export "
          "the model",
          path.str().c_str(), v.size());
    }
    return read_int64(v[0], path.element(0), &out->first) && read_int64(v[1], path.element(1), &out->second);
  }

  bool read_symbolic_dim(const Json& v, const Path& path, SymbolicDim* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    return required(v, "name", path, &out->name, &Decoder::read_string) &&
           required(v, "input", path, &out->input, &Decoder::read_string) &&
           required(v, "dim", path, &out->dim, &Decoder::read_int32) &&
           read_per_profile<std::pair<int64_t, int64_t>, &Decoder::read_range>(v, "ranges", path, symbolic_dims_,
                                                                               "symbolic dims", &out->ranges);
  }

  bool read_signature(const Json& v, const Path& path, std::optional<ProfileSignature>* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    ProfileSignature& sig = out->emplace();
    const Json* inputs = find(v, "inputs");
    const Json* dims = find(v, "symbolic_dims");
    signature_inputs_ = inputs != nullptr && inputs->is_array() ? inputs->size() : 0;
    symbolic_dims_ = dims != nullptr && dims->is_array() ? dims->size() : 0;
    return required(v, "num_profiles", path, &sig.num_profiles, &Decoder::read_int32) &&
           required(v, "inputs", path, &sig.inputs,
                    &Decoder::read_array<SignatureInput, &Decoder::read_signature_input, kMaxIoBindings>) &&
           optional(v, "symbolic_dims", path, &sig.symbolic_dims,
                    &Decoder::read_array<SymbolicDim, &Decoder::read_symbolic_dim, kMaxSymbolicDims>);
  }

  bool read_state(const Json& v, const Path& path, DelegateState* out) {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    return required(v, "name", path, &out->name, &Decoder::read_string) &&
           required(v, "input", path, &out->input, &Decoder::read_string) &&
           required(v, "output", path, &out->output, &Decoder::read_string) &&
           optional(v, "initial_value", path, &out->initial_value, &Decoder::read_string);
  }

  // Refuses more than `Limit` entries before building any.
  template <typename T, bool (Decoder::*ReadElement)(const Json&, const Path&, T*),
            size_t Limit = static_cast<size_t>(-1)>
  bool read_array(const Json& v, const Path& path, std::vector<T>* out) {
    if (!v.is_array()) return wrong_type(path, "an array", v);
    if (v.size() > Limit) return refuse("%s", too_many_entries(path.str(), v.size(), Limit).c_str());
    out->assign(v.size(), T{});
    for (size_t i = 0; i < v.size(); ++i)
      if (!(this->*ReadElement)(v[i], path.element(i), &(*out)[i])) return false;
    return true;
  }

  // Keys in the order the writer emits them, so the first problem reported is
  // the first one in the text. Unknown keys are ignored: newer writers append.
  bool read_metadata(const Json& doc, Metadata* out) {
    if (!doc.is_object()) return refuse("metadata must be a JSON object, got %s; re-export the model", type_name(doc));
    const Path& root = Path::root();
    return required(doc, "io_bindings", root, &out->io_bindings,
                    &Decoder::read_array<IoBinding, &Decoder::read_binding, kMaxIoBindings>) &&
           optional(doc, "aliased_io", root, &out->aliased_io,
                    &Decoder::read_array<AliasedIo, &Decoder::read_alias, kMaxAliases>) &&
           optional(doc, "hardware_compatible", root, &out->hardware_compatible, &Decoder::read_bool) &&
           optional(doc, "device_id", root, &out->device_id, &Decoder::read_int64) &&
           optional(doc, "serialized_metadata", root, &out->serialized_metadata, &Decoder::read_string) &&
           optional(doc, "target_platform", root, &out->target_platform, &Decoder::read_string) &&
           optional(doc, "profile_signature", root, &out->profile_signature, &Decoder::read_signature) &&
           optional(doc, "delegate_state", root, &out->delegate_state,
                    &Decoder::read_array<DelegateState, &Decoder::read_state, kMaxStates>);
  }

 private:
  Diagnostic& why_;
};

}  // namespace

std::string too_many_entries(const std::string& path, size_t n, size_t limit) {
  return "metadata field '" + path + "' has " + std::to_string(n) + " entries, above the limit of " +
         std::to_string(limit) + "; re-export the model";
}

std::string too_many_profile_entries(const char* what, size_t n, size_t profiles) {
  return "profile_signature has " + std::to_string(n) + " " + what + " x " + std::to_string(profiles) +
         " profiles = " + std::to_string(n * profiles) + " entries, above the limit of " +
         std::to_string(kMaxProfileEntries) + "; re-export the model";
}

Error decode_metadata(const char* json, size_t size, std::optional<uint64_t> offset, Metadata* out, Diagnostic& why) {
  Decoder decoder(why);
  std::string where = "metadata (" + std::to_string(size) + " bytes";
  if (offset) where += " at offset " + std::to_string(*offset);
  where += ")";
  // Before anything is parsed: the document takes several times its text.
  if (size > kMaxMetadataSize)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: %s is larger than the limit of %zu bytes; re-export the model", where.c_str(),
                kMaxMetadataSize);
  // UTF-8 and depth are checked before parsing. The Python tools read blobs
  // through this reader (python/etrt/blob/reader.py, via libetrt's C ABI).
  const size_t bad_byte = find_invalid_utf8(json, size);
  if (bad_byte != size)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: %s is not valid JSON: invalid UTF-8 at byte %zu; re-export the model", where.c_str(),
                bad_byte);
  // nlohmann stops at a NUL byte as if the input ended there, so metadata
  // followed by padding and garbage would parse; Python's json refuses it. A
  // raw NUL is never valid JSON, so refuse it up front, for both.
  const void* nul = std::memchr(json, 0, size);
  if (nul != nullptr)
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: %s is not valid JSON: NUL byte at byte %zu; re-export the model", where.c_str(),
                static_cast<size_t>(static_cast<const char*>(nul) - json));
  if (nests_deeper_than(json, size, kMaxJsonDepth))
    return fail(why, Error::InvalidArgument, "TensorRT blob: %s nests deeper than %zu levels; re-export the model",
                where.c_str(), kMaxJsonDepth);
  // The arrays whose length is the blob's to choose, counted in the text before the parser builds anything.
  static const ArrayLimit kArrayLimits[] = {
      {"io_bindings", kMaxIoBindings}, {"aliased_io", kMaxAliases}, {"delegate_state", kMaxStates}};
  if (const ArrayLimit* over = find_oversized_array(json, size, kArrayLimits, std::size(kArrayLimits)))
    return fail(why, Error::InvalidArgument,
                "TensorRT blob: metadata field '%s' has more than %zu entries; re-export the model", over->key,
                over->limit);
  try {
    const Json doc = Json::parse(json, json + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      ErrorCapture capture;
      Json::sax_parse(json, json + size, &capture);
      return fail(why, Error::InvalidArgument, "TensorRT blob: %s is not valid JSON: %s; re-export the model",
                  where.c_str(), capture.message.c_str());
    }
    // Decoded aside and moved into *out only once it passed: a refusal leaves *out as it was.
    Metadata metadata;
    if (!decoder.read_metadata(doc, &metadata)) return Error::InvalidArgument;
    if (const Error e = validate_metadata(metadata, why); e != Error::Ok) return e;
    *out = std::move(metadata);
    return Error::Ok;
  } catch (const std::bad_alloc&) {
    return fail(why, Error::MemoryAllocationFailed,
                "TensorRT blob: ran out of memory decoding %s; the blob is probably corrupt, re-export the model",
                where.c_str());
  } catch (const std::exception& e) {
    // Not expected (every access above is type-checked); kept so that a
    // library surprise becomes an error, never an exception across the API.
    return fail(why, Error::Internal, "TensorRT blob: could not decode %s: %s; re-export the model", where.c_str(),
                e.what());
  }
}

}  // namespace detail

Error parse_metadata_json(const char* json, size_t size, Metadata* out, Diagnostic& why) {
  if (json == nullptr && size != 0)
    return fail(why, Error::InvalidArgument, "TensorRT blob: metadata pointer is null but its size is %zu", size);
  static const char kEmpty = '\0';
  return detail::decode_metadata(json == nullptr ? &kEmpty : json, size, std::nullopt, out, why);
}

}  // namespace etrt::blob
