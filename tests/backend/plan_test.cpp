// The plan's arguments (src/backend/execute/plan.h): each engine IO tensor bound, by its kind, to the caller's tensor,
// a delegate-owned state or the input an output is written into, and the call's arity counted from the kinds once at
// load, so that no execution counts states or aliases again.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/execute/plan.h"
#include "backend/rules/io_slot.h"

namespace etrt::backend {
namespace {

IoSlot slot(int32_t engine_index, int32_t alias_of = -1) {
  IoSlot s;
  s.name = s.display_name = "io" + std::to_string(engine_index);
  s.engine_index = engine_index;
  s.dtype = engine::DataType::kFloat16;
  s.alias_of = alias_of;
  return s;
}

// Inputs x (IO 0) and cache (IO 1); outputs y (IO 2) and the cache's new value (IO 3), written in place into the
// cache when `in_place`.
struct KvPlan {
  explicit KvPlan(bool in_place) {
    std::vector<IoSlot> inputs = {slot(0), slot(1)};
    inputs[1].alias_target = in_place;
    plan_arguments(inputs, {slot(2), slot(3, in_place ? 1 : -1)}, &plan);
  }
  // Makes the cache a delegate-owned state.
  void own_cache(bool in_place) {
    plan.states.emplace_back();
    plan.states.back().input = 1;
    plan.states.back().output = 1;
    plan.states.back().in_place = in_place;
    plan_state(0, &plan);
  }
  Plan plan;
};

TEST(PlanTest, WithoutAliasesOrStatesTheCallPassesEveryArgument) {
  KvPlan kv(/*in_place=*/false);
  count_arguments(&kv.plan);
  for (const Argument& a : kv.plan.arguments) EXPECT_EQ(a.kind, ArgumentKind::kCaller);
  EXPECT_EQ(kv.plan.arity.bound, 4u);
  EXPECT_EQ(kv.plan.arity.passed, 4u);
  EXPECT_EQ(kv.plan.arity.optional, 0u);
  EXPECT_EQ(kv.plan.output(1).engine_index, 3);
  EXPECT_EQ(kv.plan.output(1).scalar_type, executorch::aten::ScalarType::Half);
}

TEST(PlanTest, AnOutputWrittenInPlaceIntoTheCallersInputIsItsAliasAndMayBeLeftOut) {
  KvPlan kv(/*in_place=*/true);
  count_arguments(&kv.plan);
  const Argument& update = kv.plan.output(1);
  EXPECT_EQ(update.kind, ArgumentKind::kAlias);
  EXPECT_EQ(update.target, 1);
  EXPECT_TRUE(update.optional);
  EXPECT_TRUE(update.passed(/*with_aliased=*/true));
  EXPECT_FALSE(update.passed(/*with_aliased=*/false));
  EXPECT_TRUE(kv.plan.input(1).in_place_target);
  EXPECT_EQ(kv.plan.arity.passed, 4u);
  EXPECT_EQ(kv.plan.arity.optional, 1u);
  EXPECT_EQ(kv.plan.arity.aliased, 1u);
}

TEST(PlanTest, AStateUpdatedInPlaceTakesBothItsArgumentsOutOfEveryCall) {
  KvPlan kv(/*in_place=*/true);
  kv.own_cache(/*in_place=*/true);
  count_arguments(&kv.plan);
  EXPECT_EQ(kv.plan.input(1).kind, ArgumentKind::kState);
  EXPECT_EQ(kv.plan.input(1).target, 0);
  EXPECT_EQ(kv.plan.output(1).kind, ArgumentKind::kAlias) << "bound where the state is";
  EXPECT_FALSE(kv.plan.output(1).optional) << "the alias of a state is never passed";
  EXPECT_FALSE(kv.plan.output(1).passed(/*with_aliased=*/true));
  EXPECT_EQ(kv.plan.arity.passed, 2u);
  EXPECT_EQ(kv.plan.arity.optional, 0u);
  EXPECT_EQ(kv.plan.arity.aliased, 1u);
  EXPECT_FALSE(kv.plan.writes_back_state);
}

TEST(PlanTest, AStateWrittenBackIsBoundToItsOwnOutputAndCopiedAfterEachExecution) {
  KvPlan kv(/*in_place=*/false);
  kv.own_cache(/*in_place=*/false);
  count_arguments(&kv.plan);
  EXPECT_EQ(kv.plan.input(1).kind, ArgumentKind::kState);
  EXPECT_EQ(kv.plan.output(1).kind, ArgumentKind::kState);
  EXPECT_EQ(kv.plan.output(1).target, 0);
  EXPECT_EQ(kv.plan.arity.passed, 2u);
  EXPECT_EQ(kv.plan.arity.aliased, 0u);
  EXPECT_TRUE(kv.plan.writes_back_state);
}

}  // namespace
}  // namespace etrt::backend
