#include "profile/profile_table.h"

#include <cinttypes>
#include <cstddef>
#include <utility>

namespace etrt::profile {

namespace {

const char* kind_name(int which) { return which == 0 ? "min" : which == 1 ? "opt" : "max"; }

}  // namespace

Error ProfileTable::build(int32_t num_profiles, Span<const InputBounds> inputs, ProfileTable* out, Diagnostic& why) {
  if (num_profiles < 1) {
    return fail(why, Error::InvalidArgument,
                "the engine reports %" PRId32
                " optimization profiles; an engine has at least one. "
                "Rebuild or re-export the engine.",
                num_profiles);
  }
  const size_t profiles = static_cast<size_t>(num_profiles);
  ProfileTable table;
  table.num_profiles_ = num_profiles;

  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputBounds& in = inputs[i];
    const char* name = in.name.c_str();
    if (in.min.size() != profiles || in.opt.size() != profiles || in.max.size() != profiles) {
      return fail(why, Error::InvalidArgument,
                  "input '%s' (input %zu) has bounds for %zu/%zu/%zu (min/opt/max) profiles, "
                  "but the engine has %" PRId32 " profiles.",
                  name, i, in.min.size(), in.opt.size(), in.max.size(), num_profiles);
    }
    const int32_t rank = in.min[0].rank;
    if (rank < 0 || rank > kMaxRank) {
      return fail(why, Error::InvalidArgument,
                  "input '%s' (input %zu) has rank %" PRId32 " in profile 0; etrt supports ranks 0..%" PRId32
                  " (TensorRT reports rank -1 for a shape it cannot give).",
                  name, i, rank, kMaxRank);
    }
    for (size_t p = 0; p < profiles; ++p) {
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
                      "(min %" PRId64 ", opt %" PRId64 ", max %" PRId64
                      "); profile bounds must be concrete sizes >= 0.",
                      name, i, d, p, lo, mid, hi);
        }
        if (lo > mid || mid > hi) {
          return fail(why, Error::InvalidArgument,
                      "input '%s' (input %zu) dimension %" PRId32 " in profile %zu has min %" PRId64 ", opt %" PRId64
                      ", max %" PRId64 "; they must satisfy min <= opt <= max.",
                      name, i, d, p, lo, mid, hi);
        }
      }
    }
    table.names_.push_back(in.name);
    table.ranks_.push_back(rank);
    table.offsets_.push_back(table.total_dims_);
    table.total_dims_ += static_cast<size_t>(rank);
  }

  // Flatten: profile-major, so validating one profile reads one slice.
  table.ranges_.reserve(profiles * table.total_dims_);
  table.opt_.reserve(profiles * table.total_dims_);
  for (size_t p = 0; p < profiles; ++p) {
    for (const InputBounds& in : inputs) {
      for (int32_t d = 0; d < in.min[p].rank; ++d) {
        table.ranges_.push_back({in.min[p][d], static_cast<uint64_t>(in.max[p][d] - in.min[p][d])});
        table.opt_.push_back(in.opt[p][d]);
      }
    }
  }

  // A dimension distinguishes profiles when some profile leaves it free or
  // the profiles disagree on it; a dimension fixed to one value everywhere
  // cannot, and is left to validation.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputBounds& in = inputs[i];
    for (int32_t d = 0; d < table.ranks_[i]; ++d) {
      bool distinguishing = false;
      for (size_t p = 0; p < profiles && !distinguishing; ++p) {
        distinguishing = in.min[p][d] != in.max[p][d] || in.min[p][d] != in.min[0][d];
      }
      if (distinguishing) table.keys_.push_back({static_cast<int32_t>(i), d});
    }
  }
  const auto byte_offset = [](size_t input, int32_t dim) {
    return input * sizeof(Shape) + offsetof(Shape, d) + static_cast<size_t>(dim) * sizeof(int64_t);
  };
  for (const DimRef& key : table.keys_) {
    table.key_offsets_.push_back(byte_offset(static_cast<size_t>(key.input), key.dim));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (int32_t d = 0; d < table.ranks_[i]; ++d) {
      if (table.is_distinguishing(static_cast<int32_t>(i), d)) continue;
      table.fixed_offsets_.push_back(byte_offset(i, d));
      table.fixed_values_.push_back(inputs[i].min[0][d]);
    }
  }
  table.key_ranges_.reserve(profiles * table.keys_.size());
  for (size_t p = 0; p < profiles; ++p) {
    for (const DimRef& key : table.keys_) {
      table.key_ranges_.push_back(table.ranges_[p * table.total_dims_ + table.offsets_[static_cast<size_t>(key.input)] +
                                                static_cast<size_t>(key.dim)]);
    }
  }

  table.label_ = std::move(out->label_);  // a label set before build() survives it
  *out = std::move(table);
  return Error::Ok;
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
