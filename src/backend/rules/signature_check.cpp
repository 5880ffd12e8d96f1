#include "backend/rules/signature_check.h"

#include "common/utf8.h"

namespace etrt::backend {
namespace {

std::string text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string text(const Shape& s) { return text(std::vector<int64_t>(s.d, s.d + s.rank)); }

bool same(const std::vector<int64_t>& dims, const Shape& s) {
  if (dims.size() != static_cast<size_t>(s.rank)) return false;
  for (int32_t i = 0; i < s.rank; ++i)
    if (dims[static_cast<size_t>(i)] != s.d[i]) return false;
  return true;
}

}  // namespace

Error check_signature(const blob::ProfileSignature& signature, const profile::ProfileTable& table,
                      const std::vector<IoSlot>& inputs, Diagnostic& why) {
  static constexpr char kFix[] =
      "; the blob and its engine disagree: re-export the model, or re-pack the engine with its own profiles";
  if (signature.num_profiles != table.num_profiles()) {
    return fail(why, Error::InvalidProgram,
                "the blob's profile signature declares %d profiles, but the engine has %d%s", signature.num_profiles,
                table.num_profiles(), kFix);
  }
  const NameIndex by_name = index_names(inputs);
  for (const blob::SignatureInput& input : signature.inputs) {
    const int32_t index = find_name(by_name, input.name);
    if (index < 0) {
      return fail(why, Error::InvalidProgram,
                  "the blob's profile signature names input '%s', which the engine does not have%s",
                  escape_name(input.name).c_str(), kFix);
    }
    for (int32_t p = 0; p < table.num_profiles(); ++p) {
      const blob::ProfileBounds& declared = input.profiles[static_cast<size_t>(p)];
      const profile::ShapeBounds actual = table.bounds(p, index);
      const struct {
        const char* what;
        const std::vector<int64_t>& declared;
        const Shape& actual;
      } checks[] = {
          {"min", declared.min, actual.min}, {"opt", declared.opt, actual.opt}, {"max", declared.max, actual.max}};
      for (const auto& c : checks) {
        if (!same(c.declared, c.actual)) {
          return fail(why, Error::InvalidProgram,
                      "the blob's profile signature gives input '%s' a profile %d %s of %s, but the engine's is %s "
                      "(signature: min %s opt %s max %s; engine: min %s opt %s max %s)%s",
                      escape_name(input.name).c_str(), p, c.what, text(c.declared).c_str(), text(c.actual).c_str(),
                      text(declared.min).c_str(), text(declared.opt).c_str(), text(declared.max).c_str(),
                      text(actual.min).c_str(), text(actual.opt).c_str(), text(actual.max).c_str(), kFix);
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace etrt::backend
