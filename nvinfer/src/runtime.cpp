// The GPU-free NvInfer implementation: the runtime (createInferRuntime,
// deserializeCudaEngine) and the engine (ICudaEngine). See ../README.md.

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>

#include "device_runtime.h"
#include "engine_impl.h"
#include "engine_state.h"
#include "etrt_gpufree/faults.h"
#include "etrt_gpufree/trace.h"
#include "format.h"
#include "model.h"

namespace etrt::gpufree {

namespace {

std::atomic<uint64_t> g_next_engine_id{1};
std::atomic<uint64_t> g_next_context_id{1};

nvinfer1::DataType to_nv(DataType t) {
  switch (t) {
    case DataType::kFloat32: return nvinfer1::DataType::kFLOAT;
    case DataType::kFloat16: return nvinfer1::DataType::kHALF;
    case DataType::kBFloat16: return nvinfer1::DataType::kBF16;
    case DataType::kInt8: return nvinfer1::DataType::kINT8;
    case DataType::kUInt8: return nvinfer1::DataType::kUINT8;
    case DataType::kInt32: return nvinfer1::DataType::kINT32;
    case DataType::kInt64: return nvinfer1::DataType::kINT64;
    case DataType::kBool: return nvinfer1::DataType::kBOOL;
  }
  return nvinfer1::DataType::kFLOAT;
}

// A runtime's plugin registry: loadLibrary dlopens the library, whose plugins register themselves as it loads (as
// TensorRT's REGISTER_TENSORRT_PLUGIN does); a library that does not load is reported and yields nullptr. Libraries
// stay loaded for the life of the process, as TensorRT's do.
class PluginRegistryImpl final : public nvinfer1::IPluginRegistry {
 public:
  explicit PluginRegistryImpl(const ErrorSink& sink) : sink_(sink) {}
  nvinfer1::PluginLibraryHandle loadLibrary(nvinfer1::AsciiChar const* path) noexcept override {
    if (path == nullptr || *path == '\0') {
      sink_.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, "loadLibrary: no plugin library path");
      return nullptr;
    }
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* reason = dlerror();
      sink_.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT,
                   std::string("loadLibrary: could not load plugin library '") + path +
                       "': " + (reason != nullptr ? reason : "dlopen failed"));
    }
    return handle;
  }

 private:
  const ErrorSink& sink_;
};

class RuntimeImpl final : public nvinfer1::IRuntime {
 public:
  explicit RuntimeImpl(nvinfer1::ILogger* logger) : registry_(sink_) { sink_.logger = logger; }
  ~RuntimeImpl() noexcept override { release(sink_.recorder); }

  void setEngineHostCodeAllowed(bool allowed) noexcept override { host_code_allowed_ = allowed; }
  bool getEngineHostCodeAllowed() const noexcept override { return host_code_allowed_; }
  nvinfer1::IPluginRegistry& getPluginRegistry() noexcept override { return registry_; }

  nvinfer1::ICudaEngine* deserializeCudaEngine(void const* blob, std::size_t size) noexcept override {
    if (blob == nullptr || size == 0) {
      sink_.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, "deserializeCudaEngine: no engine bytes (null or empty)");
      return nullptr;
    }
    return EngineImpl::deserialize(blob, size, sink_);
  }

  void setErrorRecorder(nvinfer1::IErrorRecorder* recorder) noexcept override { sink_.set_recorder(recorder); }
  nvinfer1::IErrorRecorder* getErrorRecorder() const noexcept override { return sink_.recorder; }
  nvinfer1::ILogger* getLogger() const noexcept override { return sink_.logger; }

 private:
  ErrorSink sink_;
  PluginRegistryImpl registry_;
  bool host_code_allowed_ = false;
};

}  // namespace

void ErrorSink::report(nvinfer1::ErrorCode code, const std::string& message) const {
  if (recorder != nullptr) {
    recorder->reportError(code, message.c_str());
  } else if (logger != nullptr) {
    logger->log(code == nvinfer1::ErrorCode::kINTERNAL_ERROR ? nvinfer1::ILogger::Severity::kINTERNAL_ERROR
                                                             : nvinfer1::ILogger::Severity::kERROR,
                message.c_str());
  }
}

void ErrorSink::set_recorder(nvinfer1::IErrorRecorder* next) {
  retain(next);
  release(recorder);
  recorder = next;
}

void ErrorSink::report_unknown_tensor(const char* call, const std::string& label, const char* name) const {
  report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, std::string(call) + ": engine '" + label +
                                                     "' has no IO tensor named '" +
                                                     (name != nullptr ? name : "(null)") + "'");
}

