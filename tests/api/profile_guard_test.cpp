// OptimizationProfileGuard: an execution-scoped, thread-local request.

#include "etrt/profile_guard.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>

namespace etrt {
namespace {

using Guard = OptimizationProfileGuard;

// Its lifetime is its scope: nothing may copy, move or reassign it.
static_assert(!std::is_copy_constructible_v<Guard>);
static_assert(!std::is_move_constructible_v<Guard>);
static_assert(!std::is_copy_assignable_v<Guard>);
static_assert(!std::is_move_assignable_v<Guard>);
// Only an int32_t index pins; `Guard(true)` must not silently mean profile 1.
static_assert(std::is_constructible_v<Guard, int32_t>);
static_assert(!std::is_constructible_v<Guard, bool>);
static_assert(!std::is_constructible_v<Guard, double>);
static_assert(!std::is_constructible_v<Guard, size_t>);
static_assert(!std::is_constructible_v<Guard, int64_t>);
// Pinning is explicit, and the request constructor is private.
static_assert(!std::is_convertible_v<int32_t, Guard>);
static_assert(!std::is_constructible_v<Guard, ProfileRequest>);
static_assert(!std::is_default_constructible_v<Guard>);

constexpr ProfileRequest kSticky = ProfileRequest::automatic(AutoPolicy::kStickyFirstFit);
constexpr ProfileRequest kFirstFit = ProfileRequest::automatic(AutoPolicy::kFirstFit);

// Waits until `count` threads have arrived (std::latch is C++20).
class Latch {
 public:
  explicit Latch(int count) : remaining_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--remaining_ == 0) {
      released_.notify_all();
      return;
    }
    released_.wait(lock, [this] { return remaining_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int remaining_;
};

TEST(OptimizationProfileGuard, WithoutAGuardTheRequestIsTheDefault) {
  EXPECT_EQ(current_profile_request(), ProfileRequest::default_request());
  EXPECT_EQ(current_profile_request().kind, ProfileRequest::Kind::kDefault);
}

TEST(OptimizationProfileGuard, APinGuardInstallsAPinnedRequest) {
  Guard pin(1);
  EXPECT_EQ(current_profile_request(), ProfileRequest::pinned(1));
  EXPECT_EQ(pin.request(), ProfileRequest::pinned(1));
}

TEST(OptimizationProfileGuard, LeavingTheScopeRestoresTheDefault) {
  { Guard pin(3); }
  EXPECT_EQ(current_profile_request(), ProfileRequest::default_request());
}

TEST(OptimizationProfileGuard, AnyIndexIsStoredAndLeftForTheDelegatesToCheck) {
  Guard pin(-7);
  EXPECT_EQ(current_profile_request().index, -7);
}

TEST(OptimizationProfileGuard, AutomaticDefaultsToStickyFirstFit) {
  auto any = Guard::automatic();
  EXPECT_EQ(current_profile_request(), kSticky);
  EXPECT_EQ(any.request().policy, AutoPolicy::kStickyFirstFit);
}

TEST(OptimizationProfileGuard, AutomaticInstallsTheRequestedPolicy) {
  auto any = Guard::automatic(AutoPolicy::kFirstFit);
  EXPECT_EQ(current_profile_request(), kFirstFit);
}

TEST(OptimizationProfileGuard, NestedGuardsRestoreTheOuterRequestOnScopeExit) {
  Guard outer(1);
  {
    auto middle = Guard::automatic(AutoPolicy::kFirstFit);
    {
      Guard inner(0);
      EXPECT_EQ(current_profile_request(), ProfileRequest::pinned(0));
    }
    EXPECT_EQ(current_profile_request(), kFirstFit);
  }
  EXPECT_EQ(current_profile_request(), ProfileRequest::pinned(1));
}

TEST(OptimizationProfileGuard, ANestedPinOverridesAnOuterAutomaticRequestOnlyWhileItLives) {
  auto outer = Guard::automatic();
  {
    Guard decode(0);
    EXPECT_EQ(current_profile_request(), ProfileRequest::pinned(0));
  }
  EXPECT_EQ(current_profile_request(), kSticky);
}

TEST(OptimizationProfileGuard, ThreadsHoldingDifferentGuardsNeverSeeEachOthersRequest) {
  // Both guards are alive at the same time: each thread installs its guard,
  // waits for the other to install its own, then checks and waits again before
  // either guard is destroyed.
  Latch installed(2);
  Latch checked(2);
  ProfileRequest seen_by_pinner, seen_by_automatic;
  std::thread pinner([&] {
    Guard pin(1);
    installed.arrive_and_wait();
    seen_by_pinner = current_profile_request();
    checked.arrive_and_wait();
  });
  std::thread automatic([&] {
    auto any = Guard::automatic(AutoPolicy::kFirstFit);
    installed.arrive_and_wait();
    seen_by_automatic = current_profile_request();
    checked.arrive_and_wait();
  });
  pinner.join();
  automatic.join();
  EXPECT_EQ(seen_by_pinner, ProfileRequest::pinned(1));
  EXPECT_EQ(seen_by_automatic, kFirstFit);
  EXPECT_EQ(current_profile_request(), ProfileRequest::default_request());
}

TEST(OptimizationProfileGuard, ANewThreadStartsWithTheDefaultWhileAnotherHoldsAGuard) {
  Guard pin(2);
  ProfileRequest seen = ProfileRequest::pinned(99);
  std::thread other([&] { seen = current_profile_request(); });
  other.join();
  EXPECT_EQ(seen, ProfileRequest::default_request());
  EXPECT_EQ(current_profile_request(), ProfileRequest::pinned(2));
}

TEST(ProfileRequest, EqualityComparesOnlyTheFieldsTheKindUses) {
  EXPECT_EQ(ProfileRequest::pinned(1), ProfileRequest::pinned(1));
  EXPECT_NE(ProfileRequest::pinned(1), ProfileRequest::pinned(2));
  EXPECT_NE(kSticky, kFirstFit);
  EXPECT_NE(ProfileRequest::pinned(0), ProfileRequest::default_request());
  ProfileRequest stale_index = kSticky;
  stale_index.index = 5;
  EXPECT_EQ(stale_index, kSticky);
}

}  // namespace
}  // namespace etrt
