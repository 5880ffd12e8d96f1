// choose_profile() + validate_shapes() against a brute-force reference over
// thousands of generated tables and shapes. The reference checks every
// dimension of every profile and knows nothing about distinguishing dims, so
// agreement shows that comparing only those dims loses nothing. The same
// cases hold choose_and_validate() to the two-call path, message included.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "profile/selection.h"

namespace etrt::profile {
namespace {

struct Engine {
  int32_t num_profiles = 1;
  std::vector<InputBounds> inputs;
};

int64_t uniform(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

bool chance(std::mt19937& rng, double p) { return std::bernoulli_distribution(p)(rng); }

// Small values so that ranges overlap, touch and nest often.
Engine random_engine(std::mt19937& rng) {
  Engine e;
  e.num_profiles = static_cast<int32_t>(uniform(rng, 1, 4));
  const size_t profiles = static_cast<size_t>(e.num_profiles);
  const int64_t num_inputs = uniform(rng, 0, 4);
  for (int64_t i = 0; i < num_inputs; ++i) {
    InputBounds in;
    in.name = "in" + std::to_string(i);
    in.min.resize(profiles);
    in.opt.resize(profiles);
    in.max.resize(profiles);
    const int32_t rank = static_cast<int32_t>(uniform(rng, 0, 3));
    for (size_t p = 0; p < profiles; ++p) in.min[p].rank = in.opt[p].rank = in.max[p].rank = rank;
    for (int32_t d = 0; d < rank; ++d) {
      const int64_t mode = uniform(rng, 0, 2);
      const int64_t fixed = uniform(rng, 0, 5);
      for (size_t p = 0; p < profiles; ++p) {
        int64_t lo = fixed, hi = fixed;
        if (mode == 1) {  // a range per profile
          lo = uniform(rng, 0, 6);
          hi = lo + uniform(rng, 0, 4);
        } else if (mode == 2) {  // fixed per profile, maybe different
          lo = hi = uniform(rng, 0, 6);
        }
        in.min[p][d] = lo;
        in.opt[p][d] = uniform(rng, lo, hi);
        in.max[p][d] = hi;
      }
    }
    e.inputs.push_back(std::move(in));
  }
  return e;
}

// Mostly shapes near one profile's bounds; sometimes out of range, a wrong
// rank or a missing input.
std::vector<Shape> random_shapes(std::mt19937& rng, const Engine& e) {
  std::vector<Shape> shapes;
  const size_t near = static_cast<size_t>(uniform(rng, 0, e.num_profiles - 1));
  for (const InputBounds& in : e.inputs) {
    Shape s;
    s.rank = in.min[near].rank;
    for (int32_t d = 0; d < s.rank; ++d) {
      s[d] = chance(rng, 0.85) ? uniform(rng, in.min[near][d], in.max[near][d]) : uniform(rng, -1, 12);
    }
    if (chance(rng, 0.02)) s.rank = static_cast<int32_t>(uniform(rng, 0, kMaxRank));
    shapes.push_back(s);
  }
  if (!shapes.empty() && chance(rng, 0.02)) shapes.pop_back();
  if (chance(rng, 0.01)) shapes.push_back(Shape{});
  return shapes;
}

bool reference_fits(const Engine& e, int32_t p, const std::vector<Shape>& shapes) {
  const size_t q = static_cast<size_t>(p);
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    for (int32_t d = 0; d < shapes[i].rank; ++d) {
      if (shapes[i][d] < e.inputs[i].min[q][d] || shapes[i][d] > e.inputs[i].max[q][d]) return false;
    }
  }
  return true;
}

bool reference_static(const Engine& e) {
  for (const InputBounds& in : e.inputs) {
    for (int32_t d = 0; d < in.min[0].rank; ++d) {
      for (size_t p = 0; p < in.min.size(); ++p) {
        if (in.min[p][d] != in.max[p][d] || in.min[p][d] != in.min[0][d]) return false;
      }
    }
  }
  return true;
}

// The profile an execution runs, or nullopt for a refusal: the documented
// rules written as plainly as possible.
std::optional<int32_t> reference(const Engine& e, const ProfileRequest& request, int32_t active,
                                 const std::vector<Shape>& shapes) {
  const int32_t n = e.num_profiles;
  if (shapes.size() != e.inputs.size()) return std::nullopt;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].rank != e.inputs[i].min[0].rank) return std::nullopt;
  }
  int32_t p = 0;
  if (request.kind == ProfileRequest::Kind::kPinned) {
    if (request.index < 0) return std::nullopt;
    if (n == 1 && request.index > 0 && !reference_static(e)) return std::nullopt;
    if (n > 1 && request.index >= n) return std::nullopt;
    p = n == 1 ? 0 : request.index;
  } else if (request.kind == ProfileRequest::Kind::kAuto && n > 1) {
    if (request.policy == AutoPolicy::kStickyFirstFit && active >= 0 && active < n &&
        reference_fits(e, active, shapes)) {
      p = active;
    } else {
      p = 0;
      while (p < n && !reference_fits(e, p, shapes)) ++p;
      if (p == n) return std::nullopt;
    }
  }
  return reference_fits(e, p, shapes) ? std::optional<int32_t>(p) : std::nullopt;
}

