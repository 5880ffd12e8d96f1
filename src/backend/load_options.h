#pragma once
// Load-time options of one delegate, read from ExecuTorch's runtime specs
// (the LoadBackendOptionsMap entry for "TensorRTBackend").

#include <string>

#include "etrt/profile_guard.h"

namespace etrt::backend {

enum class ProfileStrategy : uint8_t {
  kSwitch,             // one context, setOptimizationProfileAsync on change
  kContextPerProfile,  // one context per profile sharing one scratch buffer
};

struct LoadOptions {
  bool auto_by_default = false;
  AutoPolicy auto_policy = AutoPolicy::kStickyFirstFit;
  ProfileStrategy strategy = ProfileStrategy::kSwitch;

  // The request an execution with no guard in force uses.
  ProfileRequest default_request() const {
    return auto_by_default ? ProfileRequest::automatic(auto_policy) : ProfileRequest::default_request();
  }
};

// One option as ExecuTorch hands it over, reduced to what we parse.
struct RawOption {
  const char* key;
  enum class Kind { kBool, kInt, kString } kind;
  bool bool_value;
  int int_value;
  const char* string_value;
};

// Applies `option` to `options`. Unknown keys are refused so that a typo in a
// runner does not silently fall back to defaults; returns false with `error`.
bool apply_load_option(const RawOption& option, LoadOptions* options, std::string* error);

}  // namespace etrt::backend
