// choose_profile(), validate_shapes() and choose_and_validate() never touch the heap, on success or
// on refusal: they run inside execute(), which must not allocate. The
// executable replaces the global operator new (alloc_counter.cpp), so these
// tests stand alone.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "alloc_counter.h"
#include "profile/selection.h"
#include "table_builders.h"

namespace etrt::profile {
namespace {

using testing::decode_prefill_table;
using testing::S;

// Allocations made by `fn`.
template <typename Fn>
int64_t allocations_in(Fn&& fn) {
  const int64_t before = etrt::allocation_count();
  fn();
  return etrt::allocation_count() - before;
}

TEST(NoAllocation, ChooseAndValidateDoNotAllocateWhenTheyAccept) {
  const ProfileTable table = decode_prefill_table();
  const std::vector<Shape> prefill = {S({1, 64}), S({1, 64}), S({16})};
  const int64_t n = allocations_in([&] {
    Diagnostic why;
    Choice choice;
    for (const auto policy : {AutoPolicy::kStickyFirstFit, AutoPolicy::kFirstFit}) {
      EXPECT_EQ(choose_profile(table, ProfileRequest::automatic(policy), 0, prefill, &choice, why), Error::Ok);
      EXPECT_EQ(validate_shapes(table, choice.profile, prefill, why), Error::Ok);
      EXPECT_EQ(choose_and_validate(table, ProfileRequest::automatic(policy), 0, prefill, &choice, why), Error::Ok);
    }
  });
  EXPECT_EQ(n, 0);
}

TEST(NoAllocation, RefusalsFormatTheirMessagesWithoutAllocating) {
  ProfileTable table = decode_prefill_table();
  table.set_label("TensorRT delegate 'forward' #0");
  const std::vector<Shape> too_long = {S({1, 4096}), S({1, 4096}), S({16})};
  const std::vector<Shape> bad_rank = {S({1, 4096}), S({1}), S({16})};
  const int64_t n = allocations_in([&] {
    Diagnostic why;
    Choice choice;
    EXPECT_EQ(choose_profile(table, ProfileRequest::automatic(AutoPolicy::kFirstFit), 0, too_long, &choice, why),
              Error::InvalidArgument);
    EXPECT_EQ(choose_profile(table, ProfileRequest::pinned(5), 0, too_long, &choice, why), Error::InvalidArgument);
    EXPECT_EQ(choose_profile(table, ProfileRequest::pinned(0), 0, bad_rank, &choice, why), Error::InvalidArgument);
    EXPECT_EQ(validate_shapes(table, 1, too_long, why), Error::InvalidArgument);
    EXPECT_EQ(validate_shapes(table, 0, too_long, why), Error::InvalidArgument);
    EXPECT_EQ(choose_and_validate(table, ProfileRequest::pinned(1), 0, too_long, &choice, why), Error::InvalidArgument);
  });
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace etrt::profile