TEST(ChooseProfileRandomized, AgreesWithABruteForceReferenceUnderEveryRequestKindAndInOneCall) {
  std::mt19937 rng(20260822);
  constexpr int kTables = 4000;
  constexpr int kShapesPerTable = 25;
  int64_t accepted = 0, refused = 0, nonzero = 0;
  for (int t = 0; t < kTables; ++t) {
    const Engine e = random_engine(rng);
    ProfileTable table;
    Diagnostic error;
    ASSERT_EQ(ProfileTable::build(e.num_profiles, e.inputs, &table, error), Error::Ok) << error.c_str();
    ASSERT_EQ(table.is_static(), reference_static(e));
    for (int s = 0; s < kShapesPerTable; ++s) {
      const std::vector<Shape> shapes = random_shapes(rng, e);
      const int32_t active = static_cast<int32_t>(uniform(rng, -1, e.num_profiles));
      const ProfileRequest requests[] = {
          ProfileRequest::automatic(AutoPolicy::kStickyFirstFit),
          ProfileRequest::automatic(AutoPolicy::kFirstFit),
          ProfileRequest::default_request(),
          ProfileRequest::pinned(static_cast<int32_t>(uniform(rng, -1, e.num_profiles))),
      };
      for (const ProfileRequest& request : requests) {
        Choice choice;
        Diagnostic why;
        std::optional<int32_t> ours;
        if (choose_profile(table, request, active, shapes, &choice, why) == Error::Ok &&
            validate_shapes(table, choice.profile, shapes, why) == Error::Ok) {
          ours = choice.profile;
        }
        const std::optional<int32_t> expected = reference(e, request, active, shapes);
        ASSERT_EQ(ours, expected) << "table " << t << " shape set " << s << " request kind "
                                  << static_cast<int>(request.kind) << " index " << request.index << " policy "
                                  << policy_name(request.policy) << " active " << active << "\n"
                                  << why.c_str();
        // The one-call path must agree exactly: result, choice and message.
        Choice one_call_choice{-5, false};
        Diagnostic one_call_why;
        const Error one_call_status =
            choose_and_validate(table, request, active, shapes, &one_call_choice, one_call_why);
        const bool one_call = one_call_status == Error::Ok;
        ASSERT_EQ(one_call, ours.has_value()) << one_call_why.c_str();
        if (one_call) {
          ASSERT_EQ(one_call_choice.profile, choice.profile);
          ASSERT_EQ(one_call_choice.pin_ignored, choice.pin_ignored);
        } else {
          ASSERT_EQ(one_call_status, Error::InvalidArgument);
          ASSERT_STREQ(one_call_why.c_str(), why.c_str());
          ASSERT_EQ(one_call_choice.profile, -5);
        }
        if (ours) {
          ++accepted;
          nonzero += *ours != 0;
        } else {
          ++refused;
          ASSERT_FALSE(why.empty());
        }
      }
    }
  }
  // The generator must exercise both outcomes and more than profile 0.
  EXPECT_GT(accepted, 50000);
  EXPECT_GT(refused, 50000);
  EXPECT_GT(nonzero, 20000);
}

}  // namespace
}  // namespace etrt::profile
