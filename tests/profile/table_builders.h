#pragma once
// Terse builders for the profile tests: tables are written as per-profile
// (min, opt, max) shapes, the way an engine reports them.

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "common/shape.h"
#include "profile/profile_table.h"

namespace etrt::profile::testing {

inline Shape S(std::initializer_list<int64_t> dims) { return make_shape(dims); }

// One profile's bounds for one input.
struct MinOptMax {
  Shape min;
  Shape opt;
  Shape max;
};

inline InputBounds input(std::string name, std::initializer_list<MinOptMax> profiles) {
  InputBounds in;
  in.name = std::move(name);
  for (const MinOptMax& p : profiles) {
    in.min.push_back(p.min);
    in.opt.push_back(p.opt);
    in.max.push_back(p.max);
  }
  return in;
}

// The same fixed shape in each of `num_profiles` profiles.
inline InputBounds fixed_input(std::string name, Shape shape, int32_t num_profiles) {
  InputBounds in;
  in.name = std::move(name);
  in.min.assign(static_cast<size_t>(num_profiles), shape);
  in.opt.assign(static_cast<size_t>(num_profiles), shape);
  in.max.assign(static_cast<size_t>(num_profiles), shape);
  return in;
}

inline ProfileTable build_table(int32_t num_profiles, const std::vector<InputBounds>& inputs) {
  ProfileTable table;
  Diagnostic error;
  EXPECT_EQ(ProfileTable::build(num_profiles, inputs, &table, error), Error::Ok) << error.c_str();
  return table;
}

// The overlapping case of docs/design.md (decision 3): profile 0 = exactly one token,
// profile 1 = 1..2048 tokens.
inline ProfileTable overlapping_table() {
  return build_table(2, {input("input_ids", {{S({1, 1}), S({1, 1}), S({1, 1})},  //
                                             {S({1, 1}), S({1, 128}), S({1, 2048})}})});
}

// The RFC's LLM engine: decode [1, 1] and prefill [1, 32..2048], two token
// inputs and a fixed-size input that distinguishes nothing.
inline ProfileTable decode_prefill_table() {
  return build_table(2, {input("input_ids", {{S({1, 1}), S({1, 1}), S({1, 1})},  //
                                             {S({1, 32}), S({1, 512}), S({1, 2048})}}),
                         input("attention_mask", {{S({1, 1}), S({1, 1}), S({1, 1})},  //
                                                  {S({1, 32}), S({1, 512}), S({1, 2048})}}),
                         fixed_input("rope_scale", S({16}), 2)});
}

// One profile, every dimension fixed.
inline ProfileTable static_single_table() { return build_table(1, {fixed_input("image", S({1, 3, 224, 224}), 1)}); }

// One profile with a free sequence dimension.
inline ProfileTable dynamic_single_table() {
  return build_table(1, {input("input_ids", {{S({1, 1}), S({1, 64}), S({1, 2048})}})});
}

}  // namespace etrt::profile::testing
