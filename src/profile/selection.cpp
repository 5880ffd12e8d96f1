#include "profile/selection.h"

#include <cinttypes>
#include <cstring>

#include "common/compiler.h"

// Refusals are rare and long; keeping them out of line (ETRT_COLD, ETRT_NOINLINE) keeps the accepting path small
// enough to stay in the instruction cache of a decode loop.

namespace etrt::profile {

namespace {

using Kind = ProfileRequest::Kind;

// value in [min, min + span]. Unsigned wrap-around folds both comparisons into
// one and stays defined for every int64 value (bounds are >= 0 by build()).
constexpr bool in_range(int64_t value, int64_t min, uint64_t span) {
  return static_cast<uint64_t>(value) - static_cast<uint64_t>(min) <= span;
}

// ---- message pieces (cold) ----

void begin(const ProfileTable& table, Diagnostic& why) {
  why.clear();
  if (!table.label().empty()) why.append("%s: ", table.label().c_str());
}

// "[1, 2048]"; a rank outside [0, kMaxRank] is printed, never dereferenced.
void append_shape(Diagnostic& why, const Shape& shape) {
  if (shape.rank < 0 || shape.rank > kMaxRank) {
    why.append("<invalid rank %" PRId32 ">", shape.rank);
    return;
  }
  why.append("[");
  for (int32_t d = 0; d < shape.rank; ++d) why.append("%s%" PRId64, d == 0 ? "" : ", ", shape[d]);
  why.append("]");
}

// One dimension's accepted values: "7" when fixed, "1..2048" when a range.
void append_range(Diagnostic& why, int64_t min, int64_t max) {
  if (min == max) {
    why.append("%" PRId64, min);
  } else {
    why.append("%" PRId64 "..%" PRId64, min, max);
  }
}

// "[1, 1..2048]": input `input`'s bounds in `profile`.
void append_bounds(Diagnostic& why, const ProfileTable& table, int32_t profile, int32_t input) {
  const ShapeBounds b = table.bounds(profile, input);
  why.append("[");
  for (int32_t d = 0; d < b.min.rank; ++d) {
    why.append("%s", d == 0 ? "" : ", ");
    append_range(why, b.min[d], b.max[d]);
  }
  why.append("]");
}

// Every dimension of every input inside `profile` (structure already checked).
bool fits_fully(const ProfileTable& table, int32_t profile, Span<const Shape> shapes) {
  for (int32_t i = 0; i < table.num_inputs(); ++i) {
    const ShapeBounds b = table.bounds(profile, i);
    for (int32_t d = 0; d < b.min.rank; ++d) {
      const int64_t v = shapes[static_cast<size_t>(i)][d];
      if (v < b.min[d] || v > b.max[d]) return false;
    }
  }
  return true;
}

void append_valid_indices(Diagnostic& why, int32_t num_profiles) {
  if (num_profiles == 1) {
    why.append("1 optimization profile (valid index: 0)");
  } else {
    why.append("%" PRId32 " optimization profiles (valid indices: 0..%" PRId32 ")", num_profiles, num_profiles - 1);
  }
}

// ---- refusals (cold); each returns InvalidArgument so callers can `return refuse_...` ----

ETRT_COLD ETRT_NOINLINE Error refuse_empty(const ProfileTable& table, Diagnostic& why) {
  begin(table, why);
  why.append(
      "the profile table is empty (ProfileTable::build() was not called or failed), so no profile can "
      "be chosen. Build the table from the engine at init() and refuse to load if that fails.");
  return Error::InvalidArgument;
}

ETRT_COLD ETRT_NOINLINE Error refuse_pin_out_of_range(const ProfileTable& table, int32_t index, Diagnostic& why) {
  begin(table, why);
  why.append("optimization profile %" PRId32 " was pinned (etrt::OptimizationProfileGuard(%" PRId32
             ")), but this engine has ",
             index, index);
  append_valid_indices(why, table.num_profiles());
  why.append(
      ". Pin a valid index, or use etrt::OptimizationProfileGuard::automatic() to choose from the input "
      "shapes.");
  return Error::InvalidArgument;
}

ETRT_COLD ETRT_NOINLINE Error refuse_pin_on_dynamic_single(const ProfileTable& table, int32_t index, Diagnostic& why) {
  const DimRef key = table.distinguishing_dims()[0];
  const ShapeBounds b = table.bounds(0, key.input);
  begin(table, why);
  why.append("optimization profile %" PRId32 " was pinned (etrt::OptimizationProfileGuard(%" PRId32
             ")), but this engine has a single optimization profile and dynamic inputs (input '%s' dimension %" PRId32
             " accepts ",
             index, index, table.input_name(key.input).c_str(), key.dim);
  append_range(why, b.min[key.dim], b.max[key.dim]);
  why.append("), so it cannot honor profile %" PRId32
             " and will not silently run profile 0 in its place. Pin profile 0 around the calls that reach this "
             "delegate, or rebuild its engine with the same optimization profiles as the others (profile %" PRId32
             " included).",
             index, index);
  return Error::InvalidArgument;
}

ETRT_COLD ETRT_NOINLINE Error refuse_input_count(const ProfileTable& table, Span<const Shape> shapes, Diagnostic& why) {
  begin(table, why);
  why.append("got %zu input shapes, but the engine has %" PRId32 " inputs (", shapes.size(), table.num_inputs());
  for (int32_t i = 0; i < table.num_inputs(); ++i) {
    why.append("%s'%s'", i == 0 ? "" : ", ", table.input_name(i).c_str());
  }
  why.append("). Pass exactly one tensor per engine input, in engine order.");
  return Error::InvalidArgument;
}

ETRT_COLD ETRT_NOINLINE Error refuse_rank(const ProfileTable& table, int32_t input, const Shape& shape,
                                          Diagnostic& why) {
  begin(table, why);
  why.append("input '%s' (input %" PRId32 ") has rank %" PRId32 " (shape ", table.input_name(input).c_str(), input,
             shape.rank);
  append_shape(why, shape);
  why.append("), but the engine expects rank %" PRId32 " in every profile (profile 0 accepts ", table.rank(input));
  append_bounds(why, table, 0, input);
  why.append("). Reshape the input to rank %" PRId32 ".", table.rank(input));
  return Error::InvalidArgument;
}

ETRT_COLD ETRT_NOINLINE Error refuse_no_fit(const ProfileTable& table, AutoPolicy policy, int32_t active_profile,
                                            Span<const Shape> shapes, Diagnostic& why) {
  begin(table, why);
  why.append("no optimization profile accepts these input shapes (automatic selection, policy %s", policy_name(policy));
  if (policy == AutoPolicy::kStickyFirstFit && active_profile >= 0 && active_profile < table.num_profiles()) {
    why.append(", active profile %" PRId32, active_profile);
  }
  why.append("; a..b is an inclusive range).\n  inputs:");
  for (int32_t i = 0; i < table.num_inputs(); ++i) {
    why.append("%s %s ", i == 0 ? "" : ",", table.input_name(i).c_str());
    append_shape(why, shapes[static_cast<size_t>(i)]);
  }
  for (int32_t p = 0; p < table.num_profiles(); ++p) {
    why.append("\n  profile %" PRId32 ":", p);
    for (int32_t i = 0; i < table.num_inputs(); ++i) {
      why.append("%s %s ", i == 0 ? "" : ",", table.input_name(i).c_str());
      append_bounds(why, table, p, i);
    }
  }
  why.append(
      "\nReshape the inputs to fit one profile, or pin a profile with etrt::OptimizationProfileGuard(index) "
      "to be told which dimension it rejects.");
  return Error::InvalidArgument;
}

ETRT_COLD ETRT_NOINLINE Error refuse_profile_index(const ProfileTable& table, int32_t profile, Diagnostic& why) {
  begin(table, why);
  why.append("cannot validate inputs against optimization profile %" PRId32 ": this engine has ", profile);
  append_valid_indices(why, table.num_profiles());
  why.append(". Choose the profile with choose_profile() first.");
  return Error::InvalidArgument;
}

ETRT_COLD ETRT_NOINLINE Error refuse_dim(const ProfileTable& table, int32_t profile, int32_t input, int32_t dim,
                                         Span<const Shape> shapes, Diagnostic& why) {
  const ShapeBounds b = table.bounds(profile, input);
  const char* name = table.input_name(input).c_str();
  begin(table, why);
  why.append("input '%s' (input %" PRId32 ") dimension %" PRId32 " is %" PRId64 ", outside [%" PRId64 ", %" PRId64
             "] in optimization profile %" PRId32 " (shape ",
             name, input, dim, shapes[static_cast<size_t>(input)][dim], b.min[dim], b.max[dim], profile);
  append_shape(why, shapes[static_cast<size_t>(input)]);
  why.append("; profile %" PRId32 " accepts %s ", profile, name);
  append_bounds(why, table, profile, input);
  why.append("). ");
  for (int32_t q = 0; q < table.num_profiles(); ++q) {
    if (q != profile && fits_fully(table, q, shapes)) {
      why.append("Profile %" PRId32 " accepts these input shapes: pin it with etrt::OptimizationProfileGuard(%" PRId32
                 "), or let etrt::OptimizationProfileGuard::automatic() choose.",
                 q, q);
      return Error::InvalidArgument;
    }
  }
  why.append("No profile of this engine accepts these input shapes; reshape '%s' so dimension %" PRId32
             " fits a profile (",
             name, dim);
  for (int32_t q = 0; q < table.num_profiles(); ++q) {
    const ShapeBounds qb = table.bounds(q, input);
    why.append("%sprofile %" PRId32 ": ", q == 0 ? "" : ", ", q);
    append_range(why, qb.min[dim], qb.max[dim]);
  }
  why.append(").");
  return Error::InvalidArgument;
}

// ---- the accepting path ----

// One shape per input, each of the engine's rank. Everything after this may
// index shapes[i][d] for d < rank(i).
inline Error check_structure(const ProfileTable& table, Span<const Shape> shapes, Diagnostic& why) {
  const int32_t num_inputs = table.num_inputs();
  if (shapes.size() != static_cast<size_t>(num_inputs)) return refuse_input_count(table, shapes, why);
  for (int32_t i = 0; i < num_inputs; ++i) {
    if (shapes[static_cast<size_t>(i)].rank != table.rank(i)) {
      return refuse_rank(table, i, shapes[static_cast<size_t>(i)], why);
    }
  }
  return Error::Ok;
}

// shapes[input].d[dim] for a precomputed byte offset (ranks already checked).
inline int64_t value_at(const unsigned char* shapes, size_t offset) {
  int64_t value;
  std::memcpy(&value, shapes + offset, sizeof(value));
  return value;
}

}  // namespace

// The hot paths, with access to ProfileTable's flat arrays.
struct SelectionAccess {
  // `profile`'s slice of per-dimension ranges, in input then dimension order.
  static const ProfileTable::Range* ranges(const ProfileTable& table, int32_t profile) {
    return table.ranges_.data() + static_cast<size_t>(profile) * table.total_dims_;
  }

