#include "backend/glue/load_options.h"

#include <array>
#include <cstring>
#include <variant>

#include <executorch/runtime/platform/log.h>

#include "etrt/options.h"

namespace etrt::backend {

using executorch::runtime::ArrayRef;
using executorch::runtime::BackendOption;
using executorch::runtime::CompileSpec;
using executorch::runtime::kMaxOptionValueLength;
using executorch::runtime::Span;

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

Error wrong_type(const RawOption& o, const char* want, Diagnostic& why) {
  return fail(why, Error::InvalidArgument, "TensorRTBackend load option '%s' must be a %s, got a %s.", o.key, want,
              kind_name(o.kind));
}

}  // namespace

Error apply_load_option(const RawOption& o, LoadOptions* options, Diagnostic& why) {
  if (std::strcmp(o.key, kOptionAutoSelect) == 0) {
    if (o.kind != RawOption::Kind::kBool) return wrong_type(o, "bool", why);
    options->auto_select = o.bool_value ? 1 : 0;
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionAutoPolicy) == 0) {
    if (o.kind != RawOption::Kind::kString) return wrong_type(o, "string", why);
    if (std::strcmp(o.string_value, kPolicyStickyFirstFit) == 0) {
      options->auto_policy = AutoPolicy::kStickyFirstFit;
    } else if (std::strcmp(o.string_value, kPolicyFirstFit) == 0) {
      options->auto_policy = AutoPolicy::kFirstFit;
    } else {
      return fail(why, Error::InvalidArgument, "TensorRTBackend load option '%s' is '%s'; use '%s' or '%s'.",
                  kOptionAutoPolicy, o.string_value, kPolicyStickyFirstFit, kPolicyFirstFit);
    }
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionProfileStrategy) == 0) {
    if (o.kind != RawOption::Kind::kString) return wrong_type(o, "string", why);
    if (std::strcmp(o.string_value, kStrategySwitch) == 0) {
      options->strategy = ProfileStrategy::kSwitch;
    } else if (std::strcmp(o.string_value, kStrategyContextPerProfile) == 0) {
      options->strategy = ProfileStrategy::kContextPerProfile;
    } else {
      return fail(why, Error::InvalidArgument, "TensorRTBackend load option '%s' is '%s'; use '%s' or '%s'.",
                  kOptionProfileStrategy, o.string_value, kStrategySwitch, kStrategyContextPerProfile);
    }
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionCudaGraphs) == 0) {
    if (o.kind != RawOption::Kind::kBool) return wrong_type(o, "bool", why);
    options->cuda_graphs = o.bool_value;
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionSharedScratch) == 0) {
    if (o.kind != RawOption::Kind::kBool) return wrong_type(o, "bool", why);
    options->shared_scratch = o.bool_value;
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionShareEngine) == 0) {
    if (o.kind != RawOption::Kind::kBool) return wrong_type(o, "bool", why);
    options->share_engine = o.bool_value;
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionEngineHostCode) == 0) {
    if (o.kind != RawOption::Kind::kBool) return wrong_type(o, "bool", why);
    options->engine_host_code = o.bool_value;
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionPluginLibraries) == 0) {
    if (o.kind != RawOption::Kind::kString) return wrong_type(o, "string", why);
    const size_t length = std::strlen(o.string_value);
    if (length >= sizeof(options->plugin_libraries)) {
      return fail(why, Error::InvalidArgument,
                  "TensorRTBackend load option '%s' is %zu characters; at most %zu fit (ExecuTorch's option length)",
                  kOptionPluginLibraries, length, sizeof(options->plugin_libraries) - 1);
    }
    std::memcpy(options->plugin_libraries, o.string_value, length + 1);
    return Error::Ok;
  }
  if (std::strcmp(o.key, kOptionWeightStreamingBudget) == 0) {
    if (o.kind == RawOption::Kind::kInt && o.int_value >= 0) {
      options->weight_streaming_budget = o.int_value;
      return Error::Ok;
    }
    if (o.kind == RawOption::Kind::kString) {
      const size_t length = std::strlen(o.string_value);
      if (length == 0) return Error::Ok;  // unset: the caller logs that it was ignored
      if (parse_byte_count(o.string_value, length, &options->weight_streaming_budget)) return Error::Ok;
    }
    (void)fail(why, Error::InvalidArgument,
               "TensorRTBackend load option '%s' must be a non-negative int or a string of decimal digits (bytes), "
               "got ",
               kOptionWeightStreamingBudget);
    if (o.kind == RawOption::Kind::kString) {
      why.append("'%s'.", o.string_value);
    } else if (o.kind == RawOption::Kind::kInt) {
      why.append("%d.", o.int_value);
    } else {
      why.append("a bool.");
    }
    return Error::InvalidArgument;
  }
  return fail(why, Error::InvalidArgument,
              "TensorRTBackend has no load option '%s'; known options: %s, %s, %s, %s, %s, %s, %s, %s, %s.", o.key,
              kOptionAutoSelect, kOptionAutoPolicy, kOptionProfileStrategy, kOptionWeightStreamingBudget,
              kOptionCudaGraphs, kOptionSharedScratch, kOptionEngineHostCode, kOptionPluginLibraries,
              kOptionShareEngine);
}

