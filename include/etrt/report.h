#pragma once
/// @file
/// What etrt's delegates did on the calling thread, without reaching into the module.
///
/// @code
///   etrt::ExecutionReport report;          // starts recording on this thread
///   module.forward(inputs);
///   for (const auto& e : report.entries())  // one entry per delegate execution
///     printf("%s used profile %d%s\n", e.delegate, e.profile, e.switched ? " (switched)" : "");
/// @endcode
///
/// Reports nest like guards: an execution is recorded in every report alive on
/// its thread, so an outer report sees a whole run and an inner one a step.
/// Recording is allocation-free (fixed capacity).

#include <cstddef>
#include <cstdint>

#include "etrt/export.h"
namespace etrt {

struct ExecutionRecord {
  /// "<method>#<n>": the method the delegate belongs to and its load order.
  char delegate[64] = {};
  int32_t profile = -1;       ///< profile the execution ran on
  int32_t num_profiles = 0;   ///< profiles the delegate's engine carries
  bool switched = false;      ///< a profile change happened for this execution
  bool pin_ignored = false;   ///< a pin was ignored by a static one-profile engine
  bool ok = false;            ///< the execution succeeded
  /// Bytes this execution copied, by where they moved (etrt/options.h
  /// kCounter*Bytes says which copy counts where); a failed execution reports
  /// what it copied before it failed.
  int64_t host_to_device_bytes = 0;
  int64_t device_to_host_bytes = 0;
  int64_t realigned_bytes = 0;
  int64_t write_back_bytes = 0;
};

class ETRT_API ExecutionReport {
 public:
  static constexpr size_t kCapacity = 64;

  ExecutionReport() noexcept;
  ~ExecutionReport();
  ExecutionReport(const ExecutionReport&) = delete;
  ExecutionReport& operator=(const ExecutionReport&) = delete;

  /// Records made on this thread while this report was alive, oldest first (an inner report's too).
  struct Entries {
    const ExecutionRecord* data;
    size_t count;
    const ExecutionRecord* begin() const { return data; }
    const ExecutionRecord* end() const { return data + count; }
    size_t size() const { return count; }
    const ExecutionRecord& operator[](size_t i) const { return data[i]; }
  };
  Entries entries() const noexcept { return {records_, count_ < kCapacity ? count_ : kCapacity}; }
  /// Executions recorded, including any beyond kCapacity that were not kept.
  size_t total() const noexcept { return count_; }
  /// Profile changes among the recorded executions.
  size_t switches() const noexcept { return switches_; }
  void clear() noexcept { count_ = 0; switches_ = 0; }

  /// Internal: the delegate calls this after each execution; it records `r`
  /// in every report alive on the calling thread.
  static void record_on_this_thread(const ExecutionRecord& r) noexcept;

 private:
  void record(const ExecutionRecord& r) noexcept;
  ExecutionRecord records_[kCapacity];
  size_t count_ = 0;
  size_t switches_ = 0;
  ExecutionReport* previous_;
};

/// The message of the most recent refusal by an etrt delegate on this thread
/// (empty if none). ExecuTorch returns only an error code from forward(); this
/// is the explanation, which is also logged with ET_LOG.
///
/// Each delegate load and execution clears it when it starts, so after a
/// failed forward() it explains that failure -- if an etrt delegate ran. When
/// ExecuTorch refuses the call before any etrt delegate runs (a wrong input
/// count or type, say), it still holds an older refusal: call
/// clear_last_error() before the call and check has_last_error() after it.
///
/// @code
///   etrt::clear_last_error();
///   auto result = module.forward(inputs);
///   if (!result.ok())
///     printf("%s\n", etrt::has_last_error() ? etrt::last_error_message()
///                                            : executorch::runtime::to_string(result.error()));
/// @endcode
ETRT_API const char* last_error_message() noexcept;
/// Empties this thread's last error message.
ETRT_API void clear_last_error() noexcept;
/// True when an etrt delegate refused something on this thread since the last clear.
ETRT_API bool has_last_error() noexcept;

}  // namespace etrt