  // Every distinguishing dimension inside `profile`.
  static bool keys_fit(const ProfileTable& table, int32_t profile, const unsigned char* shapes) {
    const size_t num_keys = table.key_offsets_.size();
    const size_t* offsets = table.key_offsets_.data();
    const ProfileTable::Range* r = table.key_ranges_.data() + static_cast<size_t>(profile) * num_keys;
    for (size_t k = 0; k < num_keys; ++k) {
      if (!in_range(value_at(shapes, offsets[k]), r[k].min, r[k].span)) return false;
    }
    return true;
  }

  // Every non-distinguishing dimension equal to its one value.
  static bool fixed_dims_fit(const ProfileTable& table, const unsigned char* shapes) {
    const size_t n = table.fixed_offsets_.size();
    const size_t* offsets = table.fixed_offsets_.data();
    const int64_t* values = table.fixed_values_.data();
    for (size_t k = 0; k < n; ++k) {
      if (value_at(shapes, offsets[k]) != values[k]) return false;
    }
    return true;
  }

  // Every dimension of every input inside `profile` (structure already checked).
  static bool all_dims_fit(const ProfileTable& table, int32_t profile, Span<const Shape> shapes) {
    const ProfileTable::Range* r = ranges(table, profile);
    for (const Shape& shape : shapes) {
      for (int32_t d = 0; d < shape.rank; ++d) {
        if (!in_range(shape.d[d], r[d].min, r[d].span)) return false;
      }
      r += shape.rank;
    }
    return true;
  }