Error apply_weight_streaming_spec(const void* value, size_t length, LoadOptions* options, Diagnostic& why) {
  int64_t bytes = 0;
  if (!parse_byte_count(static_cast<const char*>(value), length, &bytes)) {
    // The value itself when it is short enough to quote, else its length.
    const bool quote = value != nullptr && length <= 64;
    (void)fail(why, Error::InvalidArgument, "the '%s' compile spec ", kOptionWeightStreamingBudget);
    if (quote || length == 0) {
      why.append("'%.*s'", quote ? static_cast<int>(length) : 0, quote ? static_cast<const char*>(value) : "");
    } else {
      why.append("(%zu bytes)", length);
    }
    why.append(
        " is not a byte count: it must be one or more decimal digits, at most 9223372036854775807; re-export with a "
        "valid budget");
    return Error::InvalidArgument;
  }
  if (options->weight_streaming_budget < 0) options->weight_streaming_budget = bytes;
  return Error::Ok;
}

Error read_load_options(Span<const BackendOption> runtime_specs, LoadOptions* options, Diagnostic& why) {
  for (const BackendOption& option : runtime_specs) {
    RawOption raw{option.key, RawOption::Kind::kBool, false, 0, ""};
    if (const bool* b = std::get_if<bool>(&option.value)) {
      raw.bool_value = *b;
    } else if (const int* i = std::get_if<int>(&option.value)) {
      raw.kind = RawOption::Kind::kInt;
      raw.int_value = *i;
    } else if (const auto* s = std::get_if<std::array<char, kMaxOptionValueLength>>(&option.value)) {
      raw.kind = RawOption::Kind::kString;
      raw.string_value = s->data();
      if (std::strcmp(option.key, kOptionWeightStreamingBudget) == 0 && s->front() == '\0')
        ET_LOG(Info, "TensorRTBackend load option '%s' is empty and was ignored", kOptionWeightStreamingBudget);
    }
    const Error status = apply_load_option(raw, options, why);
    if (status != Error::Ok) return status;
  }
  return Error::Ok;
}

Error read_compile_specs(ArrayRef<CompileSpec> specs, LoadOptions* options, Diagnostic& why) {
  const CompileSpec* budget = nullptr;
  for (const CompileSpec& spec : specs) {
    if (spec.key == nullptr || std::strcmp(spec.key, kOptionWeightStreamingBudget) != 0) continue;
    if (budget != nullptr)
      return fail(why, Error::InvalidArgument,
                  "the delegate carries the '%s' compile spec twice; re-export with one budget",
                  kOptionWeightStreamingBudget);
    budget = &spec;
  }
  if (budget == nullptr) return Error::Ok;
  return apply_weight_streaming_spec(budget->value.buffer, budget->value.nbytes, options, why);
}

}  // namespace etrt::backend
