// An execution context's enqueue (context_impl.h): the checks of what the
// context was given, then of the device and the stream (CUDA mode), the claim
// of its profile and scratch against the engine's other contexts, and the run
// itself, on the device or on the host.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "context_device.h"
#include "context_impl.h"
#include "device_runtime.h"
#include "executor.h"
#include "kernels.h"

namespace etrt::gpufree {

bool ContextImpl::enqueue(StreamHandle stream) {
  auto traced = [&](const std::string* error, bool concurrent = false) {
    state_->trace_call(TraceKind::kEnqueue, id_, error, [&](TraceEvent& e) {
      e.stream = stream;
      // A refused concurrent call must not read the state the running enqueue owns.
      if (concurrent) return;
      e.profile = profile_;
      const Model& m = state_->model;
      for (size_t i = 0; i < m.io.size(); ++i)
        if (m.io[i].is_input) e.input_shapes.push_back(shapes_.input_shape(i));
    });
    return error == nullptr;
  };
  // Claimed with an atomic exchange so a second thread entering mid-enqueue is refused rather than racing.
  if (enqueueing_.exchange(true, std::memory_order_acquire)) {
    // The enqueue in progress owns last_error_'s next write; trace our own copy of the message.
    const std::string error =
        "enqueue: another enqueue on this context is still in progress; one context is never enqueued from two "
        "threads or streams at once (use one context per thread)";
    errors_.sink().report(nvinfer1::ErrorCode::kINVALID_STATE, error);
    return traced(&error, /*concurrent=*/true);
  }
  failure_code_ = nvinfer1::ErrorCode::kFAILED_EXECUTION;
  const bool ok = enqueue_claimed(stream);
  if (!ok) errors_.sink().report(failure_code_, errors_.last_error());
  traced(ok ? nullptr : &errors_.last_error());
  enqueueing_.store(false, std::memory_order_release);
  return ok;
}

bool ContextImpl::enqueue_claimed(StreamHandle stream) {
  bool capturing = false;
  if (!check_ready(stream) || !check_device(stream, &capturing)) return false;

  const uint64_t scratch_bytes = memory_.bytes;
  if (!claim_shared(scratch_bytes)) return false;
  detail::run_enqueue_hook(label());

  bindings_.place_intermediates(*state_);
  std::string error;
  const bool ok =
      state_->device_mode() ? run_on_device(stream, scratch_bytes, &error) : run_on_host(scratch_bytes, &error);
  if (scratch_bytes > 0) release_scratch();
  if (!ok) return refuse("enqueue: " + error);
  switched_since_enqueue_ = false;
  if (!capturing) deferred_work_ = false;
  return true;
}

bool ContextImpl::check_ready(StreamHandle stream) {
  const Model& m = state_->model;
  if (profile_ < 0) return refuse(std::string("enqueue: ") + kNoProfile);
  for (size_t i = 0; i < m.io.size(); ++i) {
    const TensorDesc& t = m.io[i];
    if (t.is_input && !shapes_.input_set(i))
      return refuse("enqueue: input '" + t.name + "' has no shape on profile " + std::to_string(profile_) +
                    "; call set_input_shape for every input (again after each profile switch)");
    if (!bindings_.address_set(i))
      return refuse("enqueue: " + std::string(t.is_input ? "input" : "output") + " '" + t.name +
                    "' has no address; call set_tensor_address for every IO tensor");
    if (t.data_dependent)
      return refuse("enqueue: output '" + t.name +
                    "' has a data-dependent shape, which needs an IOutputAllocator; this implementation has none");
  }
  if (!bindings_.has_scratch())
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
  if (!shapes_.infer()) return refuse("enqueue: " + shapes_.inference_error());
  const std::vector<Shape>& shapes = shapes_.all();
  for (size_t i = 0; i < m.io.size(); ++i) {
    // TensorRT 8.6 refuses a null address at enqueueV3 even for an empty tensor (nvinfer/README.md).
    if (bindings_.address(i) == nullptr)
      return refuse("enqueue: '" + m.io[i].name + "' has shape " + shape_to_string(shapes[i]) +
                    " but a null address; every IO tensor needs a non-null address, an empty one too");
    // TensorRT's rule for an IKVCacheUpdateLayer: its output shares the cache input's memory.
    const int32_t cache = m.aliased_input(static_cast<int32_t>(i));
    if (cache >= 0 && bindings_.address(i) != bindings_.address(static_cast<size_t>(cache)))
      return refuse("enqueue: output '" + m.io[i].name + "' is a KV-cache update of input '" +
                    m.io[static_cast<size_t>(cache)].name +
                    "' (getAliasedInputTensor) and must be bound to the same address; set_tensor_address it to "
                    "the input's memory");
  }
  return true;
}

bool ContextImpl::check_device(StreamHandle stream, bool* capturing) {
  if (!state_->device_mode()) return true;
  std::string refusal;
  if (!check_device_binding(*state_, shapes_.all(), bindings_.all(), &refusal) || !check_device_order(order_, &refusal))
    return refuse(std::move(refusal));
  std::string why;
  if (!device::stream_capturing(stream, capturing, &why)) return refuse("enqueue: " + why);
  // TensorRT: "If the Engine is streaming weights, enqueueV3 will become synchronous, and the graph will not be
  // capturable." (Host mode has no capture.)
  if (*capturing && memory_.streams_weights)
    return refuse("enqueue: the stream is capturing a CUDA graph, but engine '" + label() +
                  "' streams its weights (budget " + std::to_string(memory_.budget) + " of " +
                  std::to_string(state_->streamable_bytes()) +
                  " streamable bytes), which makes enqueueV3 synchronous and uncapturable; enqueue without "
                  "capture, or set a budget of at least the streamable size before creating contexts");
  if (*capturing && deferred_work_)
    return refuse(
        "enqueue: the stream is capturing a CUDA graph, but this is the first enqueue since the input shapes or "
        "the optimization profile changed, whose shape-dependent work cannot be captured; enqueue once without "
        "capture first, then capture");
  return true;
}

bool ContextImpl::claim_shared(uint64_t scratch_bytes) {
  uint8_t* const scratch = bindings_.scratch();
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->alive) {
    fail_engine_destroyed("enqueue");
    return false;
  }
  const bool exclusive = state_->model.exclusive_profiles;
  const uint64_t holder = exclusive ? state_->holder(profile_) : 0;
  if (holder != 0 && holder != id_)
    return refuse("enqueue: profile " + std::to_string(profile_) + " is held by " + context_name(holder) +
                  "; two live contexts must not use one profile (" + kExclusiveProfiles +
                  "): switch this context to a profile no other context holds");
  for (const State::ScratchUse& use : state_->scratch_in_use)
    if (scratch_bytes > 0 && use.begin < scratch + scratch_bytes && scratch < use.end)
      return refuse("enqueue: its scratch memory overlaps that of " + context_name(use.context_id) +
                    ", which is enqueueing now; contexts sharing device memory must not run at the same "
                    "time");
  if (exclusive) state_->holders[static_cast<size_t>(profile_)] = id_;
  if (scratch_bytes > 0) state_->scratch_in_use.push_back({scratch, scratch + scratch_bytes, id_});
  return true;
}

