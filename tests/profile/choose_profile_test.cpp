// choose_profile(): the rules of docs/profile-selection.md, one per test.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profile/selection.h"
#include "table_builders.h"

namespace etrt::profile {
namespace {

using testing::build_table;
using testing::decode_prefill_table;
using testing::dynamic_single_table;
using testing::fixed_input;
using ::testing::HasSubstr;
using testing::input;
using ::testing::Not;
using testing::overlapping_table;
using testing::S;
using testing::static_single_table;

constexpr ProfileRequest kDefault = ProfileRequest::default_request();
constexpr ProfileRequest kSticky = ProfileRequest::automatic(AutoPolicy::kStickyFirstFit);
constexpr ProfileRequest kFirstFit = ProfileRequest::automatic(AutoPolicy::kFirstFit);
constexpr ProfileRequest pin(int32_t i) { return ProfileRequest::pinned(i); }

struct Outcome {
  bool ok = false;
  Choice choice;
  std::string message;
};

Outcome choose(const ProfileTable& table, const ProfileRequest& request, int32_t active,
               const std::vector<Shape>& shapes) {
  Outcome out;
  Diagnostic why;
  out.ok = choose_profile(table, request, active, shapes, &out.choice, why) == Error::Ok;
  out.message = why.c_str();
  return out;
}

// The profile chosen; fails the test on a refusal.
int32_t chosen(const ProfileTable& table, const ProfileRequest& request, int32_t active,
               const std::vector<Shape>& shapes) {
  const Outcome out = choose(table, request, active, shapes);
  EXPECT_TRUE(out.ok) << out.message;
  return out.choice.profile;
}

// The refusal's message; fails the test if it was accepted.
std::string refusal(const ProfileTable& table, const ProfileRequest& request, int32_t active,
                    const std::vector<Shape>& shapes) {
  const Outcome out = choose(table, request, active, shapes);
  EXPECT_FALSE(out.ok) << "chose profile " << out.choice.profile;
  EXPECT_FALSE(out.message.empty());
  return out.message;
}

const std::vector<Shape> kOneToken = {S({1, 1})};
const std::vector<Shape> kPrompt = {S({1, 100})};
const std::vector<Shape> kDecode = {S({1, 1}), S({1, 1}), S({16})};
const std::vector<Shape> kPrefill = {S({1, 64}), S({1, 64}), S({16})};

// ---- default and pinned requests ----

TEST(ChooseProfile, DefaultRequestChoosesProfileZero) {
  EXPECT_EQ(chosen(decode_prefill_table(), kDefault, 1, kDecode), 0);
}

TEST(ChooseProfile, DefaultRequestChoosesProfileZeroEvenWhenOnlyAnotherProfileFits) {
  // Default means "as today": profile 0, and validation reports the misfit.
  EXPECT_EQ(chosen(decode_prefill_table(), kDefault, 0, kPrefill), 0);
}

TEST(ChooseProfile, PinnedRequestChoosesThePinnedProfile) {
  EXPECT_EQ(chosen(decode_prefill_table(), pin(1), 0, kPrefill), 1);
  EXPECT_EQ(chosen(decode_prefill_table(), pin(0), 1, kDecode), 0);
}

TEST(ChooseProfile, PinnedRequestIsNotOverriddenByTheShapes) {
  // The caller asked for profile 1; validation, not selection, judges the shapes.
  EXPECT_EQ(chosen(decode_prefill_table(), pin(1), 0, kDecode), 1);
}

TEST(ChooseProfile, PinnedNegativeIndexIsRefusedOnAMultiProfileTable) {
  const std::string message = refusal(decode_prefill_table(), pin(-1), 0, kDecode);
  EXPECT_THAT(message, HasSubstr("optimization profile -1 was pinned"));
  EXPECT_THAT(message, HasSubstr("2 optimization profiles (valid indices: 0..1)"));
}

TEST(ChooseProfile, PinnedIndexEqualToTheProfileCountIsRefusedNamingIndexAndCount) {
  const std::string message = refusal(decode_prefill_table(), pin(2), 0, kDecode);
  EXPECT_THAT(message, HasSubstr("optimization profile 2 was pinned"));
  EXPECT_THAT(message, HasSubstr("etrt::OptimizationProfileGuard(2)"));
  EXPECT_THAT(message, HasSubstr("2 optimization profiles"));
  EXPECT_THAT(message, HasSubstr("automatic()"));
}

TEST(ChooseProfile, PinnedNegativeIndexIsRefusedOnAOneProfileTable) {
  const std::string message = refusal(static_single_table(), pin(-3), 0, {S({1, 3, 224, 224})});
  EXPECT_THAT(message, HasSubstr("optimization profile -3"));
  EXPECT_THAT(message, HasSubstr("1 optimization profile (valid index: 0)"));
}

TEST(ChooseProfile, PinnedZeroOnAOneProfileTableChoosesZero) {
  const Outcome out = choose(dynamic_single_table(), pin(0), 0, {S({1, 7})});
  ASSERT_TRUE(out.ok) << out.message;
  EXPECT_EQ(out.choice.profile, 0);
  EXPECT_FALSE(out.choice.pin_ignored);
}

TEST(ChooseProfile, PinnedNonzeroOnAStaticOneProfileTableIsIgnoredAndReported) {
  const Outcome out = choose(static_single_table(), pin(1), 0, {S({1, 3, 224, 224})});
  ASSERT_TRUE(out.ok) << out.message;
  EXPECT_EQ(out.choice.profile, 0);
  EXPECT_TRUE(out.choice.pin_ignored);
}

TEST(ChooseProfile, PinnedFarBeyondTheCountOnAStaticOneProfileTableIsIgnoredToo) {
  const Outcome out = choose(static_single_table(), pin(1000), 0, {S({1, 3, 224, 224})});
  ASSERT_TRUE(out.ok) << out.message;
  EXPECT_TRUE(out.choice.pin_ignored);
}

TEST(ChooseProfile, PinnedNonzeroOnADynamicOneProfileTableIsRefusedSayingWhatToDo) {
  const std::string message = refusal(dynamic_single_table(), pin(1), 0, {S({1, 1})});
  EXPECT_THAT(message, HasSubstr("optimization profile 1 was pinned"));
  EXPECT_THAT(message, HasSubstr("single optimization profile and dynamic inputs"));
  EXPECT_THAT(message, HasSubstr("input 'input_ids' dimension 1 accepts 1..2048"));
  EXPECT_THAT(message, HasSubstr("cannot honor profile 1"));
  EXPECT_THAT(message, HasSubstr("Pin profile 0"));
  EXPECT_THAT(message, HasSubstr("rebuild its engine"));
}

TEST(ChooseProfile, PinnedIndexIsNotReportedIgnoredOnAMultiProfileTable) {
  const Outcome out = choose(decode_prefill_table(), pin(1), 0, kPrefill);
  ASSERT_TRUE(out.ok);
  EXPECT_FALSE(out.choice.pin_ignored);
}

// ---- automatic selection: the overlapping example of the docs ----

TEST(ChooseProfile, StickyKeepsTheActiveProfileWhereRangesOverlap) {
  // After a prompt ran on profile 1, one token still fits profile 1: stay.
  EXPECT_EQ(chosen(overlapping_table(), kSticky, 1, kOneToken), 1);
}

TEST(ChooseProfile, StickyKeepsProfileZeroForOneTokenWhenZeroIsActive) {
  EXPECT_EQ(chosen(overlapping_table(), kSticky, 0, kOneToken), 0);
}

TEST(ChooseProfile, StickyLeavesAnActiveProfileThatNoLongerFits) {
  EXPECT_EQ(chosen(overlapping_table(), kSticky, 0, kPrompt), 1);
}

TEST(ChooseProfile, StickyKeepsProfileOneForAPromptWhenOneIsActive) {
  EXPECT_EQ(chosen(overlapping_table(), kSticky, 1, kPrompt), 1);
}

TEST(ChooseProfile, FirstFitReturnsToProfileZeroForOneTokenAfterAPrompt) {
  EXPECT_EQ(chosen(overlapping_table(), kFirstFit, 1, kOneToken), 0);
}

TEST(ChooseProfile, FirstFitChoosesProfileZeroForOneTokenWhenZeroIsActive) {
  EXPECT_EQ(chosen(overlapping_table(), kFirstFit, 0, kOneToken), 0);
}

TEST(ChooseProfile, FirstFitChoosesProfileOneForAPromptWhateverIsActive) {
  EXPECT_EQ(chosen(overlapping_table(), kFirstFit, 0, kPrompt), 1);
  EXPECT_EQ(chosen(overlapping_table(), kFirstFit, 1, kPrompt), 1);
}

// ---- automatic selection: other rules ----

TEST(ChooseProfile, AShapeOnlyANonzeroProfileAcceptsSelectsThatProfileUnderBothPolicies) {
  EXPECT_EQ(chosen(decode_prefill_table(), kSticky, 0, kPrefill), 1);
  EXPECT_EQ(chosen(decode_prefill_table(), kFirstFit, 0, kPrefill), 1);
}

TEST(ChooseProfile, StickyWithNoValidActiveProfileScansFromZero) {
  EXPECT_EQ(chosen(overlapping_table(), kSticky, -1, kOneToken), 0);
  EXPECT_EQ(chosen(overlapping_table(), kSticky, 7, kOneToken), 0);
}

TEST(ChooseProfile, AutoTakesTheLowestFittingIndexAmongSeveral) {
  const ProfileTable table = build_table(3, {input("x", {{S({1}), S({1}), S({8})},  //
                                                         {S({4}), S({8}), S({16})},
                                                         {S({1}), S({64}), S({64})}})});
  EXPECT_EQ(chosen(table, kFirstFit, 2, {S({6})}), 0);
  EXPECT_EQ(chosen(table, kFirstFit, 2, {S({12})}), 1);
  EXPECT_EQ(chosen(table, kFirstFit, 0, {S({40})}), 2);
  EXPECT_EQ(chosen(table, kSticky, 2, {S({6})}), 2);
}

TEST(ChooseProfile, AutoNeedsEveryInputToFitTheSameProfile) {
  const ProfileTable table = build_table(2, {input("a", {{S({1}), S({1}), S({4})}, {S({1}), S({1}), S({8})}}),
                                             input("b", {{S({1}), S({1}), S({8})}, {S({1}), S({1}), S({4})}})});
  EXPECT_EQ(chosen(table, kFirstFit, 0, {S({3}), S({7})}), 0);
  EXPECT_EQ(chosen(table, kFirstFit, 0, {S({7}), S({3})}), 1);
  EXPECT_FALSE(choose(table, kFirstFit, 0, {S({7}), S({7})}).ok);
}

TEST(ChooseProfile, AutoOnAOneProfileTableChoosesZeroAndLeavesTheShapesToValidation) {
  EXPECT_EQ(chosen(dynamic_single_table(), kSticky, 0, {S({1, 5000})}), 0);
  EXPECT_EQ(chosen(dynamic_single_table(), kFirstFit, 0, {S({1, 5000})}), 0);
}

TEST(ChooseProfile, AutoComparesOnlyTheDimensionsThatDistinguishProfiles) {
  // rope_scale is [16] in every profile; a wrong size there is validation's
  // to report, with the exact dimension, not a vague "nothing fits".
  EXPECT_EQ(chosen(decode_prefill_table(), kFirstFit, 0, {S({1, 64}), S({1, 64}), S({17})}), 1);
}

TEST(ChooseProfile, AutoWithNoFittingProfileIsRefusedListingEveryProfilesBounds) {
  const std::string message = refusal(decode_prefill_table(), kSticky, 0, {S({1, 4096}), S({1, 4096}), S({16})});
  EXPECT_THAT(message, HasSubstr("no optimization profile accepts these input shapes"));
  EXPECT_THAT(message, HasSubstr("policy sticky-first-fit, active profile 0"));
  EXPECT_THAT(message, HasSubstr("inputs: input_ids [1, 4096], attention_mask [1, 4096], rope_scale [16]"));
  EXPECT_THAT(message, HasSubstr("profile 0: input_ids [1, 1], attention_mask [1, 1], rope_scale [16]"));
  EXPECT_THAT(message, HasSubstr("profile 1: input_ids [1, 32..2048], attention_mask [1, 32..2048], rope_scale [16]"));
  EXPECT_THAT(message, HasSubstr("etrt::OptimizationProfileGuard(index)"));
}

TEST(ChooseProfile, NoFitUnderFirstFitNamesThatPolicyAndNoActiveProfile) {
  const std::string message = refusal(overlapping_table(), kFirstFit, 1, {S({1, 4096})});
  EXPECT_THAT(message, HasSubstr("policy first-fit;"));
  EXPECT_THAT(message, Not(HasSubstr("active profile")));
}

// ---- the inputs' structure ----

TEST(ChooseProfile, AWrongNumberOfInputsIsRefusedNamingTheEngineInputs) {
  const std::string message = refusal(decode_prefill_table(), kSticky, 0, {S({1, 1})});
  EXPECT_THAT(message, HasSubstr("got 1 input shapes, but the engine has 3 inputs"));
  EXPECT_THAT(message, HasSubstr("'input_ids', 'attention_mask', 'rope_scale'"));
}

TEST(ChooseProfile, ARankMismatchIsRefusedNamingTheInputAndBothRanks) {
  const std::string message = refusal(decode_prefill_table(), kSticky, 0, {S({1, 1}), S({1, 1, 1}), S({16})});
  EXPECT_THAT(message, HasSubstr("input 'attention_mask' (input 1) has rank 3 (shape [1, 1, 1])"));
  EXPECT_THAT(message, HasSubstr("expects rank 2"));
  EXPECT_THAT(message, HasSubstr("Reshape the input to rank 2"));
}

TEST(ChooseProfile, TheInputsStructureIsCheckedForDefaultAndPinnedRequestsToo) {
  EXPECT_FALSE(choose(decode_prefill_table(), kDefault, 0, {S({1, 1})}).ok);
  EXPECT_FALSE(choose(decode_prefill_table(), pin(1), 0, {S({1}), S({1, 1}), S({16})}).ok);
}

TEST(ChooseProfile, AShapeWithAnImpossibleRankIsRefusedWithoutReadingPastIt) {
  Shape broken = S({1, 1});
  broken.rank = -1;
  EXPECT_THAT(refusal(overlapping_table(), kSticky, 0, {broken}), HasSubstr("<invalid rank -1>"));
  broken.rank = 1000;
  EXPECT_THAT(refusal(overlapping_table(), kSticky, 0, {broken}), HasSubstr("<invalid rank 1000>"));
}

TEST(ChooseProfile, APinIsCheckedBeforeTheInputs) {
  EXPECT_THAT(refusal(decode_prefill_table(), pin(5), 0, {}), HasSubstr("optimization profile 5 was pinned"));
}

// ---- engines with no inputs ----

TEST(ChooseProfile, AnEngineWithNoInputsFitsEveryProfile) {
  const ProfileTable table = build_table(3, {});
  EXPECT_EQ(chosen(table, kSticky, 2, {}), 2);
  EXPECT_EQ(chosen(table, kFirstFit, 2, {}), 0);
}

TEST(ChooseProfile, AnEngineWithNoInputsStillRangeChecksPins) {
  const ProfileTable table = build_table(2, {});
  EXPECT_EQ(chosen(table, pin(1), 0, {}), 1);
  EXPECT_THAT(refusal(table, pin(2), 0, {}), HasSubstr("2 optimization profiles"));
  EXPECT_THAT(refusal(table, pin(-1), 0, {}), HasSubstr("profile -1"));
}

TEST(ChooseProfile, AnEngineWithNoInputsAndOneProfileIgnoresAPinToN) {
  const Outcome out = choose(build_table(1, {}), pin(3), 0, {});
  ASSERT_TRUE(out.ok) << out.message;
  EXPECT_TRUE(out.choice.pin_ignored);
}

TEST(ChooseProfile, AnEngineWithNoInputsRefusesAnUnexpectedShape) {
  EXPECT_THAT(refusal(build_table(2, {}), kSticky, 0, {S({1})}), HasSubstr("engine has 0 inputs"));
}

// ---- the contract of the call itself ----

TEST(ChooseProfile, AnUnbuiltTableIsRefused) {
  EXPECT_THAT(refusal(ProfileTable{}, kDefault, 0, {}), HasSubstr("profile table is empty"));
}

TEST(ChooseProfile, ARefusalLeavesTheChoiceUntouched) {
  Choice choice{7, true};
  Diagnostic why;
  EXPECT_EQ(choose_profile(decode_prefill_table(), pin(9), 0, kDecode, &choice, why), Error::InvalidArgument);
  EXPECT_EQ(choice.profile, 7);
  EXPECT_TRUE(choice.pin_ignored);
}

TEST(ChooseProfile, SuccessLeavesTheDiagnosticUntouched) {
  Diagnostic why;
  why.append("earlier text");
  Choice choice;
  EXPECT_EQ(choose_profile(decode_prefill_table(), kSticky, 0, kPrefill, &choice, why), Error::Ok);
  EXPECT_STREQ(why.c_str(), "earlier text");
}

TEST(ChooseProfile, RefusalsAreInvalidArgument) {
  Choice choice;
  Diagnostic why;
  EXPECT_EQ(choose_profile(decode_prefill_table(), pin(9), 0, kDecode, &choice, why), Error::InvalidArgument);
  const std::vector<Shape> too_long = {S({1, 4096})};
  EXPECT_EQ(choose_profile(overlapping_table(), kSticky, 0, too_long, &choice, why), Error::InvalidArgument);
  EXPECT_EQ(choose_profile(ProfileTable{}, kDefault, 0, {}, &choice, why), Error::InvalidArgument);
}

TEST(ChooseProfile, TheTableLabelPrefixesEveryRefusal) {
  ProfileTable table = decode_prefill_table();
  table.set_label("TensorRT delegate 'forward' #1");
  EXPECT_THAT(refusal(table, pin(4), 0, kDecode), ::testing::StartsWith("TensorRT delegate 'forward' #1: "));
  EXPECT_THAT(refusal(table, kSticky, 0, {S({1, 1})}), ::testing::StartsWith("TensorRT delegate 'forward' #1: "));
}

TEST(ChooseProfile, PolicyNamesMatchTheDocs) {
  EXPECT_STREQ(policy_name(AutoPolicy::kStickyFirstFit), "sticky-first-fit");
  EXPECT_STREQ(policy_name(AutoPolicy::kFirstFit), "first-fit");
}

}  // namespace
}  // namespace etrt::profile
