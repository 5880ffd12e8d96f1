#include "backend/load_options.h"

#include <cstring>

#include "etrt/options.h"

namespace etrt::backend {
namespace {

const char* kind_name(RawOption::Kind kind) {
  switch (kind) {
    case RawOption::Kind::kBool:
      return "bool";
    case RawOption::Kind::kInt:
      return "int";
    case RawOption::Kind::kString:
      return "string";
  }
  return "?";
}

bool wrong_type(const RawOption& o, const char* want, std::string* error) {
  *error = std::string("TensorRTBackend load option '") + o.key + "' must be a " + want + ", got a " +
           kind_name(o.kind) + ".";
  return false;
}

}  // namespace

bool apply_load_option(const RawOption& o, LoadOptions* options, std::string* error) {
  if (std::strcmp(o.key, kOptionAutoSelect) == 0) {
    if (o.kind != RawOption::Kind::kBool) return wrong_type(o, "bool", error);
    options->auto_by_default = o.bool_value;
    return true;
  }
  if (std::strcmp(o.key, kOptionAutoPolicy) == 0) {
    if (o.kind != RawOption::Kind::kString) return wrong_type(o, "string", error);
    if (std::strcmp(o.string_value, kPolicyStickyFirstFit) == 0) {
      options->auto_policy = AutoPolicy::kStickyFirstFit;
    } else if (std::strcmp(o.string_value, kPolicyFirstFit) == 0) {
      options->auto_policy = AutoPolicy::kFirstFit;
    } else {
      *error = std::string("TensorRTBackend load option '") + kOptionAutoPolicy + "' is '" + o.string_value +
               "'; use '" + kPolicyStickyFirstFit + "' or '" + kPolicyFirstFit + "'.";
      return false;
    }
    return true;
  }
  if (std::strcmp(o.key, kOptionProfileStrategy) == 0) {
    if (o.kind != RawOption::Kind::kString) return wrong_type(o, "string", error);
    if (std::strcmp(o.string_value, kStrategySwitch) == 0) {
      options->strategy = ProfileStrategy::kSwitch;
    } else if (std::strcmp(o.string_value, kStrategyContextPerProfile) == 0) {
      options->strategy = ProfileStrategy::kContextPerProfile;
    } else {
      *error = std::string("TensorRTBackend load option '") + kOptionProfileStrategy + "' is '" + o.string_value +
               "'; use '" + kStrategySwitch + "' or '" + kStrategyContextPerProfile + "'.";
      return false;
    }
    return true;
  }
  *error = std::string("TensorRTBackend has no load option '") + o.key + "'; known options: " + kOptionAutoSelect +
           ", " + kOptionAutoPolicy + ", " + kOptionProfileStrategy + ".";
  return false;
}

}  // namespace etrt::backend
