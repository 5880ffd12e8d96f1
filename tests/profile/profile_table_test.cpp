// ProfileTable::build(): what it records and what it refuses.

#include "profile/profile_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "table_builders.h"

namespace etrt::profile {
namespace {

using testing::build_table;
using testing::decode_prefill_table;
using testing::fixed_input;
using ::testing::HasSubstr;
using testing::input;
using testing::S;

// Builds and expects a refusal; returns its message.
std::string build_error(int32_t num_profiles, const std::vector<InputBounds>& inputs) {
  ProfileTable table;
  Diagnostic error;
  EXPECT_EQ(ProfileTable::build(num_profiles, inputs, &table, error), Error::InvalidArgument);
  EXPECT_FALSE(error.empty());
  return error.c_str();
}

TEST(ProfileTable, BuildRecordsProfileCountInputNamesAndRanks) {
  const ProfileTable table = decode_prefill_table();
  EXPECT_EQ(table.num_profiles(), 2);
  ASSERT_EQ(table.num_inputs(), 3);
  EXPECT_EQ(table.input_name(0), "input_ids");
  EXPECT_EQ(table.input_name(1), "attention_mask");
  EXPECT_EQ(table.input_name(2), "rope_scale");
  EXPECT_EQ(table.rank(0), 2);
  EXPECT_EQ(table.rank(2), 1);
}

TEST(ProfileTable, BoundsReturnsEachProfilesMinOptMax) {
  const ProfileTable table = decode_prefill_table();
  const ShapeBounds decode = table.bounds(0, 0);
  EXPECT_EQ(decode.min, S({1, 1}));
  EXPECT_EQ(decode.opt, S({1, 1}));
  EXPECT_EQ(decode.max, S({1, 1}));
  const ShapeBounds prefill = table.bounds(1, 1);
  EXPECT_EQ(prefill.min, S({1, 32}));
  EXPECT_EQ(prefill.opt, S({1, 512}));
  EXPECT_EQ(prefill.max, S({1, 2048}));
}

TEST(ProfileTable, ADefaultConstructedTableHasNoProfiles) {
  const ProfileTable table;
  EXPECT_EQ(table.num_profiles(), 0);
  EXPECT_EQ(table.num_inputs(), 0);
}

TEST(ProfileTable, AnEngineWithNoInputsBuildsAndIsStatic) {
  const ProfileTable table = build_table(3, {});
  EXPECT_EQ(table.num_profiles(), 3);
  EXPECT_EQ(table.num_inputs(), 0);
  EXPECT_TRUE(table.is_static());
}

TEST(ProfileTable, RankZeroInputsAreAccepted) {
  const ProfileTable table = build_table(2, {fixed_input("scalar", S({}), 2)});
  EXPECT_EQ(table.rank(0), 0);
  EXPECT_TRUE(table.is_static());
}

TEST(ProfileTable, ADimensionThatVariesWithinAProfileDistinguishesProfiles) {
  const ProfileTable table = build_table(1, {input("x", {{S({1, 1}), S({1, 8}), S({1, 16})}})});
  EXPECT_FALSE(table.is_distinguishing(0, 0));
  EXPECT_TRUE(table.is_distinguishing(0, 1));
  EXPECT_FALSE(table.is_static());
}

TEST(ProfileTable, AFixedDimensionThatDiffersAcrossProfilesDistinguishesProfiles) {
  const ProfileTable table = build_table(2, {input("x", {{S({1, 4}), S({1, 4}), S({1, 4})},  //
                                                         {S({2, 4}), S({2, 4}), S({2, 4})}})});
  EXPECT_TRUE(table.is_distinguishing(0, 0));
  EXPECT_FALSE(table.is_distinguishing(0, 1));
  EXPECT_FALSE(table.is_static());
}

TEST(ProfileTable, DistinguishingDimsListsOnlyTheDimensionsSelectionCompares) {
  const ProfileTable table = decode_prefill_table();
  const Span<const DimRef> keys = table.distinguishing_dims();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].input, 0);
  EXPECT_EQ(keys[0].dim, 1);
  EXPECT_EQ(keys[1].input, 1);
  EXPECT_EQ(keys[1].dim, 1);
}

TEST(ProfileTable, ATableWhoseDimensionsAreFixedAndIdenticalEverywhereIsStatic) {
  const ProfileTable table = build_table(2, {fixed_input("a", S({1, 3, 8}), 2), fixed_input("b", S({4}), 2)});
  EXPECT_TRUE(table.is_static());
  EXPECT_TRUE(table.distinguishing_dims().empty());
}

