// The GPU-free NvInfer implementation's execution context: TensorRT's
// IExecutionContext contract, call by call (see engine_impl.h and ../README.md).
// Each NvInfer call resolves tensor names to IO indices, checks for an injected
// fault, runs the call's rules below and, on failure, reports the reason to the
// context's error recorder (inherited from the engine, else the logger).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "device_runtime.h"
#include "engine_state.h"
#include "etrt_gpufree/faults.h"
#include "executor.h"
#include "kernels.h"

namespace etrt::gpufree {

namespace {

using State = EngineImpl::State;

void busy_wait(int64_t ns) {
  // Spinning, not sleeping: a real switch keeps the calling thread busy, and a sleep's wake-up latency would swamp
  // the microsecond costs benchmarks model.
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < end) {
  }
}

std::string context_name(uint64_t id) { return "execution context #" + std::to_string(id); }

// A context created while another live context held profile 0 starts with no profile, as in TensorRT 8.6.
constexpr char kNoProfile[] =
    "the context has no optimization profile: profile 0 was held by another live context when it was created "
    "(TensorRT: 'Could not set default profile 0 for execution context'); call setOptimizationProfileAsync first";

class ContextImpl final : public nvinfer1::IExecutionContext {
 public:
  ContextImpl(const EngineImpl& engine, std::shared_ptr<State> state, uint64_t id, bool user_managed,
              const ContextMemory& memory, ScratchBuffer owned, DeviceOrder order, int32_t profile)
      : engine_(engine),
        state_(std::move(state)),
        sink_(state_->sink),
        id_(id),
        user_managed_(user_managed),
        memory_(memory),
        owned_scratch_(std::move(owned)),
        order_(order),
        profile_(profile),
        input_set_(state_->model.io.size(), false),
        address_set_(state_->model.io.size(), false),
        shapes_(static_cast<size_t>(state_->model.num_tensors())),
        data_(static_cast<size_t>(state_->model.num_tensors()), nullptr) {
    const Model& m = state_->model;
    // CUDA mode: the engine uploaded its weights before creating this context (EngineImpl::prepare_device).
    for (size_t i = 0; i < m.constants.size(); ++i)
      data_[static_cast<size_t>(m.constant_id(i))] =
          state_->device_mode() ? state_->device_constants[i] : const_cast<float*>(m.constants[i].values.data());
    if (!user_managed_) {
      scratch_ = owned_scratch_.get();
      scratch_set_ = true;
    }
    set_static_input_shapes();
  }

