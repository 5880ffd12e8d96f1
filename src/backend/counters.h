#pragma once
// Process-wide execution counters, behind get_option (etrt/options.h kCounter*) and the C ABI (etrt_counter).
//
// Each delegate counts its own executions and switches (DelegateCounts, a member of its state): they happen under
// the delegate's lock, so there is one writer and an increment is a plain load and store, with no locked
// instruction on the execute path. The totals are summed when read, over the live delegates and what destroyed
// ones left behind.

#include <atomic>
#include <cstdint>

namespace etrt::backend {

struct CounterTotals {
  int64_t switches = 0;
  int64_t executions = 0;     // successful executions
  int32_t last_profile = -1;  // the profile the latest successful execution ran on, any delegate; -1 before any
};
CounterTotals counter_totals() noexcept;

class DelegateCounts {
 public:
  DelegateCounts() noexcept;  // joins the live delegates
  ~DelegateCounts();          // leaves them, adding its counts to the destroyed delegates' totals
  DelegateCounts(const DelegateCounts&) = delete;
  DelegateCounts& operator=(const DelegateCounts&) = delete;

  // Only under the delegate's lock.
  void count_execution(int32_t profile) noexcept {
    executions_.store(executions_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    last_profile_.store(profile, std::memory_order_relaxed);
  }
  void count_switch() noexcept {
    switches_.store(switches_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

 private:
  friend CounterTotals counter_totals() noexcept;
  static std::atomic<int32_t> last_profile_;  // of the latest execution of any delegate

  std::atomic<int64_t> executions_{0};
  std::atomic<int64_t> switches_{0};
  DelegateCounts* previous_ = nullptr;  // the live delegates' list, under the registry's lock
  DelegateCounts* next_ = nullptr;
};

}  // namespace etrt::backend