TEST(ProfileTable, OptDoesNotMakeADimensionDistinguishing) {
  // Same [min, max] everywhere: no shape can tell the profiles apart, whatever opt says.
  const ProfileTable table = build_table(2, {input("x", {{S({4}), S({4}), S({4})}, {S({4}), S({4}), S({4})}})});
  EXPECT_TRUE(table.is_static());
}

TEST(ProfileTable, LabelSetBeforeBuildSurvivesIt) {
  ProfileTable table;
  table.set_label("TensorRT delegate 'forward' #0");
  Diagnostic error;
  ASSERT_EQ(ProfileTable::build(1, Span<const InputBounds>{}, &table, error), Error::Ok) << error.c_str();
  EXPECT_EQ(table.label(), "TensorRT delegate 'forward' #0");
}

TEST(ProfileTable, BuildRefusesZeroProfiles) { EXPECT_THAT(build_error(0, {}), HasSubstr("0 optimization profiles")); }

TEST(ProfileTable, BuildRefusesANegativeProfileCount) {
  EXPECT_THAT(build_error(-1, {}), HasSubstr("-1 optimization profiles"));
}

TEST(ProfileTable, BuildRefusesBoundsForADifferentNumberOfProfiles) {
  const std::string error = build_error(2, {input("input_ids", {{S({1}), S({1}), S({1})}})});
  EXPECT_THAT(error, HasSubstr("'input_ids'"));
  EXPECT_THAT(error, HasSubstr("2 profiles"));
}

TEST(ProfileTable, BuildRefusesARankThatChangesAcrossProfiles) {
  const std::string error = build_error(2, {input("x", {{S({1, 1}), S({1, 1}), S({1, 1})},  //
                                                        {S({1, 1, 1}), S({1, 1, 1}), S({1, 1, 1})}})});
  EXPECT_THAT(error, HasSubstr("'x'"));
  EXPECT_THAT(error, HasSubstr("rank 3 in profile 1"));
  EXPECT_THAT(error, HasSubstr("rank 2"));
}

TEST(ProfileTable, BuildRefusesARankThatDiffersBetweenMinAndMax) {
  const std::string error = build_error(1, {input("x", {{S({1, 1}), S({1, 1}), S({1})}})});
  EXPECT_THAT(error, HasSubstr("max shape"));
}

TEST(ProfileTable, BuildRefusesMinAboveOpt) {
  const std::string error = build_error(1, {input("x", {{S({1, 9}), S({1, 8}), S({1, 16})}})});
  EXPECT_THAT(error, HasSubstr("'x'"));
  EXPECT_THAT(error, HasSubstr("dimension 1"));
  EXPECT_THAT(error, HasSubstr("min 9, opt 8, max 16"));
}

TEST(ProfileTable, BuildRefusesOptAboveMax) {
  const std::string error = build_error(1, {input("x", {{S({1, 1}), S({1, 17}), S({1, 16})}})});
  EXPECT_THAT(error, HasSubstr("min <= opt <= max"));
}

TEST(ProfileTable, BuildRefusesNegativeBounds) {
  // TensorRT reports -1 for a dimension it cannot give; it is never a bound.
  const std::string error = build_error(1, {input("x", {{S({1, -1}), S({1, -1}), S({1, -1})}})});
  EXPECT_THAT(error, HasSubstr("negative bound"));
  EXPECT_THAT(error, HasSubstr("dimension 1"));
}

TEST(ProfileTable, BuildRefusesARankAboveMaxRank) {
  InputBounds too_deep = fixed_input("x", S({1}), 1);
  too_deep.min[0].rank = too_deep.opt[0].rank = too_deep.max[0].rank = kMaxRank + 1;
  EXPECT_THAT(build_error(1, {too_deep}), HasSubstr("rank 9"));
}

TEST(ProfileTable, BuildRefusesANegativeRank) {
  InputBounds unknown = fixed_input("x", S({1}), 1);
  unknown.min[0].rank = unknown.opt[0].rank = unknown.max[0].rank = -1;
  EXPECT_THAT(build_error(1, {unknown}), HasSubstr("rank -1"));
}

TEST(ProfileTable, AFailedBuildLeavesTheOutputTableUntouched) {
  ProfileTable table = decode_prefill_table();
  Diagnostic error;
  EXPECT_EQ(ProfileTable::build(0, Span<const InputBounds>{}, &table, error), Error::InvalidArgument);
  EXPECT_EQ(table.num_profiles(), 2);
  EXPECT_EQ(table.num_inputs(), 3);
}

TEST(ProfileTable, BuildRefusesWithInvalidArgument) {
  ProfileTable table;
  Diagnostic why;
  EXPECT_EQ(ProfileTable::build(0, Span<const InputBounds>{}, &table, why), Error::InvalidArgument);
}

}  // namespace
}  // namespace etrt::profile
