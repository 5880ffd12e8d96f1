#pragma once
// The lock that serializes one delegate's executions (Delegate::lock_). Uncontended, taking and releasing it
// is one atomic exchange each, inline; std::mutex does the same two atomic operations behind pthread's out-of-line
// type dispatch, several times the instructions on every forward(). Contended, a waiter sleeps on a
// condition variable, never spins: an execution may hold the lock while it waits for the device.
//
// The state word is Drepper's ("Futexes Are Tricky", mutex 2), with a std::mutex/std::condition_variable pair in
// place of the futex: 0 free, 1 held, 2 held and maybe waited for. A waiter marks the word 2 before it sleeps, so
// the holder's unlock sees 2 and wakes one; the waiter's test-and-sleep happens under `mutex_`, which the waker
// takes before notifying, so no wakeup is lost. Meets the standard's Lockable requirements (std::lock_guard).

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace etrt::backend {

class DelegateLock {
 public:
  DelegateLock() = default;
  DelegateLock(const DelegateLock&) = delete;
  DelegateLock& operator=(const DelegateLock&) = delete;

  void lock() {
    if (state_.exchange(kHeld, std::memory_order_acquire) != kFree) lock_contended();
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kWaited) wake_one();
  }

 private:
  static constexpr int kFree = 0, kHeld = 1, kWaited = 2;

  void lock_contended() {
    std::unique_lock<std::mutex> guard(mutex_);
    // Taken with kWaited, not kHeld: other waiters may still sleep, and our unlock must wake them.
    while (state_.exchange(kWaited, std::memory_order_acquire) != kFree) wakeup_.wait(guard);
  }
  void wake_one() {
    { const std::lock_guard<std::mutex> guard(mutex_); }  // a waiter between its test and its wait holds mutex_
    wakeup_.notify_one();
  }

  std::atomic<int> state_{kFree};
  std::mutex mutex_;
  std::condition_variable wakeup_;
};

}  // namespace etrt::backend
