#pragma once
// Engines and helpers shared by the engine tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/shape.h"
#include "engine/engine.h"
#include "etrt_gpufree/builder.h"
#include "engine/reference/reference_engine.h"
#include "etrt_gpufree/trace.h"

namespace etrt::gpufree::testing {

inline constexpr int32_t kDecode = 0;
inline constexpr int32_t kPrefill = 1;
inline constexpr int64_t kVocab = 6;
inline constexpr int64_t kHidden = 4;
inline constexpr int64_t kLogits = 3;
inline constexpr int64_t kMaxPrefill = 8;

// A unique label per test, so one test's trace never shows in another's.
inline std::string test_label() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

// An LLM-shaped engine: ids [1, S] int64 -> embedding (table [6, 4]) -> + bias [4] -> x W [4, 3] -> * 0.5 ->
// logits [1, S, 3]. Profile 0 (decode) is S = 1, profile 1 (prefill) is S in 2..8.
// table[r][j] = 10 r + j, bias = [0.5, -0.5, 1, 0], W = [[1, 0, 2], [0, 1, 0], [0, 0, 1], [1, -1, 0]], so id r
// gives logits [10 r + 1.75, -1.25, 15 r + 2].
inline Builder llm_builder(const std::string& label) {
  std::vector<float> table;
  for (int64_t r = 0; r < kVocab; ++r)
    for (int64_t j = 0; j < kHidden; ++j) table.push_back(static_cast<float>(10 * r + j));
  Builder b(label);
  b.add_input("ids", DataType::kInt64, make_shape({1, -1}))
      .add_output("logits", DataType::kFloat32, make_shape({1, -1, 3}));
  const int32_t decode = b.add_profile();
  const int32_t prefill = b.add_profile();
  b.set_profile_shape(decode, "ids", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}))
      .set_profile_shape(prefill, "ids", make_shape({1, 2}), make_shape({1, 4}), make_shape<int64_t>({1, kMaxPrefill}))
      .add_constant("table", make_shape({kVocab, kHidden}), table)
      .add_constant("bias", make_shape({kHidden}), {0.5f, -0.5f, 1.0f, 0.0f})
      .add_constant("w", make_shape({kHidden, kLogits}), {1, 0, 2, 0, 1, 0, 0, 0, 1, 1, -1, 0})
      .embedding("ids", "table", "embedded")
      .add("embedded", "bias", "biased")
      .matmul("biased", "w", "projected")
      .scale("projected", 0.5f, "logits");
  return b;
}

inline std::vector<float> expected_logits(const std::vector<int64_t>& ids) {
  std::vector<float> out;
  for (int64_t r : ids) {
    out.push_back(10.0f * static_cast<float>(r) + 1.75f);
    out.push_back(-1.25f);
    out.push_back(15.0f * static_cast<float>(r) + 2.0f);
  }
  return out;
}

inline std::vector<uint8_t> build_or_fail(const Builder& b) {
  std::string error;
  std::vector<uint8_t> bytes = b.build(&error);
  EXPECT_FALSE(bytes.empty()) << error;
  return bytes;
}

inline std::unique_ptr<ReferenceEngine> load(const std::vector<uint8_t>& bytes) {
  std::string error;
  std::unique_ptr<ReferenceEngine> engine = deserialize(bytes.data(), bytes.size(), &error);
  EXPECT_NE(engine, nullptr) << error;
  return engine;
}

inline std::unique_ptr<ReferenceEngine> load_llm(const std::string& label) {
  return load(build_or_fail(llm_builder(label)));
}

// Sets ids' shape and both addresses, then enqueues; logits are resized to fit.
inline bool run_llm(ExecutionContext& context, std::vector<int64_t>& ids, std::vector<float>* logits,
                    StreamHandle stream = nullptr) {
  logits->assign(ids.size() * kLogits, -99.0f);
  return context.set_input_shape(0, make_shape({int64_t{1}, static_cast<int64_t>(ids.size())})) &&
         context.set_tensor_address(0, ids.data()) && context.set_tensor_address(1, logits->data()) &&
         context.enqueue(stream);
}

// The events of `label` of one kind.
inline std::vector<TraceEvent> events_of(const std::string& label, TraceKind kind) {
  std::vector<TraceEvent> out;
  for (TraceEvent& e : trace_events(label))
    if (e.kind == kind) out.push_back(std::move(e));
  return out;
}

inline std::string dump(const std::string& label) {
  std::string s;
  for (const TraceEvent& e : trace_events(label)) s += to_string(e) + "\n";
  return s;
}

// 256-byte-aligned host memory, as user-managed scratch needs.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) : size(n), data(static_cast<uint8_t*>(::operator new[](n, std::align_val_t{256}))) {}
  ~AlignedBuffer() { ::operator delete[](data, std::align_val_t{256}); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  size_t size;
  uint8_t* data;
};

}  // namespace etrt::gpufree::testing
