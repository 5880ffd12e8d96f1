#pragma once
// Engines and helpers shared by the engine tests. The engines are built with
// the GPU-free NvInfer implementation's Builder (etrt_gpufree/builder.h) and
// loaded through etrt's TensorRT adapter (engine/tensorrt/tensorrt_engine.h),
// the one path by which etrt drives engines, so every test exercises the
// GPU-free library exactly as the backend does.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/error.h"
#include "common/shape.h"
#include "engine/engine.h"
#include "engine/tensorrt/tensorrt_engine.h"
#include "etrt_gpufree/builder.h"
#include "etrt_gpufree/trace.h"

namespace etrt::gpufree::testing {

// The seam's classes. Its DataType, MemoryKind and TensorDesc are spelled engine::... in the tests, since
// etrt::gpufree has its own (the Builder's).
using engine::ContextOptions;
using engine::Engine;
using engine::ExecutionContext;

// Shapes: the seam reads and takes etrt::Shape, the Builder and the trace gpufree::Shape (the GPU-free NvInfer
// includes nothing of etrt's, as NVIDIA's does not). Shape is the seam's here; make_shape gives a shape that
// converts to either, so one spelling serves a test that builds an engine and then drives it.
using Shape = etrt::Shape;
struct AnyShape {
  etrt::Shape shape;
  operator etrt::Shape() const { return shape; }  // NOLINT(google-explicit-constructor): the point of the type
  operator gpufree::Shape() const {               // NOLINT(google-explicit-constructor)
    gpufree::Shape s;
    s.rank = shape.rank;
    for (int32_t i = 0; i < shape.rank && i < gpufree::kMaxRank; ++i) s.d[i] = shape.d[i];
    return s;
  }
};
template <typename Int>
AnyShape make_shape(std::initializer_list<Int> dims) {
  return AnyShape{etrt::make_shape(dims)};
}

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

// std::allocator, but every allocation 256-byte aligned (engine::kIoAddressAlignment, TensorRT's rule for
// setTensorAddress), so a vector's data() may be bound as an IO tensor.
template <typename T>
struct Aligned256Allocator {
  using value_type = T;
  Aligned256Allocator() = default;
  template <typename U>
  Aligned256Allocator(const Aligned256Allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{engine::kIoAddressAlignment}));
  }
  void deallocate(T* p, size_t) noexcept { ::operator delete (p, std::align_val_t{engine::kIoAddressAlignment}); }
  template <typename U>
  bool operator==(const Aligned256Allocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const Aligned256Allocator<U>&) const noexcept {
    return false;
  }
};
template <typename T>
using AlignedVector = std::vector<T, Aligned256Allocator<T>>;

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

inline AlignedVector<float> expected_logits(const AlignedVector<int64_t>& ids) {
  AlignedVector<float> out;
  for (int64_t r : ids) {
    out.push_back(10.0f * static_cast<float>(r) + 1.75f);
    out.push_back(-1.25f);
    out.push_back(15.0f * static_cast<float>(r) + 2.0f);
  }
  return out;
}

inline std::vector<uint8_t> build_or_fail(const Builder& b) {
  std::string error;
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(b.build(&bytes, &error)) << error;
  return bytes;
}

// Loads engine bytes through the TensorRT adapter, as the backend does (device 0: the GPU-free implementation
// deserializes anywhere).
inline std::unique_ptr<Engine> load(const std::vector<uint8_t>& bytes) {
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  EXPECT_EQ(engine::tensorrt::deserialize(bytes.data(), bytes.size(), 0, &engine, why), Error::Ok) << why.c_str();
  return engine;
}

// The adapter's refusal of `bytes` (expecting one, with code `expected`).
inline std::string load_error(const std::vector<uint8_t>& bytes, Error expected) {
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  EXPECT_EQ(engine::tensorrt::deserialize(bytes.data(), bytes.size(), 0, &engine, why), expected) << why.c_str();
  EXPECT_EQ(engine, nullptr) << "the load was expected to fail";
  return why.c_str();
}

// A new context of `engine` (nullptr, with the reason reported as a test failure, when the engine refuses).
inline std::unique_ptr<ExecutionContext> new_context(Engine& engine, const ContextOptions& options = {}) {
  Diagnostic why;
  std::unique_ptr<ExecutionContext> context;
  EXPECT_EQ(engine.create_context(options, &context, why), Error::Ok) << why.c_str();
  return context;
}

inline std::unique_ptr<Engine> load_llm(const std::string& label) { return load(build_or_fail(llm_builder(label))); }

// Sets ids' shape and both addresses, then enqueues; logits are resized to fit. The first failing call's code and
// reason come back.
inline Error run_llm(ExecutionContext& context, AlignedVector<int64_t>& ids, AlignedVector<float>* logits,
                     Diagnostic& why, engine::StreamHandle stream = nullptr) {
  logits->assign(ids.size() * kLogits, -99.0f);
  Error error = context.set_input_shape(0, make_shape({int64_t{1}, static_cast<int64_t>(ids.size())}), why);
  if (error == Error::Ok) error = context.set_tensor_address(0, ids.data(), why);
  if (error == Error::Ok) error = context.set_tensor_address(1, logits->data(), why);
  if (error == Error::Ok) error = context.enqueue(stream, why);
  return error;
}

inline bool has(const char* text, const std::string& part) { return std::string(text).find(part) != std::string::npos; }
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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

// 256-byte-aligned host memory, as IO tensors and user-managed scratch need.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n)
      : size(n), data(static_cast<uint8_t*>(::operator new[](n, std::align_val_t{engine::kIoAddressAlignment}))) {}
  ~AlignedBuffer() { ::operator delete[](data, std::align_val_t{engine::kIoAddressAlignment}); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  size_t size;
  uint8_t* data;
};

}  // namespace etrt::gpufree::testing
