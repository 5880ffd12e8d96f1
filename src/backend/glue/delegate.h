#pragma once
// One loaded TensorRT delegate: what ExecuTorch's DelegateHandle points to. Nothing outside src/backend sees it, so
// its layout can change without touching any public header (docs/design.md, decision 9).
//
// It is two parts, by lifecycle, as ExecuTorch's XNNPACK delegate is (a compiled runtime and an executor): the Plan
// load() builds (plan.h: the engine's arguments as arguments, the call's arity, the profile table, the strategy, the
// delegate-owned states), fixed once load() returns, and the Executor (executor.h) that runs it, which owns what
// executions change: the contexts, their scratch memory, the staging buffers and the device state. load()
// (delegate_loader.cpp) runs in BackendInterface::init() and may allocate; execute() allocates nothing; the destructor
// waits for the work in flight with the delegate's device current.

#include <cstddef>
#include <memory>

#include <executorch/runtime/backend/backend_init_context.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/named_data_map.h>
#include <executorch/runtime/core/span.h>

#include "backend/execute/executor.h"
#include "backend/execute/plan.h"
#include "backend/glue/load_options.h"
#include "backend/registry/engine_cache.h"
#include "backend/rules/io_resolution.h"
#include "blob/blob.h"
#include "common/error.h"
#include "engine/engine.h"

namespace etrt::backend {

// The scope of one load, which delegate-owned state (delegate_state.h) and the shared scratch pool (scratch_pool.h)
// are shared within (docs/design.md, decisions 18 and 19): the method allocator ExecuTorch hands every delegate it
// initializes for a Method. ExecuTorch's Module gives all its methods one allocator and every Module its own, so the
// methods of one Module share, two Modules (or sessions over one shared Program) never do, whatever the program
// carries. The address cannot be reused while a delegate of the scope lives: the delegate lives in that allocator.
inline const void* load_scope(executorch::runtime::BackendInitContext& context) {
  return context.get_runtime_allocator();
}

class Delegate {
 public:
  // `name`: "<method>#<n>", used in every message and report (cut to 63 bytes).
  Delegate(const char* name, const LoadOptions& options) noexcept;
  ~Delegate();
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;

  // Loads the TR01/TR02 blob at [blob, blob + size): the engine, its IO, aliases, profile table, delegate-owned state,
  // contexts and staging. `data` is the program's NamedDataMap (null when it has none): the initial values of the
  // blob's delegate_state come from it. `scope` is the load's (load_scope()): states and the shared scratch pool are
  // shared within it. On failure the reason is in `why` (what was wrong and what to do) and the delegate is only fit
  // for destruction.
  [[nodiscard]] Error load(const void* blob, size_t size, const executorch::runtime::NamedDataMap* data,
                           const void* scope, Diagnostic& why);

  // One execution (Executor::execute).
  [[nodiscard]] Error execute(executorch::runtime::Span<executorch::runtime::EValue*> args,
                              executorch::runtime::EventTracer* tracer = nullptr) {
    return executor_.execute(args, tracer);
  }

 private:
  // ---- load (delegate_loader.cpp), in order ----
  // The one place the blob's engine bytes become an engine.
  Error deserialize_engine(const blob::ParsedBlob& parsed, DeviceGuard& device, Diagnostic& why);
  Error apply_weight_streaming(engine::Engine& engine, Diagnostic& why);
  void plan_load(const blob::Metadata& metadata, Resolution& io);
  Error hold_states(const blob::Metadata& metadata, const std::vector<ResolvedState>& states,
                    const executorch::runtime::NamedDataMap* data, const void* scope, Diagnostic& why);

  LoadOptions options_;
  // Declaration order is destruction order reversed: the plan's states are released first, while the executor's lock
  // and device state they name still live; then the executor's contexts, scratch and staging; the engine last. The
  // engine is the process's one of its key, shared with every other delegate that loaded it (engine_cache.h).
  EngineHold engine_;
  Executor executor_{plan_};
  Plan plan_;
};

}  // namespace etrt::backend