  ~ContextImpl() noexcept override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      for (uint64_t& h : state_->holders)
        if (h == id_) h = 0;
      --state_->live_contexts;
    }
    const std::string error = state_->device_mode() ? release_device_order() : std::string();
    if (!error.empty()) sink_.report(nvinfer1::ErrorCode::kINVALID_STATE, "~IExecutionContext: " + error);
    state_->trace_call(TraceKind::kDestroyContext, id_, error.empty() ? nullptr : &error, [](TraceEvent&) {});
    release(sink_.recorder);
  }

  // ---- NvInfer ----------------------------------------------------------------------------------------------

  void setErrorRecorder(nvinfer1::IErrorRecorder* recorder) noexcept override { sink_.set_recorder(recorder); }
  nvinfer1::IErrorRecorder* getErrorRecorder() const noexcept override { return sink_.recorder; }
  nvinfer1::ICudaEngine const& getEngine() const noexcept override { return engine_; }

  bool setOptimizationProfileAsync(int32_t profileIndex, cudaStream_t stream) noexcept override {
    if (injected(Call::kSetOptimizationProfileAsync, TraceKind::kSetOptimizationProfile)) return false;
    return reported(set_optimization_profile(profileIndex, stream));
  }
  int32_t getOptimizationProfile() const noexcept override { return profile_; }

  bool setInputShape(char const* tensorName, nvinfer1::Dims const& dims) noexcept override {
    const int32_t i = lookup(tensorName, "setInputShape");
    if (i < 0) return false;
    if (injected(Call::kSetInputShape, TraceKind::kSetInputShape)) return false;
    if (dims.nbDims < 0 || dims.nbDims > kMaxRank)
      return reported(refuse("setInputShape('" + std::string(tensorName) + "'): rank " + std::to_string(dims.nbDims) +
                             " is outside 0.." + std::to_string(kMaxRank)));
    Shape shape;
    shape.rank = dims.nbDims;
    for (int32_t d = 0; d < dims.nbDims; ++d) shape.d[d] = dims.d[d];
    return reported(set_input_shape(i, shape));
  }

  nvinfer1::Dims getTensorShape(char const* tensorName) const noexcept override {
    const int32_t i = lookup(tensorName, "getTensorShape");
    if (i < 0) return invalid_dims();
    if (detail::fault_fires(Call::kGetTensorShape, label())) {
      sink_.report(nvinfer1::ErrorCode::kINTERNAL_ERROR, "injected fault: getTensorShape");
      return invalid_dims();
    }
    Shape shape;
    if (!tensor_shape(i, &shape)) {
      sink_.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, last_error_copy());
      return invalid_dims();
    }
    return to_dims(shape);
  }

  bool setTensorAddress(char const* tensorName, void* data) noexcept override {
    const int32_t i = lookup(tensorName, "setTensorAddress");
    if (i < 0) return false;
    if (injected(Call::kSetTensorAddress, TraceKind::kSetTensorAddress)) return false;
    return reported(set_tensor_address(i, data));
  }
  void const* getTensorAddress(char const* tensorName) const noexcept override {
    const int32_t i = lookup(tensorName, "getTensorAddress");
    return i < 0 ? nullptr : data_[static_cast<size_t>(i)];
  }

  void setDeviceMemoryV2(void* memory, int64_t size) noexcept override {
    if (injected(Call::kSetDeviceMemoryV2, TraceKind::kSetDeviceMemory)) return;
    if (size < 0) {
      reported(refuse("setDeviceMemoryV2: negative size " + std::to_string(size)));
      return;
    }
    reported(set_device_memory(memory, static_cast<size_t>(size)));
  }

  bool enqueueV3(cudaStream_t stream) noexcept override {
    if (injected(Call::kEnqueueV3, TraceKind::kEnqueue)) return false;
    return enqueue(stream);  // reports itself: a refused concurrent call must not read last_error_
  }

 private:
  // ---- the rules, by an IO index lookup() found; false with the reason in last_error_ --------------------------

  bool set_optimization_profile(int32_t profile, StreamHandle stream) {
    const int32_t previous = profile_;
    auto traced = [&](const std::string* error, int64_t cost) {
      state_->trace_call(TraceKind::kSetOptimizationProfile, id_, error, [&](TraceEvent& e) {
        e.profile = profile;
        e.previous_profile = previous;
        e.stream = stream;
        e.switch_cost_ns = cost;
      });
      return error == nullptr;
    };
    const int32_t n = static_cast<int32_t>(state_->model.profiles.size());
    if (profile < 0 || profile >= n)
      return traced(fail("set_optimization_profile(" + std::to_string(profile) + "): out of range, engine '" + label() +
                         "' has " + std::to_string(n) + " profile(s), 0.." + std::to_string(n - 1) +
                         "; the context stays on profile " + std::to_string(profile_)),
                    0);
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (!state_->alive) return traced(fail_engine_destroyed("set_optimization_profile"), 0);
      const uint64_t holder = state_->holder(profile);
      if (holder != 0 && holder != id_)
        return traced(fail("set_optimization_profile(" + std::to_string(profile) + "): profile " +
                           std::to_string(profile) + " is held by " + context_name(holder) + " of engine '" + label() +
                           "'; two live contexts must not use one profile (TensorRT <= 8.5 semantics). "
                           "Destroy that context or pick another profile; this context stays on profile " +
                           std::to_string(profile_)),
                      0);
      if (state_->device_mode()) {
        // CUDA mode: the switch's work on its stream stores the new profile where the device can check it (see
        // DeviceOrder). Issued before anything changes, so a failure leaves the context as it was.
        std::string error;
        if (!on_weights_device(&error) || !device::store_word(order_.word, profile, stream, &error) ||
            !device::record_event(order_.last_work, stream, &error))
          return traced(fail("set_optimization_profile(" + std::to_string(profile) + "): " + error +
                             "; the context stays on profile " + std::to_string(profile_)),
                        0);
      }
      for (uint64_t& h : state_->holders)
        if (h == id_) h = 0;
      state_->holders[static_cast<size_t>(profile)] = id_;
    }
    profile_ = profile;
    switch_stream_ = stream;
    switched_since_enqueue_ = true;
    deferred_work_ = true;
    // After a switch every dynamic input's shape must be set again: TensorRT 8.6 keeps the old one, which the new
    // profile may refuse at enqueue (nvinfer/README.md); this implementation forgets it, so a backend that skips
    // re-setting shapes fails here even where TensorRT would happen to accept the old shape.
    for (size_t i = 0; i < input_set_.size(); ++i) input_set_[i] = false;
    inputs_set_ = 0;
    inferred_ = false;
    set_static_input_shapes();
    const int64_t cost = state_->model.switch_cost_ns;
    if (cost > 0) busy_wait(cost);
    return traced(nullptr, cost);
  }

  bool set_input_shape(int32_t io_index, const Shape& shape) {
    auto traced = [&](const std::string* error) {
      state_->trace_call(TraceKind::kSetInputShape, id_, error, [&](TraceEvent& e) {
        e.io_index = io_index;
        e.shape = shape;
        e.profile = profile_;
      });
      return error == nullptr;
    };
    const Model& m = state_->model;
    const TensorDesc& t = m.io[static_cast<size_t>(io_index)];
    // Words for the refusals only: the success path must not allocate.
    auto call = [&] { return "set_input_shape('" + t.name + "', " + shape_to_string(shape) + ")"; };
    if (!t.is_input) return traced(fail(call() + ": '" + t.name + "' is an output; only inputs take shapes"));
    if (shape.rank != t.shape.rank)
      return traced(fail(call() + ": rank " + std::to_string(shape.rank) + ", the input has rank " +
                         std::to_string(t.shape.rank) + " " + shape_to_string(t.shape)));
    if (profile_ < 0) return traced(fail(call() + ": " + kNoProfile));
    const InputRange& r = m.profiles[static_cast<size_t>(profile_)][static_cast<size_t>(ordinal(io_index))];
    for (int32_t d = 0; d < shape.rank; ++d)
      if (shape.d[d] < r.min.d[d] || shape.d[d] > r.max.d[d])
        return traced(fail(call() + ": dim " + std::to_string(d) + " = " + std::to_string(shape.d[d]) +
                           " is outside [" + std::to_string(r.min.d[d]) + ", " + std::to_string(r.max.d[d]) +
                           "] of the active profile " + std::to_string(profile_) + " (min " + shape_to_string(r.min) +
                           ", max " + shape_to_string(r.max) + "); switch to a profile that covers it first"));
    shapes_[static_cast<size_t>(io_index)] = shape;
    if (!input_set_[static_cast<size_t>(io_index)]) ++inputs_set_;
    input_set_[static_cast<size_t>(io_index)] = true;
    inferred_ = false;
    deferred_work_ = true;
    return traced(nullptr);
  }

  bool tensor_shape(int32_t io_index, Shape* out) const {
    const Model& m = state_->model;
    const auto i = static_cast<size_t>(io_index);
    const TensorDesc& t = m.io[i];
    if (t.is_input) {
      *out = input_set_[i] ? shapes_[i] : t.shape;
      return true;
    }
    if (!all_inputs_set()) {
      // Like TensorRT: the declared shape, -1 where the engine cannot know yet.
      *out = t.shape;
      return true;
    }
    if (!infer()) {
      fail("tensor_shape('" + t.name + "'): " + inference_error_);
      return false;
    }
    *out = shapes_[i];
    // A data-dependent output's dynamic dims stay unknown until it has run, as in TensorRT.
    if (t.data_dependent)
      for (int32_t d = 0; d < t.shape.rank; ++d)
        if (t.shape.d[d] < 0) out->d[d] = -1;
    return true;
  }

  bool set_tensor_address(int32_t io_index, void* address) {
    auto traced = [&](const std::string* error) {
      state_->trace_call(TraceKind::kSetTensorAddress, id_, error, [&](TraceEvent& e) {
        e.io_index = io_index;
        e.address = address;
      });
      return error == nullptr;
    };
    const TensorDesc& t = state_->model.io[static_cast<size_t>(io_index)];
    // Null is accepted here, as TensorRT 8.6 does; enqueue refuses it (nvinfer/README.md).
    // TensorRT's rule for I/O addresses: at least 256-byte alignment.
    if (reinterpret_cast<uintptr_t>(address) % kIoAlignment != 0)
      return traced(fail("setTensorAddress('" + t.name + "'): the address is not " + std::to_string(kIoAlignment) +
                         "-byte aligned, as TensorRT requires of every I/O tensor address; bind aligned memory "
                         "(cudaMalloc's) or copy through an aligned buffer"));
    data_[static_cast<size_t>(io_index)] = address;
    address_set_[static_cast<size_t>(io_index)] = true;
    return traced(nullptr);
  }

  bool set_device_memory(void* memory, size_t size) {
    auto traced = [&](const std::string* error) {
      state_->trace_call(TraceKind::kSetDeviceMemory, id_, error, [&](TraceEvent& e) {
        e.address = memory;
        e.size = size;
      });
      return error == nullptr;
    };
    const uint64_t need = memory_.bytes;
    auto call = [&] { return "set_device_memory(" + std::to_string(size) + " bytes)"; };
    if (!user_managed_)
      return traced(fail(call() + ": this context owns its scratch memory; create it with user_managed_memory to "
                                  "supply memory"));
    if (size < need)
      return traced(fail(call() + ": engine '" + label() + "' needs " + std::to_string(need) +
                         " bytes (device_memory_size()) for its largest profile" + streaming_note()));
    if (memory == nullptr && size > 0) return traced(fail(call() + ": the memory is null"));
    if (reinterpret_cast<uintptr_t>(memory) % kScratchAlignment != 0)
      return traced(fail(call() + ": the memory is not " + std::to_string(kScratchAlignment) +
                         "-byte aligned (cudaMalloc's alignment; use aligned_alloc on the host)"));
    scratch_ = static_cast<uint8_t*>(memory);
    scratch_set_ = true;
    return traced(nullptr);
  }

  bool enqueue(StreamHandle stream) {
    auto traced = [&](const std::string* error, bool concurrent = false) {
      state_->trace_call(TraceKind::kEnqueue, id_, error, [&](TraceEvent& e) {
        e.stream = stream;
        // A refused concurrent call must not read the state the running enqueue owns.
        if (concurrent) return;
        e.profile = profile_;
        const Model& m = state_->model;
        for (size_t i = 0; i < m.io.size(); ++i)
          if (m.io[i].is_input) e.input_shapes.push_back(input_set_[i] ? shapes_[i] : m.io[i].shape);
      });
      return error == nullptr;
    };
    // Claimed with an atomic exchange so a second thread entering mid-enqueue is refused rather than racing.
    if (enqueueing_.exchange(true, std::memory_order_acquire)) {
      // The enqueue in progress owns last_error_'s next write; trace our own copy of the message.
      const std::string error =
          "enqueue: another enqueue on this context is still in progress; one context is never enqueued from two "
          "threads or streams at once (use one context per thread)";
      sink_.report(nvinfer1::ErrorCode::kINVALID_STATE, error);
      return traced(&error, /*concurrent=*/true);
    }
    failure_code_ = nvinfer1::ErrorCode::kFAILED_EXECUTION;
    const bool ok = enqueue_claimed(stream);
    if (!ok) sink_.report(failure_code_, last_error_);
    traced(ok ? nullptr : &last_error_);
    enqueueing_.store(false, std::memory_order_release);
    return ok;
  }

  // ---- helpers -------------------------------------------------------------------------------------------------

  // The IO index of `name`, or -1 after reporting that there is none.
  int32_t lookup(char const* name, const char* call) const {
    const int32_t i = state_->model.find_io(name);
    if (i < 0) sink_.report_unknown_tensor(call, label(), name);
    return i;
  }

  // True (after reporting and tracing the refusal) when a fault injected at `call` fires now.
  bool injected(Call call, TraceKind kind) {
    if (!detail::fault_fires(call, label())) return false;
    const std::string error = std::string("injected fault: ") + to_string(call);
    sink_.report(nvinfer1::ErrorCode::kINTERNAL_ERROR, error);
    state_->trace_call(kind, id_, &error, [](TraceEvent&) {});
    return true;
  }

  // Passes a rule's result through, reporting its refusal.
  bool reported(bool ok) const {
    if (!ok) sink_.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, last_error_copy());
    return ok;
  }

  std::string last_error_copy() const {
    std::lock_guard<std::mutex> lock(error_mutex_);
    return last_error_;
  }
  const std::string& label() const { return state_->model.label; }
  int32_t ordinal(int32_t io_index) const { return state_->input_ordinals[static_cast<size_t>(io_index)]; }

  // Sets last_error() and returns it, for the trace. `const` because tensor_shape() fails too.
  const std::string* fail(std::string message) const {
    std::lock_guard<std::mutex> lock(error_mutex_);
    last_error_ = std::move(message);
    return &last_error_;
  }
  bool refuse(std::string message) {
    fail(std::move(message));
    return false;
  }
  // For a refused memory size: how much of it is weight streaming's scratch, if the engine streams.
  std::string streaming_note() const {
    if (!memory_.streams_weights) return std::string();
    return ", of which " + std::to_string(memory_.streaming_bytes) +
           " bytes stage streamed weights (getWeightStreamingScratchMemorySize(): the budget is " +
           std::to_string(memory_.budget) + " of " + std::to_string(state_->streamable_bytes()) + " streamable bytes)";
  }
  const std::string* fail_engine_destroyed(const char* call) const {
    return fail(std::string(call) + ": engine '" + label() + "' was destroyed; destroy its contexts first");
  }

  // Counted, not scanned: the backend asks once per output, and an engine may have thousands of IO tensors.
  bool all_inputs_set() const { return inputs_set_ == state_->num_inputs; }

  // An input without dynamic dims has its one shape from the start, as in TensorRT: enqueue needs no setInputShape.
  void set_static_input_shapes() {
    const Model& m = state_->model;
    for (size_t i = 0; i < m.io.size(); ++i) {
      const TensorDesc& t = m.io[i];
      if (!t.is_input || input_set_[i] || !is_static(t.shape)) continue;
      shapes_[i] = t.shape;
      input_set_[i] = true;
      ++inputs_set_;
    }
  }

  // CUDA mode: switches and enqueues use the device only while its weights' device is current.
  bool on_weights_device(std::string* error) const {
    int current = -1;
    if (!device::current_device(&current, error)) return false;
    if (current == state_->device) return true;
    *error = "engine '" + label() + "' holds its weights on CUDA device " + std::to_string(state_->device) +
             ", but device " + std::to_string(current) + " is current; make device " + std::to_string(state_->device) +
             " current (cudaSetDevice) first";
    return false;
  }

  static constexpr char kOrderViolation[] =
      "an enqueue of this context ran on the device before the profile switch issued ahead of it: they were on "
      "different streams and nothing ordered them; switch and enqueue on the same stream, or make the enqueue's "
      "stream wait for the switch's (cudaStreamWaitEvent)";

  bool check_device_order() {
    if (*static_cast<volatile int*>(order_.flag) == 0) return true;
    *static_cast<volatile int*>(order_.flag) = 0;
    return refuse(std::string("enqueue: ") + kOrderViolation);
  }

  // The refusal a destruction records, or empty; then waits for the context's work and frees what it used.
  std::string release_device_order() {
    std::string error;
    if (order_.last_work != nullptr && !device::event_complete(order_.last_work)) {
      error =
          "destroyed while its work was still running on the device; wait for it (synchronize the stream of its "
          "last enqueue) before destroying the context";
      device::synchronize_event(order_.last_work);
    }
    if (order_.flag != nullptr && *static_cast<volatile int*>(order_.flag) != 0)
      error += std::string(error.empty() ? "" : "; and ") + kOrderViolation;
    order_.release();
    return error;
  }

  // CUDA mode only: the engine's kernels must run on the device holding its weights, over memory that device can
  // reach. The host mode has no counterpart (every pointer is host memory there); a backend that forgets to stage a
  // host tensor, or binds another GPU's memory, is refused here instead of faulting inside a kernel.
  bool check_device_binding() {
    const Model& m = state_->model;
    std::string error;
    if (!on_weights_device(&error)) return refuse("enqueue: " + error);
    for (size_t i = 0; i < m.io.size(); ++i) {
      if (is_empty(shapes_[i])) continue;
      device::PointerInfo info;
      if (!device::pointer_info(data_[i], &info, &error)) return refuse("enqueue: '" + m.io[i].name + "': " + error);
      if (info.kind == device::PointerKind::kHost)
        return refuse("enqueue: '" + m.io[i].name +
                      "' is bound to host memory, but this is a CUDA-mode engine: "
                      "bind device memory (stage host tensors through a device buffer)");
      if (info.kind == device::PointerKind::kDevice && info.device != state_->device)
        return refuse("enqueue: '" + m.io[i].name + "' is bound to memory of CUDA device " +
                      std::to_string(info.device) + ", but the engine runs on device " +
                      std::to_string(state_->device) + "; bind memory of device " + std::to_string(state_->device));
    }
    return true;
  }

  // Output shapes from the current input shapes, cached until an input shape or the profile changes.
  bool infer() const {
    if (!inferred_) {
      inference_ok_ = infer_shapes(state_->model, shapes_, &inference_error_);
      inferred_ = true;
    }
    return inference_ok_;
  }

  // The enqueue proper, with this context already claimed against concurrent enqueues.
  bool enqueue_claimed(StreamHandle stream) {
    const Model& m = state_->model;
    if (profile_ < 0) return refuse(std::string("enqueue: ") + kNoProfile);
    for (size_t i = 0; i < m.io.size(); ++i) {
      const TensorDesc& t = m.io[i];
      if (t.is_input && !input_set_[i])
        return refuse("enqueue: input '" + t.name + "' has no shape on profile " + std::to_string(profile_) +
                      "; call set_input_shape for every input (again after each profile switch)");
      if (!address_set_[i])
        return refuse("enqueue: " + std::string(t.is_input ? "input" : "output") + " '" + t.name +
                      "' has no address; call set_tensor_address for every IO tensor");
      if (t.data_dependent)
        return refuse("enqueue: output '" + t.name +
                      "' has a data-dependent shape, which needs an IOutputAllocator; this implementation has none");
    }
    if (!scratch_set_)
      return refuse(
          "enqueue: this context was created with user-managed memory and has none; call "
          "set_device_memory with at least " +
          std::to_string(memory_.bytes) + " bytes first");
    // In CUDA mode the device checks this rule itself, in device order (DeviceOrder): an enqueue on another stream
    // that was made to wait for the switch (cudaStreamWaitEvent) is right, and only the device can tell.
    if (!state_->device_mode() && switched_since_enqueue_ && stream != switch_stream_)
      return refuse(
          "enqueue: the last profile switch was issued on another stream and may still be running there; "
          "switch and enqueue on the same stream");
    if (!infer()) return refuse("enqueue: " + inference_error_);
    for (size_t i = 0; i < m.io.size(); ++i) {
      // TensorRT 8.6 refuses a null address at enqueueV3 even for an empty tensor (nvinfer/README.md).
      if (data_[i] == nullptr)
        return refuse("enqueue: '" + m.io[i].name + "' has shape " + shape_to_string(shapes_[i]) +
                      " but a null address; every IO tensor needs a non-null address, an empty one too");
      // TensorRT's rule for an IKVCacheUpdateLayer: its output shares the cache input's memory.
      const int32_t cache = m.aliased_input(static_cast<int32_t>(i));
      if (cache >= 0 && data_[i] != data_[static_cast<size_t>(cache)])
        return refuse("enqueue: output '" + m.io[i].name + "' is a KV-cache update of input '" +
                      m.io[static_cast<size_t>(cache)].name +
                      "' (getAliasedInputTensor) and must be bound to the same address; set_tensor_address it to "
                      "the input's memory");
    }
    if (state_->device_mode() && (!check_device_binding() || !check_device_order())) return false;
    bool capturing = false;
    if (state_->device_mode()) {
      std::string why;
      if (!device::stream_capturing(stream, &capturing, &why)) return refuse("enqueue: " + why);
      // TensorRT: "If the Engine is streaming weights, enqueueV3 will become synchronous, and the graph will not be
      // capturable." (Host mode has no capture.)
      if (capturing && memory_.streams_weights)
        return refuse("enqueue: the stream is capturing a CUDA graph, but engine '" + label() +
                      "' streams its weights (budget " + std::to_string(memory_.budget) + " of " +
                      std::to_string(state_->streamable_bytes()) +
                      " streamable bytes), which makes enqueueV3 synchronous and uncapturable; enqueue without "
                      "capture, or set a budget of at least the streamable size before creating contexts");
      if (capturing && deferred_work_)
        return refuse(
            "enqueue: the stream is capturing a CUDA graph, but this is the first enqueue since the input shapes or "
            "the optimization profile changed, whose shape-dependent work cannot be captured; enqueue once without "
            "capture first, then capture");
    }

    const uint64_t scratch_bytes = memory_.bytes;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (!state_->alive) {
        fail_engine_destroyed("enqueue");
        return false;
      }
      const uint64_t holder = state_->holder(profile_);
      if (holder != 0 && holder != id_)
        return refuse("enqueue: profile " + std::to_string(profile_) + " is held by " + context_name(holder) +
                      "; two live contexts must not use one profile (TensorRT <= 8.5 semantics): switch this "
                      "context to a profile no other context holds");
      for (const State::ScratchUse& use : state_->scratch_in_use)
        if (scratch_bytes > 0 && use.begin < scratch_ + scratch_bytes && scratch_ < use.end)
          return refuse("enqueue: its scratch memory overlaps that of " + context_name(use.context_id) +
                        ", which is enqueueing now; contexts sharing device memory must not run at the same "
                        "time");
      state_->holders[static_cast<size_t>(profile_)] = id_;
      if (scratch_bytes > 0) state_->scratch_in_use.push_back({scratch_, scratch_ + scratch_bytes, id_});
    }
    detail::run_enqueue_hook(label());

    for (size_t i = 0; i < m.intermediates.size(); ++i)
      data_[static_cast<size_t>(m.intermediate_id(i))] = scratch_ + state_->plan.intermediate_offsets[i];
    std::string error;
    bool ok = false;
    if (state_->device_mode()) {
      // Work from earlier calls' runtime errors is not ours to report: start from a clean slate.
      (void)device::launch_status(nullptr);
      const CudaKernels kernels(stream);
      ok = device::check_word(order_.word, profile_, order_.flag, stream, &error) &&
           run_ops(m, data_, shapes_, kernels, &error);
      // As in host mode, the whole region the engine asked for is touched, here by the device on the stream, so a
      // buffer smaller than device_memory_size() or already freed fails the copy and shows under compute-sanitizer.
      ok = ok && device::touch_ends(scratch_, static_cast<size_t>(scratch_bytes), stream, &error) &&
           device::launch_status(&error) && device::record_event(order_.last_work, stream, &error);
      // A streaming engine's enqueueV3 is synchronous (TensorRT): the host waits for the stream before returning.
      ok = ok && (!memory_.streams_weights || device::synchronize_stream(stream, &error));
    } else {
      ok = run_ops(m, data_, shapes_, host_kernels(), &error);
      // run_ops fails only on input data the shapes cannot reveal (an embedding id outside the vocabulary): the
      // caller's argument is wrong, which TensorRT's error codes call kINVALID_ARGUMENT.
      if (!ok) failure_code_ = nvinfer1::ErrorCode::kINVALID_ARGUMENT;
      if (scratch_bytes > 0) {
        // Touch both ends of the whole region the engine asked for, so a buffer smaller than device_memory_size()
        // or already freed shows up under AddressSanitizer even when the ops need less.
        scratch_[0] = 0;
        scratch_[scratch_bytes - 1] = 0;
      }
    }
    if (scratch_bytes > 0) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      auto& uses = state_->scratch_in_use;
      for (size_t i = 0; i < uses.size(); ++i)
        if (uses[i].context_id == id_) {
          uses[i] = uses.back();
          uses.pop_back();
          break;
        }
    }
    if (!ok) return refuse("enqueue: " + error);
    switched_since_enqueue_ = false;
    if (!capturing) deferred_work_ = false;
    return true;
  }

  const EngineImpl& engine_;
  std::shared_ptr<State> state_;
  ErrorSink sink_;
  const uint64_t id_;
  const bool user_managed_;
  const ContextMemory memory_;  // what it runs in, under the weight-streaming budget at its creation
  ScratchBuffer owned_scratch_;
  DeviceOrder order_;  // CUDA mode only
  int32_t profile_;    // -1: none (kNoProfile)
  StreamHandle switch_stream_ = nullptr;
  bool switched_since_enqueue_ = false;
  nvinfer1::ErrorCode failure_code_ = nvinfer1::ErrorCode::kFAILED_EXECUTION;  // what a failing enqueue reports
  // TensorRT does shape-dependent work on the first enqueue after the input shapes or the profile change, which a
  // CUDA graph cannot capture: set by those changes (and for a new context), cleared by an enqueue not captured.
  bool deferred_work_ = true;
  std::vector<bool> input_set_;        // by io index
  size_t inputs_set_ = 0;              // how many of input_set_ are true
  std::vector<bool> address_set_;      // by io index
  mutable std::vector<Shape> shapes_;  // by tensor id: inputs as set, the rest inferred
  std::vector<void*> data_;            // by tensor id: IO addresses, constants, intermediates in scratch
  mutable bool inferred_ = false;
  mutable bool inference_ok_ = false;
  mutable std::string inference_error_;
  uint8_t* scratch_ = nullptr;
  bool scratch_set_ = false;
  std::atomic<bool> enqueueing_{false};
  mutable std::mutex error_mutex_;
  mutable std::string last_error_;
};

}  // namespace

bool DeviceOrder::make(std::string* error) {
  void* memory = nullptr;
  const int32_t profile_zero = 0;
  if (!device::allocate(sizeof(int32_t), &memory, error)) return false;
  word = static_cast<int32_t*>(memory);
  if (device::upload(word, &profile_zero, sizeof(profile_zero), error) && device::allocate_mapped_flag(&flag, error) &&
      device::create_event(&last_work, error))
    return true;
  release();
  return false;
}

void DeviceOrder::release() {
  device::destroy_event(last_work);
  device::release_mapped_flag(flag);
  device::release(word);
  *this = DeviceOrder{};
}

nvinfer1::IExecutionContext* make_context(const EngineImpl& engine, std::shared_ptr<State> state, uint64_t id,
                                          bool user_managed, const ContextMemory& memory, ScratchBuffer owned,
                                          DeviceOrder order, int32_t profile) {
  retain(state->sink.recorder);
  return new (std::nothrow)
      ContextImpl(engine, std::move(state), id, user_managed, memory, std::move(owned), order, profile);
}

}  // namespace etrt::gpufree