void retain(nvinfer1::IErrorRecorder* recorder) {
  if (recorder != nullptr) recorder->incRefCount();
}
void release(nvinfer1::IErrorRecorder* recorder) {
  if (recorder != nullptr) recorder->decRefCount();
}

EngineImpl::State::~State() {
  for (void* p : device_constants) device::release(p);
}

void ScratchFree::operator()(uint8_t* p) const {
  if (kind == MemoryKind::kDevice) {
    device::release(p);
  } else {
    ::operator delete[](p, std::align_val_t{kScratchAlignment});
  }
}

EngineImpl::EngineImpl(std::shared_ptr<State> state) : state_(std::move(state)) {}

EngineImpl::~EngineImpl() noexcept {
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
  if (live > 0) state_->sink.report(nvinfer1::ErrorCode::kINVALID_STATE, error);
  state_->trace_call(TraceKind::kDestroyEngine, 0, live > 0 ? &error : nullptr, [](TraceEvent&) {});
  release(state_->sink.recorder);
  state_->sink.recorder = nullptr;
}

int32_t EngineImpl::lookup(char const* name, const char* call) const {
  const int32_t i = state_->model.find_io(name);
  if (i < 0) state_->sink.report_unknown_tensor(call, state_->model.label, name);
  return i;
}

int32_t EngineImpl::getNbIOTensors() const noexcept { return state_->model.num_io(); }

char const* EngineImpl::getIOTensorName(int32_t index) const noexcept {
  if (index < 0 || index >= state_->model.num_io()) return nullptr;
  return state_->model.io[static_cast<size_t>(index)].name.c_str();
}

nvinfer1::TensorIOMode EngineImpl::getTensorIOMode(char const* tensorName) const noexcept {
  // TensorRT answers kNONE for a name that is not an IO tensor, without reporting an error.
  const int32_t i = state_->model.find_io(tensorName);
  if (i < 0) return nvinfer1::TensorIOMode::kNONE;
  return state_->model.io[static_cast<size_t>(i)].is_input ? nvinfer1::TensorIOMode::kINPUT
                                                           : nvinfer1::TensorIOMode::kOUTPUT;
}

nvinfer1::DataType EngineImpl::getTensorDataType(char const* tensorName) const noexcept {
  const int32_t i = lookup(tensorName, "getTensorDataType");
  return i < 0 ? nvinfer1::DataType::kFLOAT : to_nv(state_->model.io[static_cast<size_t>(i)].dtype);
}

nvinfer1::Dims EngineImpl::getTensorShape(char const* tensorName) const noexcept {
  const int32_t i = lookup(tensorName, "getTensorShape");
  return i < 0 ? invalid_dims() : to_dims(state_->model.io[static_cast<size_t>(i)].shape);
}

bool EngineImpl::isShapeInferenceIO(char const* tensorName) const noexcept {
  const int32_t i = lookup(tensorName, "isShapeInferenceIO");
  return i >= 0 && state_->model.io[static_cast<size_t>(i)].is_shape_tensor;
}

nvinfer1::TensorLocation EngineImpl::getTensorLocation(char const* tensorName) const noexcept {
  const int32_t i = lookup(tensorName, "getTensorLocation");
  if (i < 0) return nvinfer1::TensorLocation::kDEVICE;
  const TensorDesc& t = state_->model.io[static_cast<size_t>(i)];
  // Shape-tensor inputs live on the host, as in TensorRT; so do tensors the builder placed there.
  return t.is_shape_tensor || t.on_host ? nvinfer1::TensorLocation::kHOST : nvinfer1::TensorLocation::kDEVICE;
}

nvinfer1::TensorFormat EngineImpl::getTensorFormat(char const* tensorName, int32_t profileIndex) const noexcept {
  (void)profileIndex;
  (void)lookup(tensorName, "getTensorFormat");
  return nvinfer1::TensorFormat::kLINEAR;  // every tensor of this implementation is dense row-major
}

char const* EngineImpl::getTensorFormatDesc(char const* tensorName, int32_t profileIndex) const noexcept {
  (void)profileIndex;
  if (lookup(tensorName, "getTensorFormatDesc") < 0) return nullptr;
  return "Row major linear format";
}

char const* EngineImpl::getAliasedInputTensor(char const* tensorName) const noexcept {
  const int32_t i = lookup(tensorName, "getAliasedInputTensor");
  if (i < 0) return nullptr;
  const int32_t input = state_->model.aliased_input(i);
  return input < 0 ? nullptr : state_->model.io[static_cast<size_t>(input)].name.c_str();
}

