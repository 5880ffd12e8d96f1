#include "backend/load_options.h"

#include <cstring>
#include <limits>

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
    options->auto_select = o.bool_value ? 1 : 0;
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
  if (std::strcmp(o.key, kOptionCudaGraphs) == 0) {
    if (o.kind != RawOption::Kind::kBool) return wrong_type(o, "bool", error);
    options->cuda_graphs = o.bool_value;
    return true;
  }
  if (std::strcmp(o.key, kOptionWeightStreamingBudget) == 0) {
    if (o.kind == RawOption::Kind::kInt && o.int_value >= 0) {
      options->weight_streaming_budget = o.int_value;
      return true;
    }
    if (o.kind == RawOption::Kind::kString) {
      const size_t length = std::strlen(o.string_value);
      if (length == 0) return true;  // unset: the caller logs that it was ignored
      if (parse_byte_count(o.string_value, length, &options->weight_streaming_budget)) return true;
    }
    *error = std::string("TensorRTBackend load option '") + kOptionWeightStreamingBudget +
             "' must be a non-negative int or a string of decimal digits (bytes), got " +
             (o.kind == RawOption::Kind::kString ? "'" + std::string(o.string_value) + "'"
              : o.kind == RawOption::Kind::kInt  ? std::to_string(o.int_value)
                                                 : std::string("a bool")) +
             ".";
    return false;
  }
  *error = std::string("TensorRTBackend has no load option '") + o.key + "'; known options: " + kOptionAutoSelect +
           ", " + kOptionAutoPolicy + ", " + kOptionProfileStrategy + ", " + kOptionWeightStreamingBudget + ", " +
           kOptionCudaGraphs + ".";
  return false;
}

bool parse_byte_count(const char* text, size_t length, int64_t* bytes) {
  if (text == nullptr || length == 0) return false;
  int64_t value = 0;
  for (size_t i = 0; i < length; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return false;
    const int64_t digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *bytes = value;
  return true;
}

bool apply_weight_streaming_spec(const void* value, size_t length, LoadOptions* options, std::string* error) {
  int64_t bytes = 0;
  if (!parse_byte_count(static_cast<const char*>(value), length, &bytes)) {
    std::string shown(static_cast<const char*>(value), value != nullptr && length <= 64 ? length : 0);
    *error = std::string("the '") + kOptionWeightStreamingBudget + "' compile spec " +
             (shown.empty() && length > 0 ? "(" + std::to_string(length) + " bytes)" : "'" + shown + "'") +
             " is not a byte count: it must be one or more decimal digits, at most 9223372036854775807; re-export "
             "with a valid budget";
    return false;
  }
  if (options->weight_streaming_budget < 0) options->weight_streaming_budget = bytes;
  return true;
}

}  // namespace etrt::backend
