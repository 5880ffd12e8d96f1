// DelegateLock (src/backend/execute/delegate_lock.h), the lock that serializes one delegate's executions: mutual
// exclusion under contention, waiters that sleep while the holder takes its time, and every waiter woken in the end.
// Built into the stress test, so the ThreadSanitizer build checks it too.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/execute/delegate_lock.h"

namespace {

using etrt::backend::DelegateLock;

TEST(DelegateLock, ThreadsIncrementingUnderItLoseNoIncrement) {
  DelegateLock lock;
  int64_t counter = 0;  // plain: only the lock orders the threads' accesses
  constexpr int kThreads = 8, kIncrements = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        const std::lock_guard<DelegateLock> guard(lock);
        ++counter;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIncrements);
}

TEST(DelegateLock, WaitersSleepWhileTheHolderWaitsAndAllGetTheirTurn) {
  DelegateLock lock;
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  std::atomic<int> done{0};
  lock.lock();
  std::vector<std::thread> waiters;
  for (int t = 0; t < 6; ++t)
    waiters.emplace_back([&] {
      const std::lock_guard<DelegateLock> guard(lock);
      const int now = inside.fetch_add(1) + 1;
      int seen = most_inside.load();
      while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a holder that waits, as for the device
      inside.fetch_sub(1);
      done.fetch_add(1);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the waiters reach the lock and sleep
  EXPECT_EQ(done.load(), 0);
  lock.unlock();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(done.load(), 6);
  EXPECT_EQ(most_inside.load(), 1);
  // Free again: an uncontended lock and unlock still work after the contended ones.
  lock.lock();
  lock.unlock();
}

}  // namespace
