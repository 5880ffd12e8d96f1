#pragma once
// The per-execution profile policy: which profile an execution runs
// (choose_profile) and whether its inputs fit that profile (validate_shapes).
//
// Both are pure functions of their arguments: no allocation, no exceptions,
// no TensorRT, so the backend can call them between reading the thread's
// request and touching the execution context (docs/design.md, decision 6), and tests
// can cover them exhaustively without a GPU. docs/profile-selection.md states
// the rules for users.

#include <cstdint>

#include "common/error.h"
#include "common/shape.h"
#include "etrt/profile_guard.h"
#include "profile/profile_table.h"

namespace etrt::profile {

/// What choose_profile() decided.
struct Choice {
  /// The profile to validate against and run, in [0, num_profiles()).
  int32_t profile = 0;
  /// True when a pin to profile N > 0 reached a one-profile engine whose
  /// inputs are all static: profile 0 runs and the pin is ignored (docs/design.md,
  /// decision 4). The backend may log it; it is not an error.
  bool pin_ignored = false;
};

/// Chooses the profile for one execution. `active_profile` is the profile the
/// execution context is on now (any value outside [0, num_profiles()) counts
/// as "none"); `input_shapes` holds one shape per engine input, in engine
/// order. Rules, checked in this order:
///
///  * pinned index < 0, or >= num_profiles() on a multi-profile table: refused;
///  * pinned N > 0 on a one-profile table: profile 0 with `pin_ignored` if the
///    table is_static(), otherwise refused (the engine cannot honor N);
///  * a wrong number of shapes, or a rank that differs from the engine's: refused;
///  * kDefault -> 0 (map a load-time "auto by default" option to kAuto before
///    calling); kPinned(i) -> i;
///  * kAuto on a one-profile table -> 0;
///  * kAuto(kStickyFirstFit) -> `active_profile` if every input fits it, else
///    the lowest index that fits; kAuto(kFirstFit) -> the lowest index that fits.
///    "Fits" compares only distinguishing dimensions; validate_shapes() checks
///    the rest. No fit: refused, listing every profile's bounds.
///
/// Returns Ok and sets `*chosen` (required), or returns InvalidArgument and
/// leaves a message in `why` naming the table's label, the inputs,
/// dimensions, values and bounds involved, and what to do. `*chosen` is
/// untouched on refusal; `why` is untouched on success.
[[nodiscard]] Error choose_profile(const ProfileTable& table, const ProfileRequest& request, int32_t active_profile,
                                   Span<const Shape> input_shapes, Choice* chosen, Diagnostic& why) noexcept;

/// Checks every input's rank and every dimension against `profile`'s
/// [min, max]. Returns InvalidArgument for an out-of-range `profile`, a wrong
/// number of shapes, a rank mismatch or a dimension outside its range, with a
/// message in `why` naming the input, dimension, value, profile and its
/// bounds, and what to do: a profile that would accept the shapes if there is
/// one, otherwise the ranges that would. `why` is untouched on success.
[[nodiscard]] Error validate_shapes(const ProfileTable& table, int32_t profile, Span<const Shape> input_shapes,
                                    Diagnostic& why) noexcept;

/// choose_profile() followed by validate_shapes() on the chosen profile, in
/// one call: the same result, `*chosen` and message as the two calls, with
/// less work (the inputs' structure is checked once, and dimensions the
/// selection already compared are not compared again). This is the call an
/// execute() makes.
[[nodiscard]] Error choose_and_validate(const ProfileTable& table, const ProfileRequest& request,
                                        int32_t active_profile, Span<const Shape> input_shapes, Choice* chosen,
                                        Diagnostic& why) noexcept;

/// "sticky-first-fit" or "first-fit", as the docs and messages spell them.
const char* policy_name(AutoPolicy policy) noexcept;

}  // namespace etrt::profile
