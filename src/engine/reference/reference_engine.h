#pragma once
// The GPU-free reference engine: a small real engine (its own serialized
// format, host float32 kernels) that honours TensorRT's execution-context
// contract by refusing every call TensorRT would refuse -- or that would be a
// data race on a GPU -- with a message, and records every call in the trace
// (trace.h). See docs/reference-engine.md.
//
// Two modes, fixed when the engine is built (Builder::set_memory_kind): host
// (memory_kind() == kHost, ops on the CPU) and CUDA (kDevice: ops run as CUDA
// kernels on the stream given to enqueue, over device memory, so a backend's
// CUDA plumbing runs for real). The trace and the contract checks are the same
// in both; CUDA mode adds the checks only device memory needs (see
// reference_context.cpp).
//
// Profile ownership follows TensorRT <= 8.5: each live context holds at most
// one profile and no two live contexts hold the same one. A context takes its
// profile at creation (profile 0, if no other context holds it), on a
// successful switch, or at enqueue if it became free; it gives it back on a
// switch away or when destroyed. Switching to a profile another live context
// holds fails and changes nothing; enqueueing on a profile another live context
// holds fails. So "context per profile" works (create N contexts, switch
// context i to profile i) and two contexts can never run one profile at once.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/engine.h"

namespace etrt::engine::reference {

class ReferenceEngine final : public Engine {
 public:
  struct State;  // shared with the engine's contexts; private to reference_engine.cpp

  ~ReferenceEngine() override;
  ReferenceEngine(const ReferenceEngine&) = delete;
  ReferenceEngine& operator=(const ReferenceEngine&) = delete;

  int32_t num_io_tensors() const override;
  const TensorDesc& io_tensor(int32_t io_index) const override;
  int32_t num_profiles() const override;
  bool profile_shape(int32_t profile, int32_t io_index, Shape* min, Shape* opt, Shape* max) const override;
  // kHost, or kDevice for a CUDA-mode engine (Builder::set_memory_kind).
  MemoryKind memory_kind() const override;
  size_t device_memory_size() const override;
  std::unique_ptr<ExecutionContext> create_context(const ContextOptions& options) override;
  const char* last_error() const override { return last_error_.c_str(); }

  // The builder's label: the key of this engine's trace.
  const std::string& label() const;
  // Process-unique; the engine_id of this engine's trace events.
  uint64_t id() const;
  // The modeled cost busy-waited on every successful set_optimization_profile.
  int64_t switch_cost_ns() const;
  // Per-engine tracing switch (starts as the builder set it); see also set_tracing_enabled().
  void set_tracing(bool enabled);
  bool tracing() const;

  // Called inside every enqueue of every context of this engine, after the
  // enqueue has claimed the context, its profile and its scratch memory and
  // before it computes: lets a test start a competing call from another thread
  // at a known moment instead of racing a timer. Set it before creating
  // contexts; empty to remove.
  using EnqueueHook = std::function<void(ExecutionContext& context)>;
  void set_enqueue_hook_for_testing(EnqueueHook hook);

 private:
  friend std::unique_ptr<ReferenceEngine> deserialize(const void* data, size_t size, std::string* error);
  explicit ReferenceEngine(std::shared_ptr<State> state);
  // CUDA mode, at context creation: uploads the weights on first use; refuses another device than theirs.
  bool prepare_device();

  std::shared_ptr<State> state_;
  std::string last_error_;
};

// Parses and validates a reference engine; the engine copies what it needs, so
// `data` may be freed afterwards. nullptr with the reason in *error on
// malformed, truncated or damaged bytes.
std::unique_ptr<ReferenceEngine> deserialize(const void* data, size_t size, std::string* error);

}  // namespace etrt::engine::reference