void ContextImpl::release_scratch() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto& uses = state_->scratch_in_use;
  for (size_t i = 0; i < uses.size(); ++i)
    if (uses[i].context_id == id_) {
      uses[i] = uses.back();
      uses.pop_back();
      break;
    }
}

bool ContextImpl::run_on_device(StreamHandle stream, uint64_t scratch_bytes, std::string* error) {
  const Model& m = state_->model;
  uint8_t* const scratch = bindings_.scratch();
  // Work from earlier calls' runtime errors is not ours to report: start from a clean slate.
  (void)device::launch_status(nullptr);
  const CudaKernels kernels(stream);
  bool ok = device::check_word(order_.word, profile_, order_.flag, stream, error) &&
            run_ops(m, bindings_.all(), shapes_.all(), kernels, error);
  // As in host mode, the whole region the engine asked for is touched, here by the device on the stream, so a
  // buffer smaller than device_memory_size() or already freed fails the copy and shows under compute-sanitizer.
  ok = ok && device::touch_ends(scratch, static_cast<size_t>(scratch_bytes), stream, error) &&
       device::launch_status(error) && device::record_event(order_.last_work, stream, error);
  // A streaming engine's enqueueV3 is synchronous (TensorRT): the host waits for the stream before returning.
  return ok && (!memory_.streams_weights || device::synchronize_stream(stream, error));
}

bool ContextImpl::run_on_host(uint64_t scratch_bytes, std::string* error) {
  uint8_t* const scratch = bindings_.scratch();
  const bool ok = run_ops(state_->model, bindings_.all(), shapes_.all(), host_kernels(), error);
  // run_ops fails only on input data the shapes cannot reveal (an embedding id outside the vocabulary): the
  // caller's argument is wrong, which TensorRT's error codes call kINVALID_ARGUMENT.
  if (!ok) failure_code_ = nvinfer1::ErrorCode::kINVALID_ARGUMENT;
  if (scratch_bytes > 0) {
    // Touch both ends of the whole region the engine asked for, so a buffer smaller than device_memory_size()
    // or already freed shows up under AddressSanitizer even when the ops need less.
    scratch[0] = 0;
    scratch[scratch_bytes - 1] = 0;
  }
  return ok;
}

}  // namespace etrt::gpufree