  // choose_profile(); `*by_shape` tells whether the keys placed the shapes in
  // the chosen profile (automatic selection over several profiles).
  static Error choose(const ProfileTable& table, const ProfileRequest& request, int32_t active_profile,
                      Span<const Shape> input_shapes, Choice* chosen, bool* by_shape, Diagnostic& why) {
    const int32_t num_profiles = table.num_profiles_;
    if (num_profiles < 1) return refuse_empty(table, why);

    Choice choice;
    if (request.kind == Kind::kPinned) {
      const int32_t index = request.index;
      if (index < 0 || (num_profiles > 1 && index >= num_profiles)) return refuse_pin_out_of_range(table, index, why);
      if (num_profiles == 1 && index > 0) {
        // A one-profile delegate beside multi-profile ones (docs/design.md, decision 4):
        // if no shape could differ between regimes, running profile 0 is
        // exactly what profile N would have been; otherwise it would silently
        // run the wrong regime, so refuse.
        if (!table.is_static()) return refuse_pin_on_dynamic_single(table, index, why);
        choice.pin_ignored = true;
      } else {
        choice.profile = index;
      }
    }
    if (const Error structure = check_structure(table, input_shapes, why); structure != Error::Ok) return structure;

    *by_shape = request.kind == Kind::kAuto && num_profiles > 1;
    if (*by_shape) {
      const unsigned char* shapes = reinterpret_cast<const unsigned char*>(input_shapes.data());
      if (request.policy == AutoPolicy::kStickyFirstFit && active_profile >= 0 && active_profile < num_profiles &&
          keys_fit(table, active_profile, shapes)) {
        choice.profile = active_profile;
      } else {
        int32_t p = 0;
        while (p < num_profiles && !keys_fit(table, p, shapes)) ++p;
        if (p == num_profiles) return refuse_no_fit(table, request.policy, active_profile, input_shapes, why);
        choice.profile = p;
      }
    }
    *chosen = choice;
    return Error::Ok;
  }
};

const char* policy_name(AutoPolicy policy) noexcept {
  switch (policy) {
    case AutoPolicy::kStickyFirstFit:
      return "sticky-first-fit";
    case AutoPolicy::kFirstFit:
      return "first-fit";
  }
  return "unknown";
}

Error choose_profile(const ProfileTable& table, const ProfileRequest& request, int32_t active_profile,
                     Span<const Shape> input_shapes, Choice* chosen, Diagnostic& why) noexcept {
  bool by_shape = false;
  return SelectionAccess::choose(table, request, active_profile, input_shapes, chosen, &by_shape, why);
}

Error validate_shapes(const ProfileTable& table, int32_t profile, Span<const Shape> input_shapes,
                      Diagnostic& why) noexcept {
  if (table.num_profiles() < 1) return refuse_empty(table, why);
  if (profile < 0 || profile >= table.num_profiles()) return refuse_profile_index(table, profile, why);
  const int32_t num_inputs = table.num_inputs();
  if (input_shapes.size() != static_cast<size_t>(num_inputs)) return refuse_input_count(table, input_shapes, why);
  // Ranks and dimensions in one pass over the inputs: a second loop just for
  // ranks would cost about as much as the dimension checks.
  const auto* r = SelectionAccess::ranges(table, profile);
  for (int32_t i = 0; i < num_inputs; ++i) {
    const Shape& shape = input_shapes[static_cast<size_t>(i)];
    const int32_t rank = table.rank(i);
    if (shape.rank != rank) return refuse_rank(table, i, shape, why);
    for (int32_t d = 0; d < rank; ++d) {
      if (!in_range(shape.d[d], r[d].min, r[d].span)) return refuse_dim(table, profile, i, d, input_shapes, why);
    }
    r += rank;
  }
  return Error::Ok;
}

Error choose_and_validate(const ProfileTable& table, const ProfileRequest& request, int32_t active_profile,
                          Span<const Shape> input_shapes, Choice* chosen, Diagnostic& why) noexcept {
  Choice choice;
  bool by_shape = false;
  const Error chose = SelectionAccess::choose(table, request, active_profile, input_shapes, &choice, &by_shape, why);
  if (chose != Error::Ok) return chose;
  // The structure is checked, and where the keys chose the profile they are
  // known to fit it: only what is left needs looking at.
  const bool fits =
      by_shape ? SelectionAccess::fixed_dims_fit(table, reinterpret_cast<const unsigned char*>(input_shapes.data()))
               : SelectionAccess::all_dims_fit(table, choice.profile, input_shapes);
  // On a misfit, validate_shapes() writes exactly the message the two-call
  // path would have written.
  if (!fits) {
    const Error validated = validate_shapes(table, choice.profile, input_shapes, why);
    if (validated != Error::Ok) return validated;
  }
  *chosen = choice;
  return Error::Ok;
}

}  // namespace etrt::profile
