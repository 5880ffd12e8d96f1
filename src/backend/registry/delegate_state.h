#pragma once
// Delegate-owned state (docs/design.md, decision 18): the storage of the blob's delegate_state tensors, which
// ExecuTorch does not pass when a partitioner hands a mutable buffer to the delegate (tag_mutated_buffer).
//
// Each state tensor gets one buffer, allocated once at load on the engine's memory (device memory for a device
// engine, 256-byte-aligned host memory for a host engine), filled with its initial value (the program's named data,
// or zeros) and kept until the last delegate using it is destroyed. Delegates share a state by name within one load:
// the scope is the method allocator ExecuTorch hands each delegate (load_scope() in delegate.h). ExecuTorch's Module
// gives all its methods one, so prefill and decode share a cache; every Module -- a second load of the file, or a
// session over a Program another Module loaded -- has its own, so it keeps a cache of its own. The program's
// named-data table plays no part: ExecuTorch 1.5.1's exporter omits it when there is no named data, and a program
// without one behaves like a program with one. A runner that hands one allocator to several loads makes them one
// scope. An allocator's address is not reused while a state of its scope lives: the delegates holding the state live
// in that allocator, so it outlives them, and the state goes with the last of them.
//
// The registry is process-wide, behind one mutex taken only at load, destroy, reset and when the counters are read;
// executions never touch it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/device/device.h"
#include "backend/execute/delegate_lock.h"
#include "common/error.h"
#include "common/shape.h"
#include "engine/engine.h"

namespace etrt::backend {

// What a delegate asks of one state tensor at load.
struct StateSpec {
  const void* scope = nullptr;  // the load's (load_scope())
  std::string name;             // the blob's delegate_state[i].name
  engine::MemoryKind kind = engine::MemoryKind::kHost;
  int device_id = 0;  // device engines: the blob's device, current while the state is made
  engine::DataType dtype = engine::DataType::kFloat32;
  Shape shape;
  size_t bytes = 0;
  std::string initial_key;       // "" = zeros
  std::vector<uint8_t> initial;  // the initial bytes read from the named data (empty = zeros)
};

// A delegate using a state: what reset() must hold and wait for before it rewrites the storage.
struct StateUser {
  const char* delegate = nullptr;  // its name, for messages
  DelegateLock* lock = nullptr;
  DeviceState* device = nullptr;
};

struct StateStorage;

// A delegate's hold on one state tensor; releasing the last hold frees the storage. Movable, not copyable.
class StateHold {
 public:
  StateHold() = default;
  ~StateHold() { release(); }
  StateHold(StateHold&& other) noexcept : storage_(other.storage_), user_(other.user_) { other.storage_ = nullptr; }
  StateHold& operator=(StateHold&&) = delete;
  StateHold(const StateHold&) = delete;
  StateHold& operator=(const StateHold&) = delete;

  void* data() const;
  size_t bytes() const;
  void release();

 private:
  friend Error hold_state(StateSpec spec, const StateUser& user, StateHold* out, Diagnostic& why);
  StateStorage* storage_ = nullptr;
  StateUser user_;
};

// Takes a hold on the state `spec` names: the live one of the same scope and name, which must have the same type,
// shape and memory (else InvalidProgram, naming both), or a new one, allocated and initialised now (on the current
// device for a device engine). MemoryAllocationFailed / Internal when the memory cannot be had or written.
[[nodiscard]] Error hold_state(StateSpec spec, const StateUser& user, StateHold* out, Diagnostic& why);

// Writes every live state's initial value again (of those named `name`, when not null): a new sequence. Each state's
// users are locked and their work in flight waited for first, so no execution sees a half-written state. Returns how
// many states were reset; on a failure, the reason in `why` and -1.
int64_t reset_states(const char* name, Diagnostic& why);

// Bytes of storage the live states hold (each shared state counted once).
int64_t state_bytes_held();

}  // namespace etrt::backend
