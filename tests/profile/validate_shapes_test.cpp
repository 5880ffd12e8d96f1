// validate_shapes(): every rank and every dimension against the chosen profile.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "profile/selection.h"
#include "table_builders.h"

namespace etrt::profile {
namespace {

using testing::build_table;
using testing::decode_prefill_table;
using testing::dynamic_single_table;
using ::testing::HasSubstr;
using testing::input;
using ::testing::Not;
using testing::S;

// The refusal's message, or "" when the shapes were accepted.
std::string validate(const ProfileTable& table, int32_t profile, const std::vector<Shape>& shapes) {
  Diagnostic why;
  const Error status = validate_shapes(table, profile, shapes, why);
  if (status == Error::Ok) return "";
  EXPECT_EQ(status, Error::InvalidArgument);
  EXPECT_FALSE(why.empty());
  return why.c_str();
}

TEST(ValidateShapes, AcceptsShapesInsideTheProfileIncludingItsBounds) {
  const ProfileTable table = decode_prefill_table();
  EXPECT_EQ(validate(table, 1, {S({1, 32}), S({1, 32}), S({16})}), "");
  EXPECT_EQ(validate(table, 1, {S({1, 2048}), S({1, 2048}), S({16})}), "");
  EXPECT_EQ(validate(table, 0, {S({1, 1}), S({1, 1}), S({16})}), "");
}

TEST(ValidateShapes, RefusesADimensionAboveMaxNamingInputDimensionValueProfileAndBounds) {
  const std::string message = validate(decode_prefill_table(), 1, {S({1, 4096}), S({1, 64}), S({16})});
  EXPECT_THAT(message, HasSubstr("input 'input_ids' (input 0)"));
  EXPECT_THAT(message, HasSubstr("dimension 1 is 4096"));
  EXPECT_THAT(message, HasSubstr("outside [32, 2048] in optimization profile 1"));
  EXPECT_THAT(message, HasSubstr("profile 1 accepts input_ids [1, 32..2048]"));
}

TEST(ValidateShapes, RefusesADimensionBelowMin) {
  const std::string message = validate(decode_prefill_table(), 1, {S({1, 64}), S({1, 8}), S({16})});
  EXPECT_THAT(message, HasSubstr("input 'attention_mask' (input 1) dimension 1 is 8, outside [32, 2048]"));
}

TEST(ValidateShapes, PointsAtAnotherProfileThatAcceptsTheShapes) {
  // Decode shapes pinned to the prefill profile: profile 0 would take them.
  const std::string message = validate(decode_prefill_table(), 1, {S({1, 1}), S({1, 1}), S({16})});
  EXPECT_THAT(message, HasSubstr("Profile 0 accepts these input shapes"));
  EXPECT_THAT(message, HasSubstr("etrt::OptimizationProfileGuard(0)"));
  EXPECT_THAT(message, HasSubstr("etrt::OptimizationProfileGuard::automatic()"));
}

TEST(ValidateShapes, ListsEachProfilesRangeForTheDimensionWhenNoProfileAccepts) {
  const std::string message = validate(decode_prefill_table(), 0, {S({1, 4096}), S({1, 4096}), S({16})});
  EXPECT_THAT(message, HasSubstr("No profile of this engine accepts these input shapes"));
  EXPECT_THAT(message,
              HasSubstr("reshape 'input_ids' so dimension 1 fits a profile (profile 0: 1, profile 1: 32..2048)"));
}

TEST(ValidateShapes, ChecksDimensionsThatDoNotDistinguishProfiles) {
  const std::string message = validate(decode_prefill_table(), 1, {S({1, 64}), S({1, 64}), S({17})});
  EXPECT_THAT(message, HasSubstr("input 'rope_scale' (input 2) dimension 0 is 17, outside [16, 16]"));
}

TEST(ValidateShapes, ReportsTheFirstOffendingDimensionInEngineOrder) {
  const std::string message = validate(decode_prefill_table(), 0, {S({2, 5}), S({1, 9}), S({16})});
  EXPECT_THAT(message, HasSubstr("'input_ids' (input 0) dimension 0 is 2"));
}

TEST(ValidateShapes, RefusesExtremeAndNegativeValuesWithoutOverflow) {
  const ProfileTable table = dynamic_single_table();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const int64_t value : {kMin, int64_t{-1}, int64_t{0}, int64_t{2049}, kMax}) {
    Shape shape = S({1, 1});
    shape[1] = value;
    EXPECT_THAT(validate(table, 0, {shape}), HasSubstr("dimension 1 is " + std::to_string(value))) << value;
  }
}

TEST(ValidateShapes, RefusesAProfileIndexOutsideTheTable) {
  EXPECT_THAT(validate(decode_prefill_table(), 2, {S({1, 1}), S({1, 1}), S({16})}),
              HasSubstr("cannot validate inputs against optimization profile 2"));
  EXPECT_THAT(validate(decode_prefill_table(), -1, {S({1, 1}), S({1, 1}), S({16})}), HasSubstr("profile -1"));
}

TEST(ValidateShapes, RefusesAWrongNumberOfInputs) {
  EXPECT_THAT(validate(decode_prefill_table(), 0, {S({1, 1}), S({1, 1})}),
              HasSubstr("got 2 input shapes, but the engine has 3 inputs"));
}

TEST(ValidateShapes, RefusesARankMismatch) {
  EXPECT_THAT(validate(decode_prefill_table(), 0, {S({1, 1}), S({1, 1}), S({1, 16})}),
              HasSubstr("input 'rope_scale' (input 2) has rank 2 (shape [1, 16]), but the engine expects rank 1"));
}

TEST(ValidateShapes, AcceptsNoShapesForAnEngineWithNoInputs) { EXPECT_EQ(validate(build_table(2, {}), 1, {}), ""); }

TEST(ValidateShapes, AcceptsRankZeroInputs) {
  const ProfileTable table = build_table(1, {input("scalar", {{S({}), S({}), S({})}})});
  EXPECT_EQ(validate(table, 0, {S({})}), "");
}

TEST(ValidateShapes, RefusesAnUnbuiltTable) {
  EXPECT_THAT(validate(ProfileTable{}, 0, {}), HasSubstr("profile table is empty"));
}

TEST(ValidateShapes, TheMessageStartsWithTheTableLabel) {
  ProfileTable table = dynamic_single_table();
  table.set_label("TensorRT delegate 'decode' #0");
  EXPECT_THAT(validate(table, 0, {S({1, 4096})}), ::testing::StartsWith("TensorRT delegate 'decode' #0: input "));
}

TEST(ValidateShapes, AnUnlabelledTableStartsWithTheProblem) {
  EXPECT_THAT(validate(dynamic_single_table(), 0, {S({1, 4096})}), ::testing::StartsWith("input 'input_ids'"));
}

TEST(ValidateShapes, RefusalsAreInvalidArgument) {
  const std::vector<Shape> too_long = {S({1, 4096})};
  Diagnostic why;
  EXPECT_EQ(validate_shapes(dynamic_single_table(), 0, too_long, why), Error::InvalidArgument);
}

TEST(ValidateShapes, AVeryLongMessageIsTruncatedNotOverflowed) {
  std::vector<InputBounds> inputs;
  std::vector<Shape> shapes;
  for (int i = 0; i < 60; ++i) {
    inputs.push_back(input(std::string(100, static_cast<char>('a' + i % 26)), {{S({1}), S({1}), S({8})}}));
    shapes.push_back(S({1}));
  }
  shapes.pop_back();  // one short: the message lists all 60 long names
  Diagnostic why;
  EXPECT_EQ(validate_shapes(build_table(1, inputs), 0, shapes, why), Error::InvalidArgument);
  EXPECT_TRUE(why.truncated());
  EXPECT_THAT(std::string(why.c_str()), ::testing::EndsWith("..."));
  EXPECT_THAT(std::string(why.c_str()), Not(HasSubstr("Pass exactly one tensor")));
}

}  // namespace
}  // namespace etrt::profile
