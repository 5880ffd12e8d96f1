#include "engine/reference/reference_engine.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>

#include "engine/reference/engine_state.h"
#include "engine/reference/format.h"
#include "engine/reference/model.h"
#include "engine/reference/trace.h"

namespace etrt::engine::reference {

namespace {

std::atomic<uint64_t> g_next_engine_id{1};
std::atomic<uint64_t> g_next_context_id{1};

}  // namespace

ReferenceEngine::ReferenceEngine(std::shared_ptr<State> state) : state_(std::move(state)) {}

ReferenceEngine::~ReferenceEngine() {
  int64_t live = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->alive = false;
    live = state_->live_contexts;
  }
  // TensorRT makes this undefined behaviour; the contexts share our state, so we can refuse their later calls and
  // record the mistake instead.
  std::string error = "engine '" + state_->model.label + "' destroyed while " + std::to_string(live) +
                      " execution context(s) are alive; destroy every context before its engine";
  state_->trace_call(TraceKind::kDestroyEngine, 0, live > 0 ? &error : nullptr, [](TraceEvent&) {});
}

int32_t ReferenceEngine::num_io_tensors() const { return state_->model.num_io(); }

const TensorDesc& ReferenceEngine::io_tensor(int32_t io_index) const {
  static const TensorDesc kInvalid{"<invalid io index>", false, DataType::kFloat32, Shape{}, false};
  if (io_index < 0 || io_index >= state_->model.num_io()) return kInvalid;
  return state_->model.io[static_cast<size_t>(io_index)];
}

int32_t ReferenceEngine::num_profiles() const { return static_cast<int32_t>(state_->model.profiles.size()); }

bool ReferenceEngine::profile_shape(int32_t profile, int32_t io_index, Shape* min, Shape* opt, Shape* max) const {
  const Model& m = state_->model;
  if (profile < 0 || profile >= num_profiles() || io_index < 0 || io_index >= m.num_io() ||
      !m.io[static_cast<size_t>(io_index)].is_input)
    return false;
  const InputRange& r = m.profiles[static_cast<size_t>(profile)]
                                  [static_cast<size_t>(state_->input_ordinals[static_cast<size_t>(io_index)])];
  if (min != nullptr) *min = r.min;
  if (opt != nullptr) *opt = r.opt;
  if (max != nullptr) *max = r.max;
  return true;
}

size_t ReferenceEngine::device_memory_size() const { return static_cast<size_t>(state_->plan.device_memory_size); }

std::unique_ptr<ExecutionContext> ReferenceEngine::create_context(const ContextOptions& options) {
  ScratchBuffer owned;
  const uint64_t bytes = state_->plan.device_memory_size;
  if (!options.user_managed_memory && bytes > 0) {
    owned.reset(static_cast<uint8_t*>(
        ::operator new[](static_cast<size_t>(bytes), std::align_val_t{kScratchAlignment}, std::nothrow)));
    if (!owned) {
      last_error_ = "create_context: cannot allocate " + std::to_string(bytes) +
                    " bytes of scratch memory; create the context with user_managed_memory and supply it";
      state_->trace_call(TraceKind::kCreateContext, 0, &last_error_, [](TraceEvent&) {});
      return nullptr;
    }
  }
  const uint64_t id = g_next_context_id.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->holders[0] == 0) state_->holders[0] = id;
    ++state_->live_contexts;
    // At most one enqueue per context is in flight: room for all of them now keeps enqueue from allocating.
    state_->scratch_in_use.reserve(static_cast<size_t>(state_->live_contexts));
  }
  std::unique_ptr<ExecutionContext> context = make_context(state_, id, options.user_managed_memory, std::move(owned));
  state_->trace_call(TraceKind::kCreateContext, id, nullptr, [&](TraceEvent& e) {
    e.profile = 0;
    e.user_managed_memory = options.user_managed_memory;
  });
  return context;
}

const std::string& ReferenceEngine::label() const { return state_->model.label; }
uint64_t ReferenceEngine::id() const { return state_->id; }
int64_t ReferenceEngine::switch_cost_ns() const { return state_->model.switch_cost_ns; }
void ReferenceEngine::set_tracing(bool enabled) { state_->tracing.store(enabled, std::memory_order_relaxed); }
bool ReferenceEngine::tracing() const { return state_->tracing.load(std::memory_order_relaxed); }
void ReferenceEngine::set_enqueue_hook_for_testing(EnqueueHook hook) { state_->hook = std::move(hook); }

std::unique_ptr<ReferenceEngine> deserialize(const void* data, size_t size, std::string* error) {
  auto state = std::make_shared<ReferenceEngine::State>();
  if (!deserialize_model(data, size, &state->model, error)) return nullptr;
  if (!plan_memory(state->model, &state->plan, error)) return nullptr;
  state->input_ordinals = state->model.input_ordinals();
  state->id = g_next_engine_id.fetch_add(1, std::memory_order_relaxed);
  state->trace = detail::trace_record(state->model.label);
  state->tracing.store(state->model.tracing, std::memory_order_relaxed);
  state->holders.assign(state->model.profiles.size(), 0);
  state->trace_call(TraceKind::kLoadEngine, 0, nullptr,
                    [&](TraceEvent& e) { e.size = state->plan.device_memory_size; });
  return std::unique_ptr<ReferenceEngine>(new ReferenceEngine(std::move(state)));
}

}  // namespace etrt::engine::reference
