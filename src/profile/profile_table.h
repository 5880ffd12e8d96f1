#pragma once
// The optimization profiles of one engine, as the per-execution policy needs
// them: built once at init() (allocation allowed there), then read-only and
// safe to share between threads.
//
// Storage is flat so that choose_profile() and validate_shapes() walk
// contiguous memory: one array of per-dimension ranges per profile, and a
// second, smaller array holding only the dimensions that distinguish profiles
// (the ones selection compares, docs/design.md, decision 9).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/shape.h"

namespace etrt::profile {

/// One engine input's bounds as the engine reports them: for each profile
/// p in [0, num_profiles), min[p] <= opt[p] <= max[p] dimension by dimension.
struct InputBounds {
  std::string name;
  std::vector<Shape> min;
  std::vector<Shape> opt;
  std::vector<Shape> max;
};

/// min/opt/max of one input under one profile.
struct ShapeBounds {
  Shape min;
  Shape opt;
  Shape max;
};

/// An (input, dimension) pair.
struct DimRef {
  int32_t input;
  int32_t dim;
};

class ProfileTable {
 public:
  /// An empty table: num_profiles() == 0, which choose_profile() refuses.
  ProfileTable() = default;

  /// Builds `*out` from the engine's `num_profiles` and its inputs' bounds, in
  /// engine input order. Refuses with InvalidArgument, leaving `*out` untouched
  /// and a message in `why`, when: num_profiles < 1; an input has bounds for a
  /// different number of profiles; a rank is negative or above kMaxRank; the
  /// rank differs between min/opt/max or across profiles; a bound is
  /// negative; or min > opt or opt > max in some dimension.
  [[nodiscard]] static Error build(int32_t num_profiles, Span<const InputBounds> inputs, ProfileTable* out,
                                   Diagnostic& why);

  /// Number of optimization profiles (>= 1 once built).
  int32_t num_profiles() const noexcept { return num_profiles_; }
  /// Number of engine inputs (may be 0).
  int32_t num_inputs() const noexcept { return static_cast<int32_t>(ranks_.size()); }
  /// Name of input `input` in [0, num_inputs()).
  const std::string& input_name(int32_t input) const noexcept { return names_[static_cast<size_t>(input)]; }
  /// Rank of input `input` in [0, num_inputs()); the same in every profile.
  int32_t rank(int32_t input) const noexcept { return ranks_[static_cast<size_t>(input)]; }
  /// min/opt/max of input `input` under `profile` (both in range).
  ShapeBounds bounds(int32_t profile, int32_t input) const noexcept;

  /// True when every dimension of every input is fixed and identical in every
  /// profile: no shape can tell profiles apart, and a pin is moot.
  bool is_static() const noexcept { return keys_.empty(); }
  /// True when (input, dim) varies within a profile (min != max) or differs
  /// across profiles; only these dimensions take part in selection.
  bool is_distinguishing(int32_t input, int32_t dim) const noexcept;
  /// The distinguishing dimensions, in input then dimension order.
  Span<const DimRef> distinguishing_dims() const noexcept { return {keys_.data(), keys_.size()}; }

  /// Who this table belongs to, e.g. "TensorRT delegate 'forward' #0". When
  /// non-empty every diagnostic starts with "<label>: " so a refusal names its
  /// delegate (docs/design.md, decision 7). Set at init().
  void set_label(std::string label) { label_ = std::move(label); }
  const std::string& label() const noexcept { return label_; }

 private:
  // [min, min + span]: one unsigned compare, (v - min) > span, rejects both
  // sides and cannot overflow for any int64 v because every bound is >= 0.
  struct Range {
    int64_t min;
    uint64_t span;
  };

  friend struct SelectionAccess;  // selection.cpp: the per-execution paths read the flat arrays directly

  // build()'s steps after the checks: record an input, flatten the bounds, find the distinguishing dimensions.
  void add_input(const std::string& name, int32_t rank);
  void flatten(Span<const InputBounds> inputs);
  void find_keys(Span<const InputBounds> inputs);

  int32_t num_profiles_ = 0;
  size_t total_dims_ = 0;           // sum of ranks: the stride of ranges_ and opt_ per profile
  std::vector<std::string> names_;  // [input]
  std::vector<int32_t> ranks_;      // [input]
  std::vector<size_t> offsets_;     // [input]: first dimension of the input in a profile's slice
  std::vector<Range> ranges_;       // [profile * total_dims_ + offsets_[input] + dim]
  std::vector<int64_t> opt_;        // same indexing; cold, kept for bounds() and messages
  std::vector<DimRef> keys_;        // distinguishing dimensions
  // Byte offset of each key's value inside the input_shapes array
  // (input * sizeof(Shape) + offsetof(Shape, d) + dim * 8): one load per key
  // instead of an index computation, on the path every execution takes.
  std::vector<size_t> key_offsets_;
  std::vector<Range> key_ranges_;  // [profile * keys_.size() + key]
  // The other dimensions are fixed to one value in every profile; once the
  // keys placed an execution in a profile, only these remain to validate.
  std::vector<size_t> fixed_offsets_;  // byte offsets, as key_offsets_
  std::vector<int64_t> fixed_values_;
  std::string label_;
};

}  // namespace etrt::profile
