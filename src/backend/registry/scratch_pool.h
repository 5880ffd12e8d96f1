#pragma once
// One scratch buffer for every delegate of a program and device (the load option shared_scratch, docs/design.md
// decision 19). TensorRT runs each execution context in scratch memory ("device memory") it needs only while an
// enqueue runs; delegates of one method run one after another, so a program of N delegates needs the largest of
// their needs, not the sum. Delegates loaded with shared_scratch create their contexts without memory and draw it
// from the pool of their program, device and memory kind, which holds the largest need of its live members
// (scratch_pool_policy.h): it grows when a delegate with a larger need joins, shrinks when the largest leaves and is
// freed with its last member.
//
// The scope is the load, as for delegate-owned state (delegate.h, load_scope()): the method allocator ExecuTorch hands
// every delegate of a Module's methods. The methods of one Module share a pool; two Modules -- two loads of one file,
// or sessions over one loaded Program -- hold one each, whether or not the program has a named-data table.
//
// Ordering. An execution of a member holds the pool's lock from after its wait for its own previous work (decision 6,
// step 2) until its in-flight event is recorded (DeviceCall::end), so no two members ever issue work into the buffer
// at once. Work a member left on the device is ordered, never overlapped: the pool remembers the last execution's
// event and stream (ScratchTurn), and an execution on another stream -- another thread's Module, a caller's stream
// that differs -- makes its stream wait for that event first (on the device; the host does not wait). Host engines
// compute before their enqueue returns, so for them the lock is the whole ordering. A resize waits on the host for
// the last work before the old buffer goes; each member gives its contexts the new buffer (set_device_memory) and
// drops its CUDA graphs before its next enqueue (the pool's generation tells it).
//
// Locks. Executions take their delegate's lock, then the pool's; load and destroy take the registry's mutex, then
// the pool's lock. Nothing takes a delegate lock while holding either, and an execution never takes the registry's
// mutex, so there is no cycle: two Modules on two threads take their own delegate locks and then queue on the pool.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/device/device.h"
#include "backend/execute/delegate_lock.h"
#include "common/error.h"
#include "engine/engine.h"

namespace etrt::backend {

// What a delegate asks of the pool at load.
struct ScratchSpec {
  const void* scope = nullptr;  // the load's (load_scope())
  engine::MemoryKind kind = engine::MemoryKind::kHost;
  int device_id = 0;          // device engines: the blob's device, current while the delegate joins
  size_t need = 0;            // Engine::device_memory_size()
  const char* delegate = "";  // its name, for log lines
};

class ScratchPool {
 public:
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // Lockable: a member's execution holds it from its wait for the last user to the record of its own event.
  void lock() { lock_.lock(); }
  void unlock() { lock_.unlock(); }

  // Under the lock.
  void* data() const { return buffer_.data(); }
  size_t size() const { return buffer_.size(); }
  uint64_t generation() const { return generation_; }  // 1 for the first buffer; every reallocation adds one
  ScratchTurn& turn() { return turn_; }                // the last work issued in the buffer

 private:
  friend class ScratchRegistry;
  struct Member {
    const DeviceState* device;  // the member's device state: its identity, and its in-flight event
    size_t need;
  };
  ScratchPool() = default;

  const void* scope_ = nullptr;
  engine::MemoryKind kind_ = engine::MemoryKind::kHost;
  int device_id_ = 0;
  DelegateLock lock_;
  DeviceBuffer buffer_;
  uint64_t generation_ = 0;
  ScratchTurn turn_;
  std::vector<Member> members_;  // under the registry's mutex
};

// A delegate's membership of a pool; leaving frees or shrinks the pool (scratch_pool_policy.h). Neither copyable nor
// movable: the delegate holds it from load to destruction, and releases it after its contexts are gone.
class ScratchHold {
 public:
  ScratchHold() = default;
  ~ScratchHold() { release(); }
  ScratchHold(const ScratchHold&) = delete;
  ScratchHold& operator=(const ScratchHold&) = delete;

  ScratchPool* pool() const { return pool_; }
  void release();

 private:
  friend class ScratchRegistry;
  ScratchPool* pool_ = nullptr;
  const DeviceState* device_ = nullptr;
};

// Joins the pool `spec` names, or makes it: its buffer grows to `spec.need` when that is larger than what it holds,
// after the work in the old buffer has finished. MemoryAllocationFailed (the pool unchanged) when the memory cannot
// be had. `device` is the joining delegate's device state (its in-flight event may become the pool's last work).
[[nodiscard]] Error join_scratch_pool(const ScratchSpec& spec, const DeviceState* device, ScratchHold* out,
                                      Diagnostic& why);

// Scratch a delegate runs in that no other delegate shares -- its own context's (TensorRT allocates it), or its
// context_per_profile buffer -- counted while it lives.
class PrivateScratch {
 public:
  PrivateScratch() = default;
  ~PrivateScratch();
  PrivateScratch(const PrivateScratch&) = delete;
  PrivateScratch& operator=(const PrivateScratch&) = delete;
  void count(size_t bytes);

 private:
  size_t bytes_ = 0;
};

// Bytes of scratch the live delegates hold: every pool once, plus every private scratch (the counter scratch_bytes).
int64_t scratch_bytes_held();

}  // namespace etrt::backend
