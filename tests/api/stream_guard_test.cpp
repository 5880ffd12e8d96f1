// etrt::CudaStreamGuard: a per-thread, nesting selection of the stream etrt's
// delegates run on. It never calls CUDA, so it is tested here, without a GPU;
// the GPU suite (tests/gpu) checks that delegates really use the stream.

#include "etrt/stream_guard.h"

#include <gtest/gtest.h>

#include <thread>

namespace etrt {
namespace {

void* fake_stream(uintptr_t n) { return reinterpret_cast<void*>(n * 0x100); }

TEST(CudaStreamGuard, WithoutAGuardNoStreamIsSelected) { EXPECT_FALSE(current_cuda_stream().has_value()); }

TEST(CudaStreamGuard, AGuardSelectsItsStreamForItsScope) {
  {
    CudaStreamGuard on(fake_stream(1));
    ASSERT_TRUE(current_cuda_stream().has_value());
    EXPECT_EQ(*current_cuda_stream(), fake_stream(1));
  }
  EXPECT_FALSE(current_cuda_stream().has_value());
}

TEST(CudaStreamGuard, NestedGuardsRestoreTheOuterSelection) {
  CudaStreamGuard outer(fake_stream(1));
  {
    CudaStreamGuard inner(fake_stream(2));
    EXPECT_EQ(*current_cuda_stream(), fake_stream(2));
  }
  EXPECT_EQ(*current_cuda_stream(), fake_stream(1));
}

TEST(CudaStreamGuard, TheNullStreamIsASelectionNotTheAbsenceOfOne) {
  CudaStreamGuard legacy(nullptr);
  ASSERT_TRUE(current_cuda_stream().has_value());
  EXPECT_EQ(*current_cuda_stream(), nullptr);
}

TEST(CudaStreamGuard, EachThreadHasItsOwnSelection) {
  CudaStreamGuard here(fake_stream(1));
  bool other_saw_none = false;
  void* other_saw = nullptr;
  std::thread t([&] {
    other_saw_none = !current_cuda_stream().has_value();
    CudaStreamGuard there(fake_stream(2));
    other_saw = *current_cuda_stream();
  });
  t.join();
  EXPECT_TRUE(other_saw_none);
  EXPECT_EQ(other_saw, fake_stream(2));
  EXPECT_EQ(*current_cuda_stream(), fake_stream(1));
}

static_assert(!std::is_copy_constructible_v<CudaStreamGuard> && !std::is_move_constructible_v<CudaStreamGuard>,
              "a guard's lifetime is its scope");

}  // namespace
}  // namespace etrt
