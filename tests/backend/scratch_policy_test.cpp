// The shared scratch pool's policy (src/backend/policy/scratch_pool_policy.h): pure, so every rule is checked here
// without an engine, a device or ExecuTorch.

#include <gtest/gtest.h>

#include "backend/policy/scratch_pool_policy.h"

namespace {

using etrt::backend::must_rebind;
using etrt::backend::must_wait_for_last_user;
using etrt::backend::resize_on_join;
using etrt::backend::resize_on_leave;

TEST(ScratchPolicy, TheFirstMemberAllocatesItsNeed) {
  const auto r = resize_on_join(/*held=*/0, /*members=*/0, /*need=*/4096);
  EXPECT_TRUE(r.reallocate);
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_TRUE(resize_on_join(0, 0, 0).reallocate) << "even a need of 0 makes the pool";
}

TEST(ScratchPolicy, APoolGrowsToALargerNeedAndKeepsItsBufferForASmallerOrEqualOne) {
  const auto grow = resize_on_join(4096, 2, 65536);
  EXPECT_TRUE(grow.reallocate);
  EXPECT_EQ(grow.bytes, 65536u) << "the largest need, not the sum";
  for (size_t need : {size_t{0}, size_t{1024}, size_t{4096}}) {
    const auto keep = resize_on_join(4096, 2, need);
    EXPECT_FALSE(keep.reallocate) << need;
    EXPECT_EQ(keep.bytes, 4096u);
  }
}

TEST(ScratchPolicy, LeavingShrinksToTheLargestNeedLeftAndTheLastMemberFreesThePool) {
  const auto shrink = resize_on_leave(65536, /*left=*/3, /*largest_left=*/16384);
  EXPECT_TRUE(shrink.reallocate);
  EXPECT_EQ(shrink.bytes, 16384u);
  const auto keep = resize_on_leave(65536, 3, 65536);
  EXPECT_FALSE(keep.reallocate) << "another member needs all of it";
  const auto free = resize_on_leave(65536, 0, 0);
  EXPECT_TRUE(free.reallocate);
  EXPECT_EQ(free.bytes, 0u);
}

TEST(ScratchPolicy, AMemberGivesItsContextsThePoolsMemoryOnlyWhenTheGenerationMoved) {
  EXPECT_TRUE(must_rebind(/*bound=*/0, /*current=*/1)) << "never given";
  EXPECT_FALSE(must_rebind(3, 3));
  EXPECT_TRUE(must_rebind(3, 4)) << "the pool was reallocated since";
}

TEST(ScratchPolicy, OnlyAnotherStreamWaitsForTheLastUsersWorkAndOnlyWhileItMayRun) {
  int a = 0, b = 0;  // two stream handles
  EXPECT_FALSE(must_wait_for_last_user(true, &a, &a, false)) << "one stream runs in order";
  EXPECT_TRUE(must_wait_for_last_user(true, &a, &b, false));
  EXPECT_TRUE(must_wait_for_last_user(true, &a, &a, true)) << "the per-thread handle names another stream per thread";
  EXPECT_FALSE(must_wait_for_last_user(false, &a, &b, false)) << "finished, or nothing recorded";
}

}  // namespace