int32_t EngineImpl::getNbOptimizationProfiles() const noexcept {
  return static_cast<int32_t>(state_->model.profiles.size());
}

nvinfer1::Dims EngineImpl::getProfileShape(char const* tensorName, int32_t profileIndex,
                                           nvinfer1::OptProfileSelector select) const noexcept {
  const Model& m = state_->model;
  const int32_t i = lookup(tensorName, "getProfileShape");
  if (i < 0) return invalid_dims();
  const int32_t n = getNbOptimizationProfiles();
  if (profileIndex < 0 || profileIndex >= n) {
    state_->sink.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT,
                        "getProfileShape('" + m.io[static_cast<size_t>(i)].name + "', " + std::to_string(profileIndex) +
                            "): engine '" + m.label + "' has " + std::to_string(n) + " profile(s)");
    return invalid_dims();
  }
  if (!m.io[static_cast<size_t>(i)].is_input) {
    state_->sink.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT,
                        "getProfileShape('" + m.io[static_cast<size_t>(i)].name + "'): not an input");
    return invalid_dims();
  }
  const InputRange& r = m.profiles[static_cast<size_t>(profileIndex)]
                                  [static_cast<size_t>(state_->input_ordinals[static_cast<size_t>(i)])];
  switch (select) {
    case nvinfer1::OptProfileSelector::kMIN: return to_dims(r.min);
    case nvinfer1::OptProfileSelector::kOPT: return to_dims(r.opt);
    case nvinfer1::OptProfileSelector::kMAX: return to_dims(r.max);
  }
  return invalid_dims();
}

// Stateful, as TensorRT documents: it "returns different values based on ... setWeightStreamingBudgetV2()", since
// a context of a streaming engine needs the streaming scratch too (State::context_memory).
int64_t EngineImpl::getDeviceMemorySizeV2() const noexcept {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->context_memory(state_->weight_streaming_budget));
}

int64_t EngineImpl::getDeviceMemorySizeForProfileV2(int32_t profileIndex) const noexcept {
  if (profileIndex < 0 || profileIndex >= getNbOptimizationProfiles()) {
    state_->sink.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT,
                        "getDeviceMemorySizeForProfileV2(" + std::to_string(profileIndex) + "): no such profile");
    return 0;
  }
  // The memory plan is sized for the largest profile; every profile gets that much (the streaming scratch included).
  return getDeviceMemorySizeV2();
}

int64_t EngineImpl::getStreamableWeightsSize() const noexcept { return state_->streamable_bytes(); }

bool EngineImpl::setWeightStreamingBudgetV2(int64_t gpuMemoryBudget) noexcept {
  const int64_t streamable = getStreamableWeightsSize();
  std::string error;
  nvinfer1::ErrorCode code = nvinfer1::ErrorCode::kINVALID_ARGUMENT;
  if (detail::fault_fires(Call::kSetWeightStreamingBudgetV2, state_->model.label)) {
    error = "setWeightStreamingBudgetV2: injected fault";
    code = nvinfer1::ErrorCode::kINTERNAL_ERROR;
  } else if (streamable == 0) {
    error = "setWeightStreamingBudgetV2: engine '" + state_->model.label +
            "' was not built with weight streaming (getStreamableWeightsSize() is 0)";
  } else if (gpuMemoryBudget < 0 || gpuMemoryBudget > streamable) {
    error = "setWeightStreamingBudgetV2(" + std::to_string(gpuMemoryBudget) + "): the budget must be in [0, " +
            std::to_string(streamable) + "], the engine's streamable weight bytes";
  } else {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->live_contexts > 0) {
      code = nvinfer1::ErrorCode::kINVALID_STATE;
      error = "setWeightStreamingBudgetV2: engine '" + state_->model.label + "' has " +
              std::to_string(state_->live_contexts) +
              " execution context(s); the budget can change only before the first is created or after the last "
              "is destroyed";
    } else {
      state_->weight_streaming_budget = gpuMemoryBudget;
    }
  }
  if (!error.empty()) state_->sink.report(code, error);
  state_->trace_call(TraceKind::kSetWeightStreamingBudget, 0, error.empty() ? nullptr : &error,
                     [&](TraceEvent& e) { e.size = static_cast<uint64_t>(gpuMemoryBudget < 0 ? 0 : gpuMemoryBudget); });
  return error.empty();
}

int64_t EngineImpl::getWeightStreamingBudgetV2() const noexcept {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->weight_streaming_budget;
}

// Half the streamable bytes: this implementation has no device to size a budget against.
int64_t EngineImpl::getWeightStreamingAutomaticBudget() const noexcept { return getStreamableWeightsSize() / 2; }

