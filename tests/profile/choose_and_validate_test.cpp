// choose_and_validate(): the one call an execute() makes, equal to
// choose_profile() followed by validate_shapes(). The randomized test checks
// the equality broadly; these pin down each way it can end.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profile/selection.h"
#include "table_builders.h"

namespace etrt::profile {
namespace {

using testing::decode_prefill_table;
using ::testing::HasSubstr;
using testing::S;
using testing::static_single_table;

constexpr ProfileRequest kSticky = ProfileRequest::automatic(AutoPolicy::kStickyFirstFit);

TEST(ChooseAndValidate, AutomaticSelectionReturnsTheFittingProfile) {
  const std::vector<Shape> prefill = {S({1, 64}), S({1, 64}), S({16})};
  Choice choice;
  Diagnostic why;
  ASSERT_EQ(choose_and_validate(decode_prefill_table(), kSticky, 0, prefill, &choice, why), Error::Ok) << why.c_str();
  EXPECT_EQ(choice.profile, 1);
}

TEST(ChooseAndValidate, AFixedDimensionOffItsValueIsRefusedWithValidationsMessage) {
  // Selection ignores rope_scale; the one-call path must still check it.
  const std::vector<Shape> shapes = {S({1, 64}), S({1, 64}), S({17})};
  Choice choice;
  Diagnostic why;
  EXPECT_EQ(choose_and_validate(decode_prefill_table(), kSticky, 0, shapes, &choice, why), Error::InvalidArgument);
  EXPECT_THAT(why.c_str(), HasSubstr("input 'rope_scale' (input 2) dimension 0 is 17, outside [16, 16]"));
}

TEST(ChooseAndValidate, APinnedProfileIsValidatedInFull) {
  const std::vector<Shape> decode = {S({1, 1}), S({1, 1}), S({16})};
  Choice choice;
  Diagnostic why;
  EXPECT_EQ(choose_and_validate(decode_prefill_table(), ProfileRequest::pinned(1), 0, decode, &choice, why),
            Error::InvalidArgument);
  EXPECT_THAT(why.c_str(), HasSubstr("dimension 1 is 1, outside [32, 2048] in optimization profile 1"));
  EXPECT_THAT(why.c_str(), HasSubstr("Profile 0 accepts these input shapes"));
}

TEST(ChooseAndValidate, AnIgnoredPinIsReported) {
  const std::vector<Shape> image = {S({1, 3, 224, 224})};
  Choice choice;
  Diagnostic why;
  ASSERT_EQ(choose_and_validate(static_single_table(), ProfileRequest::pinned(1), 0, image, &choice, why), Error::Ok);
  EXPECT_EQ(choice.profile, 0);
  EXPECT_TRUE(choice.pin_ignored);
}

TEST(ChooseAndValidate, SelectionRefusalsPassThrough) {
  const std::vector<Shape> too_long = {S({1, 4096}), S({1, 4096}), S({16})};
  Choice choice{9, false};
  Diagnostic why;
  EXPECT_EQ(choose_and_validate(decode_prefill_table(), kSticky, 0, too_long, &choice, why), Error::InvalidArgument);
  EXPECT_THAT(why.c_str(), HasSubstr("no optimization profile accepts these input shapes"));
  EXPECT_EQ(choice.profile, 9);
}

}  // namespace
}  // namespace etrt::profile
