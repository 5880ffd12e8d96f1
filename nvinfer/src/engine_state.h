#pragma once
// What a GPU-free NvInfer engine and its contexts share (private to the GPU-free
// NvInfer). Contexts hold it by shared_ptr, so a context that outlives its
// engine finds `alive == false` and refuses, instead of touching freed memory.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <NvInferRuntime.h>

#include "engine_impl.h"
#include "etrt_gpufree/trace.h"
#include "model.h"

namespace etrt::gpufree {

struct EngineImpl::State {
  Model model;
  MemoryPlan plan;
  std::vector<int32_t> input_ordinals;  // io_index -> k, -1 for outputs
  size_t num_inputs = 0;
  // Where errors go (the runtime's logger; the engine's recorder, if any, which contexts inherit).
  ErrorSink sink;
  uint64_t id = 0;
  detail::TraceRecord* trace = nullptr;
  std::atomic<bool> tracing{true};

  std::mutex mutex;  // guards everything below
  bool alive = true;
  std::vector<uint64_t> holders;  // exclusive profiles: per profile, the context holding it; 0 when free
  struct ScratchUse {
    const uint8_t* begin;
    const uint8_t* end;
    uint64_t context_id;
  };
  std::vector<ScratchUse> scratch_in_use;  // scratch of enqueues in progress
  int64_t live_contexts = 0;
  // Weight streaming: the budget (bytes of streamable weights kept resident); all of them until set. Fixed while
  // live_contexts > 0 (setWeightStreamingBudgetV2 refuses), so a context reads it once, at creation.
  int64_t weight_streaming_budget = 0;
  // CUDA mode: the weights in device memory (by constant index) and the device they live on (-1 until then).
  // Uploaded when the first context is created, not at deserialize, so CUDA-mode bytes load -- to be inspected or
  // packed -- on machines without a GPU.
  std::vector<void*> device_constants;
  int device = -1;

  ~State();

  bool device_mode() const { return model.memory_kind == MemoryKind::kDevice; }

  // Weight streaming under `budget` (../README.md, "Weight streaming"). The engine streams when the budget is below
  // its streamable bytes; each context then needs room to stage the streamed-out weights: all of them
  // (streamable - budget) at most, and never more than the largest weight, since one op's weights are staged at a
  // time (TensorRT's getWeightStreamingScratchMemorySize, "typically much smaller than the total streamable weights
  // size"). 0 when every weight is resident.
  int64_t streamable_bytes() const {
    return model.streamable_weights ? static_cast<int64_t>(model.constant_bytes()) : 0;
  }
  bool streams_weights(int64_t budget) const { return budget < streamable_bytes(); }
  uint64_t streaming_scratch(int64_t budget) const {
    if (!streams_weights(budget)) return 0;
    const auto streamed_out = static_cast<uint64_t>(streamable_bytes() - budget);
    return streamed_out < model.largest_constant_bytes() ? streamed_out : model.largest_constant_bytes();
  }
  // What one context needs under `budget` (getDeviceMemorySizeV2, which TensorRT documents as depending on the
  // budget): the intermediates' plan, then the streaming scratch from the next kScratchAlignment boundary.
  uint64_t context_memory(int64_t budget) const {
    const uint64_t staging = streaming_scratch(budget);
    if (staging == 0) return plan.device_memory_size;
    return (plan.device_memory_size + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment + staging;
  }

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

// Scratch memory a context owns: aligned host memory, or (CUDA mode) device memory, which cudaMalloc aligns alike.
struct ScratchFree {
  MemoryKind kind = MemoryKind::kHost;
  void operator()(uint8_t* p) const;
};
using ScratchBuffer = std::unique_ptr<uint8_t, ScratchFree>;

// CUDA mode: once streams are involved the host cannot see the order work runs in, so the device checks it. A
// switch stores the new profile into `word` on its stream; every enqueue first checks, on its own stream, that
// `word` holds the profile it runs on, and raises `flag` (host-mapped) if not: the enqueue ran before the switch
// issued ahead of it -- different streams, nothing ordering them. The next enqueue, or the context's destruction,
// reports it. `last_work`, recorded after each switch and enqueue, lets destruction refuse (and then wait for)
// work still running on the device. Made with the context, so no call on it allocates or can implicitly
// synchronize the device.
struct DeviceOrder {
  int32_t* word = nullptr;    // device memory; 0 at creation, as a new context starts on profile 0
  int* flag = nullptr;        // pinned, device-mapped host memory
  void* last_work = nullptr;  // cudaEvent_t

  bool make(std::string* error);
  void release();
};

// The memory a context runs in, fixed at its creation: the budget cannot change while it lives.
struct ContextMemory {
  uint64_t bytes = 0;            // State::context_memory(budget): what it owns, or what setDeviceMemoryV2 must give
  uint64_t streaming_bytes = 0;  // of which weight streaming's scratch (State::streaming_scratch)
  int64_t budget = 0;            // the weight-streaming budget at creation
  bool streams_weights = false;  // budget < the streamable bytes: enqueueV3 is synchronous and uncapturable
};

// A context of the engine behind `state`; `owned` is its scratch unless `user_managed`; `order` is empty in host
// mode.
// `profile`: 0, or -1 when another live context held profile 0 as this one was created (TensorRT 8.6: "Could not
// set default profile 0 for execution context. Profile index must be set explicitly.").
nvinfer1::IExecutionContext* make_context(const EngineImpl& engine, std::shared_ptr<EngineImpl::State> state,
                                          uint64_t id, bool user_managed, const ContextMemory& memory,
                                          ScratchBuffer owned, DeviceOrder order, int32_t profile);

}  // namespace etrt::gpufree
