#pragma once
// What a reference engine and its contexts share (private to the reference
// engine). Contexts hold it by shared_ptr, so a context that outlives its
// engine finds `alive == false` and refuses, instead of touching freed memory.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "engine/reference/model.h"
#include "engine/reference/reference_engine.h"
#include "engine/reference/trace.h"

namespace etrt::engine::reference {

struct ReferenceEngine::State {
  Model model;
  MemoryPlan plan;
  std::vector<int32_t> input_ordinals;  // io_index -> k, -1 for outputs
  uint64_t id = 0;
  detail::TraceRecord* trace = nullptr;
  std::atomic<bool> tracing{true};

  std::mutex mutex;  // guards everything below
  bool alive = true;
  std::vector<uint64_t> holders;  // per profile, the context holding it; 0 when free
  struct ScratchUse {
    const uint8_t* begin;
    const uint8_t* end;
    uint64_t context_id;
  };
  std::vector<ScratchUse> scratch_in_use;  // scratch of enqueues in progress
  int64_t live_contexts = 0;
  EnqueueHook hook;

  bool should_trace() const { return tracing.load(std::memory_order_relaxed) && tracing_enabled(); }

  // `fill` adds the call's details; it runs only when tracing, so a disabled trace costs two relaxed loads.
  template <typename Fill>
  void trace_call(TraceKind kind, uint64_t context_id, const std::string* error, Fill fill) {
    if (!should_trace()) return;
    TraceEvent e;
    e.kind = kind;
    e.engine_id = id;
    e.context_id = context_id;
    e.ok = error == nullptr;
    if (error != nullptr) e.error = *error;
    fill(e);
    detail::record(trace, std::move(e));
  }

  // Holding `mutex`.
  uint64_t holder(int32_t profile) const { return holders[static_cast<size_t>(profile)]; }
};

// Scratch memory a context owns, aligned like cudaMalloc's.
struct AlignedFree {
  void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{kScratchAlignment}); }
};
using ScratchBuffer = std::unique_ptr<uint8_t, AlignedFree>;

// A context of the engine behind `state`; `owned` is its scratch unless `user_managed`.
std::unique_ptr<ExecutionContext> make_context(std::shared_ptr<ReferenceEngine::State> state, uint64_t id,
                                               bool user_managed, ScratchBuffer owned);

}  // namespace etrt::engine::reference