// 0 with every weight resident; otherwise what each context needs to stage streamed weights (State::streaming_scratch).
int64_t EngineImpl::getWeightStreamingScratchMemorySize() const noexcept {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->streaming_scratch(state_->weight_streaming_budget));
}

void EngineImpl::setErrorRecorder(nvinfer1::IErrorRecorder* recorder) noexcept { state_->sink.set_recorder(recorder); }
nvinfer1::IErrorRecorder* EngineImpl::getErrorRecorder() const noexcept { return state_->sink.recorder; }

bool EngineImpl::runs_on_host() const { return !state_->device_mode(); }

bool EngineImpl::shares_profiles() const { return !state_->model.exclusive_profiles; }

bool EngineImpl::prepare_device(std::string* error) {
  State& s = *state_;
  int current = -1;
  if (!device::current_device(&current, error)) return false;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.device >= 0) {
    if (current == s.device) return true;
    *error = "engine '" + s.model.label + "' holds its weights on CUDA device " + std::to_string(s.device) +
             ", but device " + std::to_string(current) + " is current; make device " + std::to_string(s.device) +
             " current (cudaSetDevice) first";
    return false;
  }
  std::vector<void*> uploaded(s.model.constants.size(), nullptr);
  for (size_t i = 0; i < s.model.constants.size(); ++i) {
    const std::vector<float>& values = s.model.constants[i].values;
    const size_t bytes = values.size() * sizeof(float);
    if (!device::allocate(bytes, &uploaded[i], error) || !device::upload(uploaded[i], values.data(), bytes, error)) {
      for (void* p : uploaded) device::release(p);
      *error = "weights of engine '" + s.model.label + "' to device " + std::to_string(current) + ": " + *error;
      return false;
    }
  }
  s.device_constants = std::move(uploaded);
  s.device = current;
  return true;
}

nvinfer1::IExecutionContext* EngineImpl::createExecutionContext(
    nvinfer1::ExecutionContextAllocationStrategy strategy) noexcept {
  const bool user_managed = strategy == nvinfer1::ExecutionContextAllocationStrategy::kUSER_MANAGED;
  const bool on_device = state_->device_mode();
  bool counted = false;  // in live_contexts, which freezes the budget
  auto refuse = [&](nvinfer1::ErrorCode code, const std::string& why) -> nvinfer1::IExecutionContext* {
    if (counted) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      --state_->live_contexts;
    }
    const std::string error = "createExecutionContext: " + why;
    state_->sink.report(code, error);
    state_->trace_call(TraceKind::kCreateContext, 0, &error,
                       [&](TraceEvent& e) { e.user_managed_memory = user_managed; });
    return nullptr;
  };
  if (detail::fault_fires(Call::kCreateExecutionContext, state_->model.label))
    return refuse(nvinfer1::ErrorCode::kINTERNAL_ERROR, "injected fault");
  if (strategy != nvinfer1::ExecutionContextAllocationStrategy::kSTATIC &&
      strategy != nvinfer1::ExecutionContextAllocationStrategy::kON_PROFILE_CHANGE && !user_managed)
    return refuse(nvinfer1::ErrorCode::kINVALID_ARGUMENT,
                  "unknown allocation strategy " + std::to_string(static_cast<int32_t>(strategy)));
  // Counted first, so the budget -- and with it the memory this context needs -- cannot change from here on.
  ContextMemory needs;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->live_contexts;
    counted = true;
    needs.budget = state_->weight_streaming_budget;
    needs.bytes = state_->context_memory(needs.budget);
    needs.streaming_bytes = state_->streaming_scratch(needs.budget);
    needs.streams_weights = state_->streams_weights(needs.budget);
  }
  std::string error;
  if (on_device && !prepare_device(&error)) return refuse(nvinfer1::ErrorCode::kFAILED_INITIALIZATION, error);
  ScratchBuffer owned(nullptr, ScratchFree{state_->model.memory_kind});
  const uint64_t bytes = needs.bytes;
  // kON_PROFILE_CHANGE allocates like kSTATIC here: the memory plan is the same for every profile.
  if (!user_managed && bytes > 0) {
    void* memory = nullptr;
    if (on_device) {
      if (device::allocate(static_cast<size_t>(bytes), &memory, &error)) owned.reset(static_cast<uint8_t*>(memory));
    } else {
      owned.reset(static_cast<uint8_t*>(
          ::operator new[](static_cast<size_t>(bytes), std::align_val_t{kScratchAlignment}, std::nothrow)));
    }
    if (!owned)
      return refuse(nvinfer1::ErrorCode::kFAILED_ALLOCATION,
                    "cannot allocate " + std::to_string(bytes) + " bytes of " + (on_device ? "device" : "scratch") +
                        " memory" + (error.empty() ? "" : " (" + error + ")") +
                        "; create the context with kUSER_MANAGED and supply it");
  }
  DeviceOrder order;
  if (on_device && !order.make(&error)) return refuse(nvinfer1::ErrorCode::kFAILED_INITIALIZATION, error);
  const uint64_t id = g_next_context_id.fetch_add(1, std::memory_order_relaxed);
  int32_t profile = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    // Profile 0. With exclusive profiles (TensorRT 8.6 without kPROFILE_SHARING_0806) only if no live context holds
    // it; else none, until the caller chooses one (as TensorRT 8.6 does).
    if (state_->model.exclusive_profiles) {
      if (state_->holders[0] == 0) state_->holders[0] = id;
      profile = state_->holders[0] == id ? 0 : -1;
    }
    // At most one enqueue per context is in flight: room for all of them now keeps enqueue from allocating.
    state_->scratch_in_use.reserve(static_cast<size_t>(state_->live_contexts));
  }
  nvinfer1::IExecutionContext* context =
      make_context(*this, state_, id, user_managed, needs, std::move(owned), order, profile);
  state_->trace_call(TraceKind::kCreateContext, id, nullptr, [&](TraceEvent& e) {
    e.profile = profile;
    e.user_managed_memory = user_managed;
  });
  return context;
}

