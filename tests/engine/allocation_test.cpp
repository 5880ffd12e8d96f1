// With tracing off, the calls a backend makes on every execution allocate
// nothing, so the reference engine does not spoil etrt's zero-allocation
// measurements. Counts global operator new calls on this thread.

#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "reference_fixtures.h"

namespace {
thread_local int64_t g_allocations = 0;
}  // namespace

void* operator new(size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace etrt::gpufree::testing {
namespace {

TEST(ReferenceAllocation, TheExecutionPathDoesNotAllocateWithTracingOff) {
  std::unique_ptr<ReferenceEngine> engine = load_llm(test_label());
  engine->set_tracing(false);
  std::unique_ptr<ExecutionContext> context = engine->create_context({});
  std::vector<int64_t> prompt = {1, 2, 3}, token = {4};
  std::vector<float> logits(kMaxPrefill * kLogits);
  Shape shape;

  const int64_t before = g_allocations;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(context->set_optimization_profile(kPrefill, nullptr));
    ASSERT_TRUE(context->set_input_shape(0, make_shape({1, 3})));
    ASSERT_TRUE(context->tensor_shape(1, &shape));
    ASSERT_TRUE(context->set_tensor_address(0, prompt.data()) && context->set_tensor_address(1, logits.data()));
    ASSERT_TRUE(context->enqueue(nullptr));
    ASSERT_TRUE(context->set_optimization_profile(kDecode, nullptr));
    ASSERT_TRUE(context->set_input_shape(0, make_shape({1, 1})));
    ASSERT_TRUE(context->tensor_shape(1, &shape));
    ASSERT_TRUE(context->set_tensor_address(0, token.data()) && context->set_tensor_address(1, logits.data()));
    ASSERT_TRUE(context->enqueue(nullptr));
  }
  EXPECT_EQ(g_allocations - before, 0);
  EXPECT_FLOAT_EQ(logits[0], 41.75f);
}

}  // namespace
}  // namespace etrt::gpufree::testing
