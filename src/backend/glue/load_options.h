#pragma once
// Load-time options of one delegate, parsed here and nowhere else: from ExecuTorch's runtime specs (the
// LoadBackendOptionsMap entry for "TensorRTBackend"), from the delegate's compile specs (weight_streaming_budget),
// and from the process-wide defaults the C ABI sets (both front-ends reduce an option to a RawOption).

#include <cstddef>
#include <cstdint>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/span.h>

#include "common/byte_count.h"  // parse_byte_count: the weight_streaming_budget value
#include "common/error.h"
#include "etrt/profile_guard.h"

namespace etrt::backend {

enum class ProfileStrategy : uint8_t {
  kSwitch,             // one context, setOptimizationProfileAsync on change
  kContextPerProfile,  // one context per profile sharing one scratch buffer
};

struct LoadOptions {
  // kOptionAutoSelect: -1 when not given (automatic selection on engines with two or more profiles), 0 false, 1 true.
  int8_t auto_select = -1;
  AutoPolicy auto_policy = AutoPolicy::kFirstFit;
  // kOptionProfileStrategy: a context per profile unless switch is asked for (etrt/options.h says why). A one-profile
  // engine gets one context either way (Delegate::create_contexts).
  ProfileStrategy strategy = ProfileStrategy::kContextPerProfile;
  // The weight-streaming budget asked for, in bytes; -1 when none was (the engine then gets TensorRT's automatic
  // budget, if it streams weights at all).
  int64_t weight_streaming_budget = -1;
  // Replay steady-state executions of device engines as CUDA graphs (etrt/options.h kOptionCudaGraphs).
  bool cuda_graphs = false;
  // Let TensorRT run host code the plan carries (kOptionEngineHostCode).
  bool engine_host_code = false;
  // Draw execution memory from the one scratch pool of the program, device and memory kind (kOptionSharedScratch,
  // scratch_pool.h) instead of a buffer of the delegate's own.
  bool shared_scratch = false;
  // Hold the process's one engine of this engine's bytes and options with every other delegate that loads it
  // (kOptionShareEngine, engine_cache.h) instead of one of the delegate's own.
  bool share_engine = true;
  // Plugin libraries to load before deserializing, ':'-separated (kOptionPluginLibraries); empty: none.
  char plugin_libraries[executorch::runtime::kMaxOptionValueLength] = {};

  // The request an execution with no guard in force uses, on an engine with `num_profiles` profiles: automatic
  // selection on a multi-profile engine (docs/auto-by-default.md has the numbers behind it); a one-profile engine
  // keeps the plain default (profile 0, the same checks and messages as ever) unless auto was asked for.
  ProfileRequest default_request(int32_t num_profiles) const {
    const bool automatic = auto_select > 0 || (auto_select < 0 && num_profiles > 1);
    return automatic ? ProfileRequest::automatic(auto_policy) : ProfileRequest::default_request();
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
// runner does not silently fall back to defaults: InvalidArgument, as is a value of the wrong type or out of range.
[[nodiscard]] Error apply_load_option(const RawOption& option, LoadOptions* options, Diagnostic& why);

// Applies the weight_streaming_budget compile spec (`value`, `length` bytes) unless a load option already set the
// budget (load options override compile specs). InvalidArgument when the value is malformed.
[[nodiscard]] Error apply_weight_streaming_spec(const void* value, size_t length, LoadOptions* options,
                                                Diagnostic& why);

// Applies each runtime spec over `options`, key by key: the glue first applies the process-wide defaults
// (default_load_options.h), which the runtime specs override. InvalidArgument, naming the option, for an unknown key
// or a bad value.
[[nodiscard]] Error read_load_options(executorch::runtime::Span<const executorch::runtime::BackendOption> runtime_specs,
                                      LoadOptions* options, Diagnostic& why);

// The compile specs etrt reads: weight_streaming_budget, at most once (a load option overrides it). Profile choice
// is runtime state; nothing about it is read from compile specs. InvalidArgument for a repeated or malformed spec.
[[nodiscard]] Error read_compile_specs(executorch::runtime::ArrayRef<executorch::runtime::CompileSpec> specs,
                                       LoadOptions* options, Diagnostic& why);

}  // namespace etrt::backend
