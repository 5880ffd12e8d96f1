#pragma once
/// @file
/// Execution-scoped selection of a TensorRT optimization profile.
///
/// A TensorRT engine can carry several optimization profiles: one set of
/// weights, several kernel tunings, each valid over its own range of input
/// shapes. etrt lets the code that calls `Module::forward()` say which profile
/// the TensorRT delegates of that call should use, without reaching into the
/// module:
///
/// @code
///   { etrt::OptimizationProfileGuard pin(kPrefill); module.forward(prompt); }
///   { etrt::OptimizationProfileGuard pin(kDecode);
///     for (...) module.forward(token); }
///   { auto any = etrt::OptimizationProfileGuard::automatic();
///     module.forward(inputs); }          // input shapes choose
/// @endcode
///
/// A guard only records a request for the current thread. It never calls
/// TensorRT: each TensorRT delegate reads the request when it executes and
/// moves to the profile itself, on its own stream: it picks the context bound
/// to that profile, or switches its one context (the load option
/// kOptionProfileStrategy, etrt/options.h). Guards nest; leaving
/// a scope restores the request that was in force when the guard was made.
/// Create the guard on the thread that calls `forward()`/`execute()`.

#include <cstdint>

#include "etrt/export.h"
namespace etrt {

/// How an automatic request chooses among the profiles whose bounds contain
/// every input shape.
enum class AutoPolicy : uint8_t {
  /// Keep the profile the delegate used last if every input still fits it;
  /// otherwise take the lowest-index profile that fits. Fewest switches, but
  /// history-dependent where profiles overlap. This is the default, and what
  /// Torch-TensorRT's standard runtime does.
  kStickyFirstFit = 0,
  /// Take the lowest-index profile that fits, on every call. History-free:
  /// the same shapes always give the same profile.
  kFirstFit = 1,
};

/// What the current thread asks the TensorRT delegates to do.
struct ProfileRequest {
  enum class Kind : uint8_t {
    kDefault = 0,  ///< No guard in force: the delegate's load-time default (profile 0 unless configured).
    kPinned = 1,   ///< Use exactly profile `index`.
    kAuto = 2,     ///< Choose from the input shapes with `policy`.
  };
  Kind kind = Kind::kDefault;
  int32_t index = 0;
  AutoPolicy policy = AutoPolicy::kStickyFirstFit;

  static constexpr ProfileRequest default_request() { return {}; }
  static constexpr ProfileRequest pinned(int32_t i) { return {Kind::kPinned, i, AutoPolicy::kStickyFirstFit}; }
  static constexpr ProfileRequest automatic(AutoPolicy p) { return {Kind::kAuto, 0, p}; }

  friend constexpr bool operator==(const ProfileRequest& a, const ProfileRequest& b) {
    return a.kind == b.kind && (a.kind != Kind::kPinned || a.index == b.index) &&
           (a.kind != Kind::kAuto || a.policy == b.policy);
  }
  friend constexpr bool operator!=(const ProfileRequest& a, const ProfileRequest& b) { return !(a == b); }
};

/// The request in force on the calling thread: the innermost live guard's, or
/// `ProfileRequest::default_request()` when none is.
ETRT_API ProfileRequest current_profile_request() noexcept;

/// RAII pin or auto request for the current thread. Non-copyable and
/// non-movable, like a stream guard: its lifetime is its scope.
class ETRT_API OptimizationProfileGuard {
 public:
  /// Pin profile `profile_index` for executions on this thread while the
  /// guard lives. The index is checked by each delegate when it executes: an
  /// index a delegate does not have makes that execution fail with
  /// `Error::InvalidArgument`, naming the delegate and its profile count.
  explicit OptimizationProfileGuard(int32_t profile_index) noexcept;

  /// Ask for shape-driven selection with `policy` while the guard lives.
  /// C++17 guaranteed elision makes `auto g = OptimizationProfileGuard::automatic();` work.
  static OptimizationProfileGuard automatic(AutoPolicy policy = AutoPolicy::kStickyFirstFit) noexcept;

  /// Restores the request that was in force when this guard was created.
  /// Guards on one thread must end in reverse order of creation, which scopes
  /// guarantee (do not allocate guards with `new`).
  ~OptimizationProfileGuard();

  /// The request this guard installed.
  ProfileRequest request() const noexcept { return installed_; }

  OptimizationProfileGuard(const OptimizationProfileGuard&) = delete;
  OptimizationProfileGuard& operator=(const OptimizationProfileGuard&) = delete;
  OptimizationProfileGuard(OptimizationProfileGuard&&) = delete;
  OptimizationProfileGuard& operator=(OptimizationProfileGuard&&) = delete;

  /// Only int32_t selects a profile: `OptimizationProfileGuard(true)`,
  /// a double or a size_t is a compile error rather than a silent conversion.
  template <typename T>
  OptimizationProfileGuard(T) = delete;

 private:
  explicit OptimizationProfileGuard(ProfileRequest request) noexcept;
  ProfileRequest installed_;
  ProfileRequest previous_;
};

}  // namespace etrt
