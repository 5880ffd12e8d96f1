#include "engine/reference/reference_engine.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>

#include "engine/reference/device_runtime.h"
#include "engine/reference/engine_state.h"
#include "engine/reference/format.h"
#include "engine/reference/model.h"
#include "engine/reference/trace.h"

namespace etrt::engine::reference {

namespace {

std::atomic<uint64_t> g_next_engine_id{1};
std::atomic<uint64_t> g_next_context_id{1};

}  // namespace

ReferenceEngine::State::~State() {
  for (void* p : device_constants) device::release(p);
}

void ScratchFree::operator()(uint8_t* p) const {
  if (kind == MemoryKind::kDevice) {
    device::release(p);
  } else {
    ::operator delete[](p, std::align_val_t{kScratchAlignment});
  }
}

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

MemoryKind ReferenceEngine::memory_kind() const { return state_->model.memory_kind; }

size_t ReferenceEngine::device_memory_size() const { return static_cast<size_t>(state_->plan.device_memory_size); }

bool ReferenceEngine::prepare_device() {
  State& s = *state_;
  std::string error;
  int current = -1;
  if (!device::current_device(&current, &error)) {
    last_error_ = "create_context: " + error;
    return false;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.device >= 0) {
    if (current == s.device) return true;
    last_error_ = "create_context: engine '" + s.model.label + "' holds its weights on CUDA device " +
                  std::to_string(s.device) + ", but device " + std::to_string(current) + " is current; make device " +
                  std::to_string(s.device) + " current (cudaSetDevice) first";
    return false;
  }
  std::vector<void*> uploaded(s.model.constants.size(), nullptr);
  for (size_t i = 0; i < s.model.constants.size(); ++i) {
    const std::vector<float>& values = s.model.constants[i].values;
    const size_t bytes = values.size() * sizeof(float);
    if (!device::allocate(bytes, &uploaded[i], &error) || !device::upload(uploaded[i], values.data(), bytes, &error)) {
      for (void* p : uploaded) device::release(p);
      last_error_ = "create_context: weights of engine '" + s.model.label + "' to device " + std::to_string(current) +
                    ": " + error;
      return false;
    }
  }
  s.device_constants = std::move(uploaded);
  s.device = current;
  return true;
}

std::unique_ptr<ExecutionContext> ReferenceEngine::create_context(const ContextOptions& options) {
  const bool on_device = state_->device_mode();
  auto refuse = [&] {
    state_->trace_call(TraceKind::kCreateContext, 0, &last_error_, [](TraceEvent&) {});
    return nullptr;
  };
  if (on_device && !prepare_device()) return refuse();
  ScratchBuffer owned(nullptr, ScratchFree{state_->model.memory_kind});
  const uint64_t bytes = state_->plan.device_memory_size;
  if (!options.user_managed_memory && bytes > 0) {
    std::string error;
    void* memory = nullptr;
    if (on_device) {
      if (device::allocate(static_cast<size_t>(bytes), &memory, &error)) owned.reset(static_cast<uint8_t*>(memory));
    } else {
      owned.reset(static_cast<uint8_t*>(
          ::operator new[](static_cast<size_t>(bytes), std::align_val_t{kScratchAlignment}, std::nothrow)));
    }
    if (!owned) {
      last_error_ = "create_context: cannot allocate " + std::to_string(bytes) + " bytes of " +
                    (on_device ? "device" : "scratch") + " memory" + (error.empty() ? "" : " (" + error + ")") +
                    "; create the context with user_managed_memory and supply it";
      return refuse();
    }
  }
  DeviceOrder order;
  if (on_device) {
    std::string error;
    if (!order.make(&error)) {
      last_error_ = "create_context: " + error;
      return refuse();
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
  std::unique_ptr<ExecutionContext> context =
      make_context(state_, id, options.user_managed_memory, std::move(owned), order);
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
