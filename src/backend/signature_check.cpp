#include "backend/signature_check.h"

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

bool check_signature(const blob::ProfileSignature& signature, const profile::ProfileTable& table,
                     const std::vector<IoSlot>& inputs, std::string* error) {
  const std::string fix =
      "; the blob and its engine disagree: re-export the model, or re-pack the engine with its "
      "own profiles";
  if (signature.num_profiles != table.num_profiles()) {
    *error = "the blob's profile signature declares " + std::to_string(signature.num_profiles) +
             " profiles, but the engine has " + std::to_string(table.num_profiles()) + fix;
    return false;
  }
  const NameIndex by_name = index_names(inputs);
  for (const blob::SignatureInput& input : signature.inputs) {
    const int32_t index = find_name(by_name, input.name);
    if (index < 0) {
      *error = "the blob's profile signature names input '" + escape_name(input.name) +
               "', which the engine does not have" + fix;
      return false;
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
          *error = "the blob's profile signature gives input '" + escape_name(input.name) + "' a profile " +
                   std::to_string(p) + " " + c.what + " of " + text(c.declared) + ", but the engine's is " +
                   text(c.actual) + fix;
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace etrt::backend
