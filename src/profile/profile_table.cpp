#include "profile/profile_table.h"

#include <cinttypes>
#include <cstddef>
#include <utility>

namespace etrt::profile {

namespace {

const char* kind_name(int which) { return which == 0 ? "min" : which == 1 ? "opt" : "max"; }

// Byte offset of dimension `dim` of input `input` inside an array of Shapes: one load per dimension on the path every
// execution takes, instead of an index computation.
size_t byte_offset(size_t input, int32_t dim) {
  return input * sizeof(Shape) + offsetof(Shape, d) + static_cast<size_t>(dim) * sizeof(int64_t);
}

Error check_profile_count(int32_t num_profiles, Diagnostic& why) {
  if (num_profiles >= 1) return Error::Ok;
  return fail(why, Error::InvalidArgument,
              "the engine reports %" PRId32
              " optimization profiles; an engine has at least one. "
              "Rebuild or re-export the engine.",
              num_profiles);
}

// Input `i`'s min/opt/max shapes, profile `p`: each of rank `rank`, every bound >= 0 and min <= opt <= max.
Error check_profile_bounds(const InputBounds& in, size_t i, size_t p, int32_t rank, Diagnostic& why) {
  const char* name = in.name.c_str();
  const Shape* shapes[3] = {&in.min[p], &in.opt[p], &in.max[p]};
  for (int which = 0; which < 3; ++which) {
    if (shapes[which]->rank != rank) {
      return fail(why, Error::InvalidArgument,
                  "input '%s' (input %zu) has rank %" PRId32 " in profile %zu's %s shape but rank %" PRId32
                  " in profile 0's min shape; an input's rank must be the same in every profile.",
                  name, i, shapes[which]->rank, p, kind_name(which), rank);
    }
  }
  for (int32_t d = 0; d < rank; ++d) {
    const int64_t lo = in.min[p][d], mid = in.opt[p][d], hi = in.max[p][d];
    if (lo < 0 || mid < 0 || hi < 0) {
      return fail(why, Error::InvalidArgument,
                  "input '%s' (input %zu) dimension %" PRId32
                  " in profile %zu has a negative bound "
                  "(min %" PRId64 ", opt %" PRId64 ", max %" PRId64 "); profile bounds must be concrete sizes >= 0.",
                  name, i, d, p, lo, mid, hi);
    }
    if (lo > mid || mid > hi) {
      return fail(why, Error::InvalidArgument,
                  "input '%s' (input %zu) dimension %" PRId32 " in profile %zu has min %" PRId64 ", opt %" PRId64
                  ", max %" PRId64 "; they must satisfy min <= opt <= max.",
                  name, i, d, p, lo, mid, hi);
    }
  }
  return Error::Ok;
}

// Input `i`'s bounds: one set per profile, one rank everywhere, in 0..kMaxRank. The rank goes to `rank`.
Error check_input(const InputBounds& in, size_t i, int32_t num_profiles, int32_t* rank, Diagnostic& why) {
  const size_t profiles = static_cast<size_t>(num_profiles);
  if (in.min.size() != profiles || in.opt.size() != profiles || in.max.size() != profiles) {
    return fail(why, Error::InvalidArgument,
                "input '%s' (input %zu) has bounds for %zu/%zu/%zu (min/opt/max) profiles, "
                "but the engine has %" PRId32 " profiles.",
                in.name.c_str(), i, in.min.size(), in.opt.size(), in.max.size(), num_profiles);
  }
  *rank = in.min[0].rank;
  if (*rank < 0 || *rank > kMaxRank) {
    return fail(why, Error::InvalidArgument,
                "input '%s' (input %zu) has rank %" PRId32 " in profile 0; etrt supports ranks 0..%" PRId32
                " (TensorRT reports rank -1 for a shape it cannot give).",
                in.name.c_str(), i, *rank, kMaxRank);
  }
  for (size_t p = 0; p < profiles; ++p) {
    const Error status = check_profile_bounds(in, i, p, *rank, why);
    if (status != Error::Ok) return status;
  }
  return Error::Ok;
}

// A dimension distinguishes profiles when some profile leaves it free or the profiles disagree on it; a dimension
// fixed to one value everywhere cannot, and is left to validation.
bool distinguishes_profiles(const InputBounds& in, int32_t d) {
  const size_t profiles = in.min.size();
  for (size_t p = 0; p < profiles; ++p)
    if (in.min[p][d] != in.max[p][d] || in.min[p][d] != in.min[0][d]) return true;
  return false;
}

}  // namespace

Error ProfileTable::build(int32_t num_profiles, Span<const InputBounds> inputs, ProfileTable* out, Diagnostic& why) {
  const Error counted = check_profile_count(num_profiles, why);
  if (counted != Error::Ok) return counted;
  ProfileTable table;
  table.num_profiles_ = num_profiles;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int32_t rank = 0;
    const Error checked = check_input(inputs[i], i, num_profiles, &rank, why);
    if (checked != Error::Ok) return checked;
    table.add_input(inputs[i].name, rank);
  }
  table.flatten(inputs);
  table.find_keys(inputs);
  table.label_ = std::move(out->label_);  // a label set before build() survives it
  *out = std::move(table);
  return Error::Ok;
}

