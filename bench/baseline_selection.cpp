#include "baseline_selection.h"

namespace etrt::bench {
namespace {

bool dims_within(const BaselineDims& dims, const BaselineHandle::InputBounds& bounds) {
  if (dims.nbDims != bounds.min.nbDims) return false;
  for (int32_t d = 0; d < dims.nbDims; ++d) {
    if (dims.d[d] < bounds.min.d[d] || dims.d[d] > bounds.max.d[d]) return false;
  }
  return true;
}

bool profile_accepts(const BaselineHandle& handle, int32_t profile, const std::vector<BaselineDims>& input_dims) {
  if (profile < 0 || static_cast<size_t>(profile) >= handle.bounds.size()) return false;
  const std::vector<BaselineHandle::InputBounds>& bounds = handle.bounds[static_cast<size_t>(profile)];
  if (bounds.size() < input_dims.size()) return false;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    if (!dims_within(input_dims[i], bounds[i])) return false;
  }
  return true;
}

}  // namespace

bool baseline_choose_and_validate(const BaselineHandle& handle, int32_t active_profile, const Shape* shapes,
                                  size_t num_shapes, int32_t* chosen) {
  if (num_shapes != handle.num_inputs) return false;

  // 1. The call's input shapes as TensorRT Dims: one vector, one allocation.
  std::vector<BaselineDims> input_dims(handle.num_inputs);
  for (size_t i = 0; i < num_shapes; ++i) {
    input_dims[i].nbDims = shapes[i].rank;
    for (int32_t d = 0; d < shapes[i].rank; ++d) input_dims[i].d[d] = shapes[i].d[d];
  }

  // 2. Sticky first-fit.
  if (handle.bounds.empty()) return false;
  const int32_t num_profiles = static_cast<int32_t>(handle.bounds.size());
  int32_t profile = -1;
  if (profile_accepts(handle, active_profile, input_dims)) {
    profile = active_profile;
  } else {
    for (int32_t p = 0; p < num_profiles; ++p) {
      if (profile_accepts(handle, p, input_dims)) {
        profile = p;
        break;
      }
    }
  }
  if (profile < 0) return false;

  // 3. Validation of every dimension against the chosen profile.
  const std::vector<BaselineHandle::InputBounds>& bounds = handle.bounds[static_cast<size_t>(profile)];
  for (size_t i = 0; i < input_dims.size(); ++i) {
    const BaselineDims& dims = input_dims[i];
    if (dims.nbDims != bounds[i].min.nbDims) return false;
    for (int32_t d = 0; d < dims.nbDims; ++d) {
      if (dims.d[d] < bounds[i].min.d[d] || dims.d[d] > bounds[i].max.d[d]) return false;
    }
  }
  *chosen = profile;
  return true;
}

}  // namespace etrt::bench
