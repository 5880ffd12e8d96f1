#pragma once
// The baseline etrt is measured against: profile selection and validation the
// way upstream's open implementation does it (pytorch/TensorRT PR #4441, RFC
// section 6.2), rewritten here as plain vector code: per call, copy every
// input's dims into a fresh std::vector<std::vector<int64_t>>, keep the active
// profile if it fits, else first-fit over per-profile (min, max) pairs of the
// dims that vary, then check every dim against the chosen profile.
// Its own translation unit, so the compiler cannot elide its allocations.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/shape.h"

namespace etrt::bench {

struct BaselineHandle {
  struct ProfileDynamicDim {
    int32_t dim_index;
    std::vector<std::pair<int64_t, int64_t>> profile_ranges;  // [profile]
  };
  struct InputBounds {
    std::vector<int64_t> min;
    std::vector<int64_t> max;
  };
  int32_t num_profiles = 1;
  std::vector<std::vector<ProfileDynamicDim>> profile_dynamic_dims;  // [input]
  std::vector<std::vector<InputBounds>> bounds;                      // [profile][input]
};

// Sticky first-fit from `active_profile`, then validation. Returns false when
// nothing fits or validation fails.
bool baseline_choose_and_validate(const BaselineHandle& handle, int32_t active_profile, const Shape* shapes,
                                  size_t num_shapes, int32_t* chosen);

}  // namespace etrt::bench