void ProfileTable::add_input(const std::string& name, int32_t rank) {
  names_.push_back(name);
  ranks_.push_back(rank);
  offsets_.push_back(total_dims_);
  total_dims_ += static_cast<size_t>(rank);
}

// Profile-major, so validating one profile reads one slice.
void ProfileTable::flatten(Span<const InputBounds> inputs) {
  const size_t profiles = static_cast<size_t>(num_profiles_);
  ranges_.reserve(profiles * total_dims_);
  opt_.reserve(profiles * total_dims_);
  for (size_t p = 0; p < profiles; ++p) {
    for (const InputBounds& in : inputs) {
      for (int32_t d = 0; d < in.min[p].rank; ++d) {
        ranges_.push_back({in.min[p][d], static_cast<uint64_t>(in.max[p][d] - in.min[p][d])});
        opt_.push_back(in.opt[p][d]);
      }
    }
  }
}

// The distinguishing dimensions (keys_) with their offsets and per-profile ranges, and the fixed ones with their one
// value. After flatten().
void ProfileTable::find_keys(Span<const InputBounds> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (int32_t d = 0; d < ranks_[i]; ++d) {
      if (distinguishes_profiles(inputs[i], d)) {
        keys_.push_back({static_cast<int32_t>(i), d});
        key_offsets_.push_back(byte_offset(i, d));
      } else {
        fixed_offsets_.push_back(byte_offset(i, d));
        fixed_values_.push_back(inputs[i].min[0][d]);
      }
    }
  }
  const size_t profiles = static_cast<size_t>(num_profiles_);
  key_ranges_.reserve(profiles * keys_.size());
  for (size_t p = 0; p < profiles; ++p) {
    for (const DimRef& key : keys_) {
      key_ranges_.push_back(
          ranges_[p * total_dims_ + offsets_[static_cast<size_t>(key.input)] + static_cast<size_t>(key.dim)]);
    }
  }
}

ShapeBounds ProfileTable::bounds(int32_t profile, int32_t input) const noexcept {
  ShapeBounds b;
  const size_t i = static_cast<size_t>(input);
  const int32_t rank = ranks_[i];
  const size_t base = static_cast<size_t>(profile) * total_dims_ + offsets_[i];
  b.min.rank = b.opt.rank = b.max.rank = rank;
  for (int32_t d = 0; d < rank; ++d) {
    const Range& r = ranges_[base + static_cast<size_t>(d)];
    b.min[d] = r.min;
    b.opt[d] = opt_[base + static_cast<size_t>(d)];
    b.max[d] = r.min + static_cast<int64_t>(r.span);
  }
  return b;
}

bool ProfileTable::is_distinguishing(int32_t input, int32_t dim) const noexcept {
  for (const DimRef& key : keys_) {
    if (key.input == input && key.dim == dim) return true;
  }
  return false;
}

}  // namespace etrt::profile
