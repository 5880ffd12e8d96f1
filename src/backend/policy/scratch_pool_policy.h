#pragma once
// Policy (pure C++: no CUDA, no TensorRT, no ExecuTorch, no allocation): how a shared scratch pool (scratch_pool.h,
// the load option shared_scratch, docs/design.md decision 19) is sized as delegates join and leave, when a
// delegate's contexts must be given the pool's memory again, and when an execution must be ordered after the work
// the pool's previous user left on the device. The registry (scratch_pool.cpp) applies these decisions; the device
// calls behind them are device.h's.

#include <cstddef>
#include <cstdint>

namespace etrt::backend {

// What a pool does when its membership changes.
struct ScratchResize {
  size_t bytes = 0;         // what the pool holds afterwards (0: the pool is gone)
  bool reallocate = false;  // the buffer changes: work in the old one is waited for, and the generation moves on
};

// A delegate that needs `need` bytes joins a pool holding `held` bytes for `members` delegates (0: a new pool). The
// pool holds the largest need of its members, not their sum: it grows to a larger need, and keeps its buffer for a
// smaller one.
constexpr ScratchResize resize_on_join(size_t held, size_t members, size_t need) {
  if (members == 0 || need > held) return {need, true};
  return {held, false};
}

// A member leaves; `largest_left` is the largest need of the `left` members that stay. The last one frees the pool;
// otherwise it shrinks to the largest need left, so the pool never holds more than one of its live members needs.
constexpr ScratchResize resize_on_leave(size_t held, size_t left, size_t largest_left) {
  if (left == 0) return {0, true};
  if (largest_left < held) return {largest_left, true};
  return {held, false};
}

// Every reallocation moves the pool to its next generation. A delegate whose contexts were given the memory of
// generation `bound` gives them the current buffer (set_device_memory) before its next enqueue, and drops whatever
// it captured against the old one (CUDA graphs), when the pool is at another generation.
constexpr bool must_rebind(uint64_t bound, uint64_t current) { return bound != current; }

// Whether an execution about to run on `stream` must make that stream wait for the pool's last work, which was issued
// on `last_stream` and may still be running (`last_pending`: recorded, and not known to be finished). Work on one
// stream runs in order, so only another stream waits -- or the per-thread stream (`per_thread`), whose one handle
// names a different stream on every thread.
constexpr bool must_wait_for_last_user(bool last_pending, const void* last_stream, const void* stream,
                                       bool per_thread) {
  return last_pending && (stream != last_stream || per_thread);
}

}  // namespace etrt::backend
