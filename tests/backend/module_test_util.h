#pragma once
// What the CPU and GPU end-to-end suites share: running token ids through a
// Module and checking the logits against fixtures.h, and counting what the
// GPU-free NvInfer engine's trace says it did.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt_gpufree/trace.h"
#include "fixtures.h"
#include "module_loading.h"

namespace etrt::module_test {

#ifdef ETRT_FIXTURE_DIR
// The CPU suite's fixture `name`.pte in the build tree.
inline std::string fixture(const std::string& name) { return std::string(ETRT_FIXTURE_DIR) + "/" + name + ".pte"; }
#endif

// True when `text` holds `part` (a message the tests look into).
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The process-wide counter `key` (etrt/options.h kCounter*), read with get_option as a runner reads it.
inline int64_t counter(const char* key) {
  ::executorch::runtime::BackendOption option;
  std::snprintf(option.key, sizeof(option.key), "%s", key);
  option.value = 0;
  ::executorch::runtime::Span<::executorch::runtime::BackendOption> span(&option, 1);
  EXPECT_EQ(::executorch::runtime::get_option(kBackendId, span), ::executorch::runtime::Error::Ok) << key;
  return std::get<int>(option.value);
}

// The load options that select the context_per_profile strategy (module_loading.h loads with them).
inline testing::LoadOptions context_per_profile_options() {
  return {{kOptionProfileStrategy, kStrategyContextPerProfile}};
}

// The load options that select the switch strategy: one context, switched with setOptimizationProfileAsync. Tests
// of what a switch does ask for it by name.
inline testing::LoadOptions switch_options() { return {{kOptionProfileStrategy, kStrategySwitch}}; }

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
template <typename T>
using AlignedBuffer = std::unique_ptr<T[], FreeDeleter>;

// `n` elements of 256-byte-aligned host memory: what TensorRT binds in place (a runner's own buffers).
template <typename T>
AlignedBuffer<T> aligned_buffer(size_t n) {
  const size_t bytes = (n * sizeof(T) + 255) / 256 * 256;
  return AlignedBuffer<T>(static_cast<T*>(std::aligned_alloc(256, bytes)));
}

inline std::vector<int64_t> token_ids(size_t n) {
  std::vector<int64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % etrt::fixtures::kVocab);
  return ids;
}

struct Outcome {
  ::executorch::runtime::Error error = ::executorch::runtime::Error::Ok;
  std::vector<int32_t> shape;
  std::vector<float> values;
};

// A host output's shape and values, or the error.
inline Outcome read_output(const ::executorch::runtime::Result<std::vector<::executorch::runtime::EValue>>& result,
                           size_t index = 0) {
  Outcome out;
  if (!result.ok()) {
    out.error = result.error();
    return out;
  }
  const auto& t = result.get()[index].toTensor();
  out.shape.assign(t.sizes().begin(), t.sizes().end());
  const float* p = t.const_data_ptr<float>();
  out.values.assign(p, p + t.numel());
  return out;
}

inline Outcome run_ids(::executorch::extension::Module& module, std::vector<int64_t> ids) {
  auto tensor = ::executorch::extension::from_blob(ids.data(), {1, static_cast<int32_t>(ids.size())},
                                                   ::executorch::aten::ScalarType::Long);
  return read_output(module.forward(tensor));
}

inline void expect_values(const std::vector<float>& values, const std::vector<int64_t>& ids) {
  const auto want = etrt::fixtures::expected_logits(ids);
  ASSERT_EQ(values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(values[i], want[i], 1e-5f) << "element " << i;
}

inline void expect_logits(const Outcome& out, const std::vector<int64_t>& ids) {
  ASSERT_EQ(out.error, ::executorch::runtime::Error::Ok) << etrt::last_error_message();
  EXPECT_EQ(out.shape, (std::vector<int32_t>{1, static_cast<int32_t>(ids.size()), etrt::fixtures::kHidden}));
  expect_values(out.values, ids);
}

// Calls of `kind` the engine labelled `label` received.
inline int64_t count(const std::string& label, gpufree::TraceKind kind) {
  int64_t n = 0;
  for (const auto& e : gpufree::trace_events(label)) n += e.kind == kind;
  return n;
}

// The events of `label` of one kind that succeeded (`ok`) or were refused.
inline std::vector<gpufree::TraceEvent> events_of(const std::string& label, gpufree::TraceKind kind, bool ok) {
  std::vector<gpufree::TraceEvent> out;
  for (const auto& e : gpufree::trace_events(label))
    if (e.kind == kind && e.ok == ok) out.push_back(e);
  return out;
}

// The trace of `label`, one event a line, for failure messages.
inline std::string trace_text(const std::string& label) {
  std::string text;
  for (const auto& e : gpufree::trace_events(label)) text += "  " + gpufree::to_string(e) + "\n";
  return text.empty() ? "  (no events)\n" : text;
}

// set_optimization_profile calls the engine received (the tests clear traces after load).
inline int64_t switch_calls(const std::string& label) {
  return count(label, gpufree::TraceKind::kSetOptimizationProfile);
}

}  // namespace etrt::module_test
