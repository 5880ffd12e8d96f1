// With tracing off, the calls a backend makes on every execution -- through
// etrt's TensorRT adapter into the GPU-free NvInfer implementation -- allocate
// nothing, so neither spoils etrt's zero-allocation measurements. Counts
// global operator new calls on this thread (the shared library's included:
// the executable's replacement operator new interposes on its calls too).

#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "gpufree_fixtures.h"

namespace {
thread_local int64_t g_allocations = 0;
}  // namespace

void* operator new(size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return ::operator new(size); }
// The nothrow forms too (the GPU-free library allocates with them): left to the runtime's (or AddressSanitizer's)
// own, they would hand out memory the replaced operator delete below frees with std::free.
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept { return ::operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace etrt::gpufree::testing {
namespace {

TEST(GpufreeAllocation, TheExecutionPathDoesNotAllocateWithTracingOff) {
  Builder b = llm_builder(test_label());
  b.set_tracing(false);
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  AlignedVector<int64_t> prompt = {1, 2, 3}, token = {4};
  AlignedVector<float> logits(kMaxPrefill * kLogits);
  Shape shape;
  Diagnostic why;  // written only on failure, so the loop below allocates nothing for it

  const int64_t before = g_allocations;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_input_shape(0, make_shape({1, 3}), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->tensor_shape(1, &shape, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_tensor_address(0, prompt.data(), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_tensor_address(1, logits.data(), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_optimization_profile(kDecode, nullptr, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_input_shape(0, make_shape({1, 1}), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->tensor_shape(1, &shape, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_tensor_address(0, token.data(), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_tensor_address(1, logits.data(), why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->enqueue(nullptr, why), Error::Ok) << why.c_str();
  }
  EXPECT_EQ(g_allocations - before, 0);
  EXPECT_FLOAT_EQ(logits[0], 41.75f);
  EXPECT_EQ(shape, make_shape({1, 1, 3}));
}

TEST(GpufreeAllocation, TheCounterSeesAllocationsInsideTheLibrary) {
  // Guards the test above against counting nothing: the GPU-free library is a shared library, and its allocations
  // count only because the replacement operator new above interposes on its calls. Builder::build allocates there.
  const Builder b = llm_builder(test_label());
  std::string error;
  const int64_t before = g_allocations;
  std::vector<uint8_t> bytes;
  const bool built = b.build(&bytes, &error);
  EXPECT_GT(g_allocations - before, 0);
  EXPECT_TRUE(built) << error;
}

}  // namespace
}  // namespace etrt::gpufree::testing