EngineImpl* EngineImpl::deserialize(const void* data, size_t size, const ErrorSink& sink) {
  auto state = std::make_shared<State>();
  std::string error;
  if (!deserialize_model(data, size, &state->model, &error) || !plan_memory(state->model, &state->plan, &error)) {
    sink.report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, "deserializeCudaEngine: " + error);
    return nullptr;
  }
  // Once the bytes are parsed the engine's label is known, so a fault can be scoped to it like every other.
  if (detail::fault_fires(Call::kDeserializeCudaEngine, state->model.label)) {
    sink.report(nvinfer1::ErrorCode::kINTERNAL_ERROR, "injected fault: deserializeCudaEngine");
    return nullptr;
  }
  state->sink = sink;
  retain(state->sink.recorder);
  state->input_ordinals = state->model.input_ordinals();
  for (const TensorDesc& t : state->model.io) state->num_inputs += t.is_input ? 1 : 0;
  state->id = g_next_engine_id.fetch_add(1, std::memory_order_relaxed);
  state->trace = detail::trace_record(state->model.label);
  state->tracing.store(state->model.tracing, std::memory_order_relaxed);
  state->holders.assign(state->model.profiles.size(), 0);
  state->weight_streaming_budget = state->streamable_bytes();  // every weight resident: no streaming
  state->trace_call(TraceKind::kLoadEngine, 0, nullptr,
                    [&](TraceEvent& e) { e.size = state->plan.device_memory_size; });
  return new (std::nothrow) EngineImpl(std::move(state));
}

}  // namespace etrt::gpufree

extern "C" ETRT_GPUFREE_API void* etrt_gpufree_createInferRuntime(void* logger, int32_t version) noexcept {
  auto* log = static_cast<nvinfer1::ILogger*>(logger);
  if (etrt::gpufree::detail::fault_fires(etrt::gpufree::Call::kCreateInferRuntime, std::string())) {
    if (log != nullptr) log->log(nvinfer1::ILogger::Severity::kINTERNAL_ERROR, "injected fault: createInferRuntime");
    return nullptr;
  }
  if (version != NV_TENSORRT_VERSION) {
    if (log != nullptr)
      log->log(nvinfer1::ILogger::Severity::kERROR,
               ("createInferRuntime: the caller was compiled against NvInfer headers of version " +
                std::to_string(version) + ", this library is " + std::to_string(NV_TENSORRT_VERSION))
                   .c_str());
    return nullptr;
  }
  return static_cast<nvinfer1::IRuntime*>(new (std::nothrow) etrt::gpufree::RuntimeImpl(log));
}

extern "C" ETRT_GPUFREE_API bool etrt_gpufree_engineRunsOnHost(nvinfer1::ICudaEngine const* engine) noexcept {
  const auto* impl = dynamic_cast<const etrt::gpufree::EngineImpl*>(engine);
  return impl != nullptr && impl->runs_on_host();
}

extern "C" ETRT_GPUFREE_API bool etrt_gpufree_engineSharesProfiles(nvinfer1::ICudaEngine const* engine) noexcept {
  const auto* impl = dynamic_cast<const etrt::gpufree::EngineImpl*>(engine);
  return impl != nullptr && impl->shares_profiles();
}
