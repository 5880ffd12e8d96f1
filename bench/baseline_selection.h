#pragma once
// The baseline etrt is measured against: the per-execute profile selection
// path of upstream's ExecuTorch TensorRT backend (pytorch/TensorRT PR #4441),
// modelled here in plain C++ with the same data layout and the same work:
//
//  1. one std::vector of TensorRT Dims (Dims64: int32 nbDims + int64 d[8]),
//     sized to the input count and filled from the input tensors: one
//     allocation per call, whatever the number of inputs;
//  2. sticky first-fit: keep the active profile if every dimension of every
//     input lies in its [min, max] (and the ranks match), else the
//     lowest-index profile that fits;
//  3. validation: every dimension of every input against the chosen
//     profile's [min, max].
//
// The bounds are stored as upstream stores them, [profile][input] pairs of
// Dims (min, max), read once at init.
// Its own translation unit, so the compiler can neither see through nor elide
// the per-call allocation.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/shape.h"

namespace etrt::bench {

// The layout of nvinfer1::Dims (Dims64) in TensorRT 10.
struct BaselineDims {
  static constexpr int32_t kMaxDims = 8;
  int32_t nbDims = 0;
  int64_t d[kMaxDims] = {};
};

struct BaselineHandle {
  struct InputBounds {
    BaselineDims min;
    BaselineDims max;
  };
  std::vector<std::vector<InputBounds>> bounds;  // [profile][input]
  size_t num_inputs = 0;
};

// One execute()'s selection: copy `shapes` into a fresh
// std::vector<BaselineDims>(num_inputs), sticky first-fit from
// `active_profile`, then validate. False when nothing fits or validation fails.
bool baseline_choose_and_validate(const BaselineHandle& handle, int32_t active_profile, const Shape* shapes,
                                  size_t num_shapes, int32_t* chosen);

}  // namespace etrt::bench
