#pragma once
// What the GPU-free NvInfer implementation's engines really did, readable from
// anywhere in the process.
//
// Every call an engine or one of its contexts receives -- successful or
// refused -- becomes a TraceEvent in a process-wide sink, filed under the
// engine's label. A test that loads a .pte through ExecuTorch's Module, where
// the engine object is hidden inside the backend, reads it back by label:
//
//   gpufree::clear_trace("decoder");
//   module.forward(prompt);
//   EXPECT_EQ(gpufree::count_switches("decoder"), 1);
//   EXPECT_EQ(gpufree::last_enqueue_profile("decoder"), 1);
//
// Engines sharing a label share one record; engine_id and context_id tell them
// apart. The sink is mutex-protected. Tracing costs a lock and a small copy per
// call; turn it off globally (set_tracing_enabled) or per engine, when it is
// built (Builder::set_tracing), when measuring.
//
// Memory is bounded: a label keeps at most kMaxTraceEvents events. When every
// engine of a label has been destroyed its events stay readable (a test reads
// them after unloading its Module); when an engine with that label loads again,
// only the newest kMaxEventsKeptAcrossReloads of them stay, so a process that
// loads, runs and unloads a model over and over holds a fixed amount. When more
// than kMaxRetiredTraces labels have no engine alive and still hold events, the
// oldest such label's events are released. The counters are never released
// (clear_trace resets them), so they stay exact; released events count as
// dropped. A few hundred bytes per distinct label stay for the life of the
// process. An engine destroyed while tracing is off leaves no kDestroyEngine
// behind, so its label keeps counting it as alive: its events are then bounded
// by kMaxTraceEvents alone.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "etrt_gpufree/types.h"

namespace etrt::gpufree {

// What each kind fills in besides the common fields (sequence .. error):
//   kLoadEngine              size = device_memory_size()
//   kDestroyEngine           fails if contexts were still alive
//   kCreateContext           profile (0), user_managed_memory
//   kDestroyContext          -
//   kSetOptimizationProfile  profile (requested), previous_profile, stream, switch_cost_ns
//   kSetInputShape           io_index, shape, profile (active)
//   kSetTensorAddress        io_index, address
//   kSetDeviceMemory         address, size
//   kEnqueue                 profile (the one it ran on), stream, input_shapes
//   kSetWeightStreamingBudget size = the budget requested (bytes)
enum class TraceKind : uint8_t {
  kLoadEngine,
  kDestroyEngine,
  kCreateContext,
  kDestroyContext,
  kSetOptimizationProfile,
  kSetInputShape,
  kSetTensorAddress,
  kSetDeviceMemory,
  kEnqueue,
  kSetWeightStreamingBudget,
};
ETRT_GPUFREE_API const char* to_string(TraceKind kind);

struct TraceEvent {
  // Process-wide order, across labels.
  uint64_t sequence = 0;
  TraceKind kind = TraceKind::kEnqueue;
  // Process-unique ids of the engine and the context (0 for engine events).
  uint64_t engine_id = 0;
  uint64_t context_id = 0;
  bool ok = true;
  // The refusal, word for word what last_error() said; empty when ok.
  std::string error;

  int32_t profile = -1;
  int32_t previous_profile = -1;
  StreamHandle stream = nullptr;
  int32_t io_index = -1;
  Shape shape;
  const void* address = nullptr;
  uint64_t size = 0;
  // The modeled cost busy-waited on this switch (0 for a refused one).
  int64_t switch_cost_ns = 0;
  bool user_managed_memory = false;
  // Every input's shape, in IO order (-1 dims for one not set).
  std::vector<Shape> input_shapes;
};

// Running totals per label. Kept apart from the event list so they stay exact
// even when a long run overflows it (kMaxTraceEvents).
struct TraceCounters {
  int64_t engines_loaded = 0;
  int64_t contexts_created = 0;
  int64_t contexts_destroyed = 0;
  int64_t switches = 0;  // successful set_optimization_profile calls, same-profile ones included
  int64_t failed_switches = 0;
  int64_t enqueues = 0;  // successful
  int64_t failed_enqueues = 0;
  int64_t failures = 0;               // every refused call of any kind
  int32_t last_enqueue_profile = -1;  // profile of the last successful enqueue; -1 if none
  int64_t dropped_events = 0;         // events not kept: the list was full, or they belonged to an earlier
                                      // generation of engines of this label (see above)
};

// The list keeps the newest this many events per label.
inline constexpr size_t kMaxTraceEvents = 100000;
// Of a label's events from before its engines were all destroyed, a new load keeps the newest this many.
inline constexpr size_t kMaxEventsKeptAcrossReloads = 1024;
// Labels whose engines are all destroyed keep their events for reading until this many more such labels do.
inline constexpr size_t kMaxRetiredTraces = 64;

ETRT_GPUFREE_API std::vector<TraceEvent> trace_events(const std::string& label);
ETRT_GPUFREE_API TraceCounters trace_counters(const std::string& label);
ETRT_GPUFREE_API int64_t count_switches(const std::string& label);
ETRT_GPUFREE_API int64_t count_enqueues(const std::string& label);
ETRT_GPUFREE_API int32_t last_enqueue_profile(const std::string& label);
// Forgets the events and counters of `label` / of every label.
ETRT_GPUFREE_API void clear_trace(const std::string& label);
ETRT_GPUFREE_API void clear_all_traces();
// Heap bytes the trace holds (records, labels, events and what they own), for tests that check it stays bounded.
ETRT_GPUFREE_API size_t trace_memory_bytes();

// Global switch, on by default; an engine records only when this and its own flag are both on.
ETRT_GPUFREE_API void set_tracing_enabled(bool enabled);
ETRT_GPUFREE_API bool tracing_enabled();

// One line per event, for test failure messages and debugging.
ETRT_GPUFREE_API std::string to_string(const TraceEvent& event);

namespace detail {
// One label's record. Engines look theirs up once at load and keep the pointer; records are never freed (their
// events are, see above). Each call counts one more live engine of `label`; its kDestroyEngine event counts it gone.
struct TraceRecord;
ETRT_GPUFREE_API TraceRecord* trace_record(const std::string& label);
ETRT_GPUFREE_API void record(TraceRecord* record, TraceEvent event);
}  // namespace detail

}  // namespace etrt::gpufree
