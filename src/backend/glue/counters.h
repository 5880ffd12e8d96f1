#pragma once
// Process-wide execution counters, behind get_option (etrt/options.h kCounter*) and the C ABI (etrt_counter).
//
// Each delegate counts its own executions, switches and copied bytes (DelegateCounts, a member of its state): they
// happen under the delegate's lock, so there is one writer and an increment is a plain load and store, with no locked
// instruction on the execute path. The totals are summed when read, over the live delegates and what destroyed
// ones left behind.

#include <atomic>
#include <cstdint>

namespace etrt::backend {

// The bytes the delegate copied during one execution, by where they moved (etrt/options.h kCounter*Bytes). Each copy
// counts in exactly one field, so their sum is all the delegate copied. Plain fields: one execution fills them on its
// own stack (DeviceCall), under the delegate's lock.
struct CopiedBytes {
  int64_t host_to_device = 0;  // staging a host argument into device memory (device engines)
  int64_t device_to_host = 0;  // copying a staged output (or a staged in-place input) back into host memory
  // Within one memory because an address broke TensorRT's 256-byte rule: host to host on a host engine, device to
  // device on a device engine; in and back.
  int64_t realigned = 0;
  // An updated value copied to where it is kept: an input updated in place into the write-back output ExecuTorch
  // passed, a delegate-owned state's new value into the state. Counted here whichever memories it crosses.
  int64_t write_back = 0;
};

struct CounterTotals {
  int64_t switches = 0;
  int64_t executions = 0;     // successful executions
  int32_t last_profile = -1;  // the profile the latest successful execution ran on, any delegate; -1 before any
  CopiedBytes copied;         // by every execution, successful or not: bytes that moved, moved
};
CounterTotals counter_totals() noexcept;

// The one table of the process-wide counters by name (etrt/options.h kCounter*), which get_option and the C ABI
// (etrt_counter) both read: the counter called `name` into *value, from `totals` (counter_totals()), except
// state_bytes, scratch_bytes and the engine counters, which are read when asked (state_bytes_held,
// scratch_bytes_held, engine_cache_totals). False, with *value
// untouched, for a name that is no counter.
bool read_counter(const CounterTotals& totals, const char* name, int64_t* value);

// The counters' names in the table's order, ", "-separated: for messages that list them.
const char* counter_names() noexcept;

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
  void count_bytes(const CopiedBytes& b) noexcept {
    add(host_to_device_, b.host_to_device);
    add(device_to_host_, b.device_to_host);
    add(realigned_, b.realigned);
    add(write_back_, b.write_back);
  }

 private:
  friend CounterTotals counter_totals() noexcept;
  static std::atomic<int32_t> last_profile_;  // of the latest execution of any delegate

  static void add(std::atomic<int64_t>& counter, int64_t n) noexcept {
    if (n != 0) counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  std::atomic<int64_t> executions_{0};
  std::atomic<int64_t> switches_{0};
  std::atomic<int64_t> host_to_device_{0};
  std::atomic<int64_t> device_to_host_{0};
  std::atomic<int64_t> realigned_{0};
  std::atomic<int64_t> write_back_{0};
  DelegateCounts* previous_ = nullptr;  // the live delegates' list, under the registry's lock
  DelegateCounts* next_ = nullptr;
};

}  // namespace etrt::backend
