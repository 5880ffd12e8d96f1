#include "baseline_selection.h"

namespace etrt::bench {

bool baseline_choose_and_validate(const BaselineHandle& handle, int32_t active_profile, const Shape* shapes,
                                  size_t num_shapes, int32_t* chosen) {
  std::vector<std::vector<int64_t>> input_dims;
  input_dims.reserve(num_shapes);
  for (size_t i = 0; i < num_shapes; ++i) input_dims.emplace_back(shapes[i].d, shapes[i].d + shapes[i].rank);
  if (input_dims.size() != handle.profile_dynamic_dims.size()) return false;

  const auto profile_fits = [&](int32_t profile) {
    for (size_t i = 0; i < input_dims.size(); ++i) {
      for (const auto& dyn : handle.profile_dynamic_dims[i]) {
        if (static_cast<size_t>(dyn.dim_index) >= input_dims[i].size()) return false;
        const int64_t v = input_dims[i][static_cast<size_t>(dyn.dim_index)];
        const auto& range = dyn.profile_ranges[static_cast<size_t>(profile)];
        if (v < range.first || v > range.second) return false;
      }
    }
    return true;
  };

  int32_t profile = active_profile;
  if (handle.num_profiles > 1 && !profile_fits(profile)) {
    profile = -1;
    for (int32_t p = 0; p < handle.num_profiles; ++p) {
      if (profile_fits(p)) {
        profile = p;
        break;
      }
    }
    if (profile < 0) return false;
  }

  const std::vector<BaselineHandle::InputBounds>& bounds = handle.bounds[static_cast<size_t>(profile)];
  for (size_t i = 0; i < input_dims.size(); ++i) {
    if (input_dims[i].size() != bounds[i].min.size()) return false;
    for (size_t d = 0; d < input_dims[i].size(); ++d) {
      if (input_dims[i][d] < bounds[i].min[d] || input_dims[i][d] > bounds[i].max[d]) return false;
    }
  }
  *chosen = profile;
  return true;
}

}  // namespace etrt::bench
