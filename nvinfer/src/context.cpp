// The GPU-free NvInfer implementation's execution context (context_impl.h):
// the NvInfer calls, each resolving tensor names to IO indices, checking for an
// injected fault and running the call's rule, and the context's creation and
// destruction.

#include <mutex>
#include <string>

#include "context_device.h"
#include "context_impl.h"

namespace etrt::gpufree {

ContextImpl::ContextImpl(const EngineImpl& engine, std::shared_ptr<State> state, uint64_t id, bool user_managed,
                         const ContextMemory& memory, ScratchBuffer owned, DeviceOrder order, int32_t profile)
    : engine_(engine),
      state_(std::move(state)),
      errors_(state_->sink),
      id_(id),
      user_managed_(user_managed),
      memory_(memory),
      owned_scratch_(std::move(owned)),
      order_(order),
      profile_(profile),
      shapes_(*state_),
      bindings_(*state_) {
  if (!user_managed_) bindings_.set_scratch(owned_scratch_.get());
}

ContextImpl::~ContextImpl() noexcept {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (uint64_t& h : state_->holders)
      if (h == id_) h = 0;
    --state_->live_contexts;
  }
  const std::string error = state_->device_mode() ? release_device_order(order_) : std::string();
  if (!error.empty()) errors_.sink().report(nvinfer1::ErrorCode::kINVALID_STATE, "~IExecutionContext: " + error);
  state_->trace_call(TraceKind::kDestroyContext, id_, error.empty() ? nullptr : &error, [](TraceEvent&) {});
  release(errors_.sink().recorder);
}

// ---- NvInfer ------------------------------------------------------------------------------------------------

void ContextImpl::setErrorRecorder(nvinfer1::IErrorRecorder* recorder) noexcept {
  errors_.sink().set_recorder(recorder);
}
nvinfer1::IErrorRecorder* ContextImpl::getErrorRecorder() const noexcept { return errors_.sink().recorder; }
nvinfer1::ICudaEngine const& ContextImpl::getEngine() const noexcept { return engine_; }

bool ContextImpl::setOptimizationProfileAsync(int32_t profileIndex, cudaStream_t stream) noexcept {
  if (injected(Call::kSetOptimizationProfileAsync, TraceKind::kSetOptimizationProfile)) return false;
  return reported(set_optimization_profile(profileIndex, stream));
}
int32_t ContextImpl::getOptimizationProfile() const noexcept { return profile_; }

bool ContextImpl::setInputShape(char const* tensorName, nvinfer1::Dims const& dims) noexcept {
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

nvinfer1::Dims ContextImpl::getTensorShape(char const* tensorName) const noexcept {
  const int32_t i = lookup(tensorName, "getTensorShape");
  if (i < 0) return invalid_dims();
  if (detail::fault_fires(Call::kGetTensorShape, label())) {
    errors_.sink().report(nvinfer1::ErrorCode::kINTERNAL_ERROR, "injected fault: getTensorShape");
    return invalid_dims();
  }
  Shape shape;
  std::string error;
  if (!shapes_.tensor_shape(i, &shape, &error)) {
    fail(std::move(error));
    errors_.sink().report(nvinfer1::ErrorCode::kINVALID_ARGUMENT, errors_.last_error_copy());
    return invalid_dims();
  }
  return to_dims(shape);
}

bool ContextImpl::setTensorAddress(char const* tensorName, void* data) noexcept {
  const int32_t i = lookup(tensorName, "setTensorAddress");
  if (i < 0) return false;
  if (injected(Call::kSetTensorAddress, TraceKind::kSetTensorAddress)) return false;
  return reported(set_tensor_address(i, data));
}
void const* ContextImpl::getTensorAddress(char const* tensorName) const noexcept {
  const int32_t i = lookup(tensorName, "getTensorAddress");
  return i < 0 ? nullptr : bindings_.address(static_cast<size_t>(i));
}

void ContextImpl::setDeviceMemoryV2(void* memory, int64_t size) noexcept {
  if (injected(Call::kSetDeviceMemoryV2, TraceKind::kSetDeviceMemory)) return;
  if (size < 0) {
    reported(refuse("setDeviceMemoryV2: negative size " + std::to_string(size)));
    return;
  }
  reported(set_device_memory(memory, static_cast<size_t>(size)));
}

bool ContextImpl::enqueueV3(cudaStream_t stream) noexcept {
  if (injected(Call::kEnqueueV3, TraceKind::kEnqueue)) return false;
  return enqueue(stream);  // reports itself: a refused concurrent call must not read last_error_
}

// ---- helpers --------------------------------------------------------------------------------------------------

int32_t ContextImpl::lookup(char const* name, const char* call) const {
  const int32_t i = state_->model.find_io(name);
  if (i < 0) errors_.sink().report_unknown_tensor(call, label(), name);
  return i;
}

bool ContextImpl::injected(Call call, TraceKind kind) {
  if (!detail::fault_fires(call, label())) return false;
  const std::string error = std::string("injected fault: ") + to_string(call);
  errors_.sink().report(nvinfer1::ErrorCode::kINTERNAL_ERROR, error);
  state_->trace_call(kind, id_, &error, [](TraceEvent&) {});
  return true;
}

nvinfer1::IExecutionContext* make_context(const EngineImpl& engine, std::shared_ptr<EngineImpl::State> state,
                                          uint64_t id, bool user_managed, const ContextMemory& memory,
                                          ScratchBuffer owned, DeviceOrder order, int32_t profile) {
  retain(state->sink.recorder);
  return new (std::nothrow)
      ContextImpl(engine, std::move(state), id, user_managed, memory, std::move(owned), order, profile);
}

}  // namespace etrt::gpufree
