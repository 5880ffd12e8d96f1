// Device plumbing over the CUDA runtime (ETRT_WITH_CUDA): the stream, staging,
// in-flight event and current-device handling device.h describes. Host
// engines never reach a CUDA call here: every DeviceCall method checks
// state_.device first.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <executorch/runtime/core/portable_type/device.h>
#include <executorch/runtime/platform/log.h>

#include "backend/device.h"
#include "backend/nvtx_range.h"
#include "backend/scratch_pool_policy.h"
#include "backend/staging.h"
#include "common/error.h"
#include "etrt/stream_guard.h"

namespace etrt::backend {

namespace {

cudaStream_t as_stream(engine::StreamHandle s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }

// "cudaErrorInvalidValue (invalid argument)"; also clears the thread's last error, so a failure reported here
// does not resurface from an unrelated later call (sticky errors stay regardless).
std::string cuda_text(cudaError_t status) {
  (void)cudaGetLastError();
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

// The special handles name a stream relative to the calling thread or the current device; they have no device
// of their own to check.
bool is_special_stream(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

// Where `data` lives, as device `delegate_device` sees it. ExecuTorch 1.5 tensors can say so themselves
// (Tensor::device_type()); a tensor that says CPU may still point at device memory (a runner's buffer shared through
// an unplanned input or set_output), so CUDA is asked then. Asked on every call: a cached answer would go stale when
// a runner registers a buffer (cudaHostRegister turns pageable memory pinned at the same address) or an address is
// reused.
MemoryPlace place_of_pointer(const executorch::aten::Tensor& t, const void* data, int delegate_device, int* device) {
  *device = -1;
  if (t.device_type() == executorch::runtime::etensor::DeviceType::CUDA) {
    *device = t.device_index();
    return *device == delegate_device ? MemoryPlace::kDevice : MemoryPlace::kOtherDevice;
  }
  cudaPointerAttributes attributes{};
  if (data == nullptr || cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    // A pointer CUDA knows nothing about is host memory; the failed query leaves an error to clear.
    (void)cudaGetLastError();
    return MemoryPlace::kPageableHost;
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      *device = attributes.device;
      return attributes.device == delegate_device ? MemoryPlace::kDevice : MemoryPlace::kOtherDevice;
    case cudaMemoryTypeManaged:
      return MemoryPlace::kManaged;
    case cudaMemoryTypeHost:
      // Whether the device addresses it at this address is the device's trait (EngineReach::pinned_host): with
      // cudaDevAttrCanUseHostPointerForRegisteredMem every pinned buffer has one address on both sides.
      return MemoryPlace::kPinnedHost;
    default:
      return MemoryPlace::kPageableHost;
  }
}

bool is_host(MemoryPlace place) { return place == MemoryPlace::kPageableHost || place == MemoryPlace::kPinnedHost; }

// What `device` says about reaching host memory. An attribute CUDA does not answer reads as "no": the device is then
// treated as discrete, which stages host memory and is always correct.
DeviceTraits query_device_traits(int device) {
  const auto ask = [device](cudaDeviceAttr attribute) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return value != 0;
  };
  DeviceTraits traits;
  traits.integrated = ask(cudaDevAttrIntegrated);
  traits.host_pointer_for_registered_mem = ask(cudaDevAttrCanUseHostPointerForRegisteredMem);
  traits.pageable_memory_access = ask(cudaDevAttrPageableMemoryAccess);
  return traits;
}

}  // namespace

// ---- DeviceBuffer ----

void DeviceBuffer::release() {
  if (kind_ == engine::MemoryKind::kDevice) {
    if (data_ != nullptr) (void)cudaFree(data_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
}

Error DeviceBuffer::allocate(engine::MemoryKind kind, size_t bytes, Diagnostic& why) {
  release();
  kind_ = kind;
  // Never null, even for 0 bytes: TensorRT refuses a null tensor address (engine::io_address_aligned).
  const size_t allocated = bytes == 0 ? 256 : bytes;
  if (kind == engine::MemoryKind::kDevice) {
    const cudaError_t status = cudaMalloc(&data_, allocated);
    if (status != cudaSuccess) {
      data_ = nullptr;
      // Out of memory is MemoryAllocationFailed; anything else (a sticky error, no device) is CUDA failing.
      return fail(why, status == cudaErrorMemoryAllocation ? Error::MemoryAllocationFailed : Error::Internal,
                  "could not allocate %zu bytes of device memory (cudaMalloc): %s", bytes, cuda_text(status).c_str());
    }
  } else {
    // 256-byte alignment matches what cudaMalloc gives, so host and device engines see the same guarantees.
    data_ = std::aligned_alloc(256, (allocated + 255) / 256 * 256);
    if (data_ == nullptr)
      return fail(why, Error::MemoryAllocationFailed, "could not allocate %zu bytes of engine scratch memory", bytes);
  }
  size_ = bytes;
  return Error::Ok;
}

Error fill_buffer(const DeviceBuffer& buffer, const void* data, size_t bytes, Diagnostic& why) {
  if (buffer.kind() != engine::MemoryKind::kDevice) {
    if (data != nullptr)
      std::memcpy(buffer.data(), data, bytes);
    else
      std::memset(buffer.data(), 0, bytes);
    return Error::Ok;
  }
  // On the legacy default stream, then waited for: executions on any stream (a caller's, the per-thread one) find
  // the state written.
  cudaError_t status = data != nullptr
                           ? cudaMemcpyAsync(buffer.data(), data, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy)
                           : cudaMemsetAsync(buffer.data(), 0, bytes, cudaStreamLegacy);
  if (status == cudaSuccess) status = cudaStreamSynchronize(cudaStreamLegacy);
  if (status != cudaSuccess)
    return fail(why, Error::Internal, "writing %zu bytes of state into device memory failed: %s", bytes,
                cuda_text(status).c_str());
  return Error::Ok;
}

// ---- DeviceState, load and destroy ----

DeviceState::~DeviceState() {
  // ~Delegate() has waited for it already (wait_for_in_flight).
  if (in_flight_event != nullptr) (void)cudaEventDestroy(as_event(in_flight_event));
}

bool memory_kind_supported(engine::MemoryKind) { return true; }

DeviceGuard::~DeviceGuard() {
  if (restore_) (void)cudaSetDevice(previous_);
}

Error DeviceGuard::activate(int64_t device_id, Diagnostic& why, bool check_range) {
  int count = 0;
  cudaError_t status = check_range ? cudaGetDeviceCount(&count) : cudaSuccess;
  if (status != cudaSuccess)
    return fail(why, Error::Internal, "no CUDA device can be used (cudaGetDeviceCount): %s", cuda_text(status).c_str());
  if (check_range && (device_id < 0 || device_id >= count))
    return fail(why, Error::NotSupported,
                "the blob names CUDA device %lld, but this machine has %d CUDA device(s) (0..%d); re-export the model "
                "for a device it has, or hide devices with CUDA_VISIBLE_DEVICES so that the intended GPU gets that "
                "index",
                static_cast<long long>(device_id), count, count - 1);
  int previous = -1;
  status = cudaGetDevice(&previous);
  const char* call = "cudaGetDevice";
  if (status == cudaSuccess && previous != device_id) {
    status = cudaSetDevice(static_cast<int>(device_id));
    call = "cudaSetDevice";
  }
  if (status != cudaSuccess)
    return fail(why, Error::Internal, "could not make CUDA device %lld current (%s): %s",
                static_cast<long long>(device_id), call, cuda_text(status).c_str());
  // A guard activated twice restores the device current before the first activation.
  if (!restore_) previous_ = previous;
  restore_ = restore_ || previous != device_id;
  active_ = true;
  return Error::Ok;
}

// The per-thread stream of the loading thread: load work never waits for, or holds up, other threads' streams.
engine::StreamHandle load_stream() { return cudaStreamPerThread; }

Error finish_load_work(Diagnostic& why) {
  const cudaError_t status = cudaStreamSynchronize(cudaStreamPerThread);
  if (status == cudaSuccess) return Error::Ok;
  return fail(why, Error::Internal, "waiting for load-time device work failed (cudaStreamSynchronize): %s",
              cuda_text(status).c_str());
}

Error prepare_device_state(DeviceState* state, int device_id, const std::vector<size_t>& staging_bytes,
                           Diagnostic& why) {
  state->device = true;
  state->device_id = device_id;
  state->traits = query_device_traits(device_id);
  state->reach = EngineReach::device_engine(state->traits);
  if (state->traits.integrated)
    ET_LOG(Info,
           "CUDA device %d is integrated: host memory it addresses is bound in place, not staged (pinned host memory: "
           "%s; pageable host memory: %s)",
           device_id, state->reach.pinned_host ? "yes" : "no", state->reach.pageable_host ? "yes" : "no");
  const Error staged = make_staging_buffers(state, engine::MemoryKind::kDevice, staging_bytes, why);
  if (staged != Error::Ok) return staged;
  cudaEvent_t event = nullptr;
  // No timing: a timing event costs more to record, and this one only orders work.
  const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (status != cudaSuccess)
    return fail(why, Error::Internal, "could not create the delegate's in-flight event (cudaEventCreateWithFlags): %s",
                cuda_text(status).c_str());
  state->in_flight_event = event;
  return Error::Ok;
}

// ---- CUDA graphs ----

GraphSet::~GraphSet() {
  // ~Delegate() has made the device current and waited for the last execution.
  for (Entry& e : entries)
    if (e.graph != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(e.graph));
}

void prepare_graphs(DeviceState* state, size_t num_contexts, size_t num_inputs, size_t num_args) {
  state->graphs.clear();
  state->graphs.reserve(num_contexts);
  for (size_t c = 0; c < num_contexts; ++c) {
    GraphSet set;
    set.entries.resize(GraphSet::kCapacity);
    for (GraphSet::Entry& e : set.entries) {
      e.shapes.resize(num_inputs);
      e.addresses.resize(num_args);
    }
    state->graphs.push_back(std::move(set));
  }
}

namespace {

void drop_graphs(GraphSet& graphs) {
  for (GraphSet::Entry& e : graphs.entries) {
    if (e.graph == nullptr) continue;
    (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(e.graph));
    e.graph = nullptr;
  }
}

bool same_key(const GraphSet::Entry& e, int32_t profile, const std::vector<Shape>& shapes,
              const std::vector<void*>& addresses) {
  return e.graph != nullptr && e.profile == profile && e.shapes == shapes && e.addresses == addresses;
}

// Captures `context`'s enqueue on `stream` and instantiates it; null (and the reason in `why`) if CUDA or the
// engine refuses. The capture is ended on every path, so the stream is usable afterwards.
cudaGraphExec_t capture(engine::ExecutionContext& context, cudaStream_t stream, Diagnostic& why) {
  // Thread-local: calls other threads make meanwhile (another delegate's cudaMalloc, say) do not invalidate it.
  cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (status != cudaSuccess) {
    (void)fail(why, Error::Internal, "cudaStreamBeginCapture: %s", cuda_text(status).c_str());
    return nullptr;
  }
  const bool enqueued = context.enqueue(stream, why) == Error::Ok;
  if (!enqueued) why.prepend("the engine's enqueue could not be captured: ");
  cudaGraph_t graph = nullptr;
  status = cudaStreamEndCapture(stream, &graph);
  if (status != cudaSuccess && enqueued)
    (void)fail(why, Error::Internal, "cudaStreamEndCapture: %s", cuda_text(status).c_str());
  cudaGraphExec_t exec = nullptr;
  if (enqueued && status == cudaSuccess) {
    status = cudaGraphInstantiate(&exec, graph, 0);
    if (status != cudaSuccess) {
      (void)fail(why, Error::Internal, "cudaGraphInstantiate: %s", cuda_text(status).c_str());
      exec = nullptr;
    }
  }
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  return exec;
}

}  // namespace

void wait_for_in_flight(DeviceState& state) {
  if (!state.device || !state.in_flight_recorded) return;
  const cudaError_t status = cudaEventSynchronize(as_event(state.in_flight_event));
  // destroy() cannot fail; a device error here has been (or will be) reported by the call that caused it.
  if (status != cudaSuccess) (void)cudaGetLastError();
}

// ---- shared scratch (scratch_pool.h) ----

void wait_for_scratch_turn(const ScratchTurn& turn) {
  if (turn.event == nullptr || turn.finished) return;
  // As wait_for_in_flight: a device error here is reported by the execution that caused it.
  if (cudaEventSynchronize(as_event(turn.event)) != cudaSuccess) (void)cudaGetLastError();
}

void drop_all_graphs(DeviceState* state) {
  for (GraphSet& graphs : state->graphs) drop_graphs(graphs);
}

Error DeviceCall::wait_for_scratch(const ScratchTurn& last) {
  // The delegate's own event was waited for by begin(), under the same rule.
  if (!state_.device || last.event == nullptr || last.event == state_.in_flight_event) return Error::Ok;
  if (!must_wait_for_last_user(!last.finished, last.stream, stream_, stream_ == cudaStreamPerThread)) return Error::Ok;
  const cudaError_t status = cudaStreamWaitEvent(as_stream(stream_), as_event(last.event), 0);
  if (status != cudaSuccess)
    return fail(why_, Error::Internal,
                "ordering this execution after the last one in the shared scratch memory failed "
                "(cudaStreamWaitEvent): %s",
                cuda_text(status).c_str());
  return Error::Ok;
}

void DeviceCall::pass_scratch_turn(ScratchTurn* turn) const {
  if (!recorded_) return;
  turn->event = state_.in_flight_event;
  turn->stream = stream_;
  turn->finished = finished_;
}

// ---- one execution ----

Error DeviceCall::begin() {
  if (!state_.device) return Error::Ok;
  // Without the range check only CUDA itself can fail here.
  if (device_.activate(state_.device_id, why_, /*check_range=*/false) != Error::Ok) return Error::Internal;
  const std::optional<void*> caller = current_cuda_stream();
  cudaStream_t stream = caller ? static_cast<cudaStream_t>(*caller) : cudaStreamPerThread;
  caller_stream_ = caller.has_value();
  if (!is_special_stream(stream)) {
    int stream_device = -1;
    const cudaError_t status = cudaStreamGetDevice(stream, &stream_device);
    if (status != cudaSuccess)
      return fail(why_, Error::InvalidArgument,
                  "the caller's CUDA stream cannot be used (cudaStreamGetDevice): %s; pass a live stream of device %d",
                  cuda_text(status).c_str(), state_.device_id);
    if (stream_device != state_.device_id)
      return fail(why_, Error::InvalidArgument,
                  "the caller's CUDA stream belongs to device %d, but this delegate runs on device %d (device_id in "
                  "its blob); hand over a stream of device %d for this call",
                  stream_device, state_.device_id, state_.device_id);
  }
  stream_ = stream;
  // Work on one stream runs in order, so waiting is needed only on another stream -- or on the per-thread
  // stream, whose one handle names a different stream on every thread. (A handle cannot name a new stream while
  // the old one still has work: cudaStreamDestroy releases a stream only once its work is done.)
  if (state_.in_flight_recorded && (stream != as_stream(state_.in_flight_stream) || stream == cudaStreamPerThread)) {
    const cudaError_t status = cudaStreamWaitEvent(stream, as_event(state_.in_flight_event), 0);
    if (status != cudaSuccess)
      return fail(why_, Error::Internal,
                  "ordering this execution after the previous one failed (cudaStreamWaitEvent): %s",
                  cuda_text(status).c_str());
  }
  return Error::Ok;
}

MemoryPlace DeviceCall::place_of(const executorch::aten::Tensor& tensor, int* device) const {
  if (!state_.device) {
    *device = -1;
    return host_engine_place_of(tensor);
  }
  return place_of_pointer(tensor, tensor.const_data_ptr(), state_.device_id, device);
}

Error DeviceCall::bind(size_t k, executorch::aten::Tensor& tensor, bool is_input, const char* name, void** address) {
  const char* role = is_input ? "input" : "output";
  void* data = tensor.mutable_data_ptr();
  if (!state_.device) return bind_host(state_, why_, k, tensor, is_input, name, address, copied_);
  state_.staged[k] = kNotStaged;
  const size_t bytes = tensor.nbytes();
  int device = -1;
  const MemoryPlace place = place_of(tensor, &device);
  const Binding binding = choose_binding(place, engine::io_address_aligned(data), state_.reach);
  if (binding == Binding::kRefuseOtherDevice)
    return fail(why_, Error::InvalidArgument,
                "%s '%s' is in memory of CUDA device %d, but this delegate runs on device %d (device_id in its "
                "blob); pass memory of device %d, or host memory (etrt then stages it)",
                role, name, device, state_.device_id, state_.device_id);
  if (binding == Binding::kInPlace) {
    // Host memory an integrated GPU reaches: the engine reads and writes it on the stream, after this returns.
    if (is_host(place)) host_memory_in_flight_ = true;
    *address = data;
    return Error::Ok;
  }
  // Staged: host memory the device does not reach, or memory it reaches at an address TensorRT would refuse for
  // its alignment (ExecuTorch plans 16 bytes).
  const bool realigned = binding == Binding::kStageRealigned;
  DeviceBuffer& staging = state_.staging[k];
  const char* instead =
      realigned ? "256-byte-aligned device memory instead, which is bound in place" : "device memory instead";
  const Error fits = fits_staging(state_, why_, k, bytes, role, name, instead);
  if (fits != Error::Ok) return fits;
  if (data == nullptr && bytes > 0) return refuse_missing_memory(why_, role, name, bytes);
  *address = staging.data();
  state_.staged[k] = realigned ? kStagedRealigned : kStagedFromHost;
  if (is_input && bytes > 0) {
    (realigned ? copied_.realigned : copied_.host_to_device) += static_cast<int64_t>(bytes);
    // From pageable memory the copy has read the tensor by the time it returns; from pinned memory it runs later,
    // so end() must wait before the caller may touch the tensor again.
    // cudaMemcpyDefault: from host memory, or from misaligned device memory.
    const cudaError_t status = cudaMemcpyAsync(staging.data(), data, bytes, cudaMemcpyDefault, as_stream(stream_));
    issued_ = true;
    if (place == MemoryPlace::kPinnedHost) host_memory_in_flight_ = true;
    if (status != cudaSuccess)  // the copy failed, not the caller's tensor
      return fail(why_, Error::Internal, "copying %s '%s' (%zu bytes) to the device failed (cudaMemcpyAsync): %s", role,
                  name, bytes, cuda_text(status).c_str());
  }
  return Error::Ok;
}

bool DeviceCall::binds_in_place_on_device(const executorch::aten::Tensor& tensor) {
  int device = -1;
  const MemoryPlace place = place_of(tensor, &device);
  if (choose_binding(place, engine::io_address_aligned(tensor.const_data_ptr()), state_.reach) != Binding::kInPlace)
    return false;
  if (is_host(place)) host_memory_in_flight_ = true;  // as bind() marks it
  return true;
}

Error DeviceCall::copy_back_outputs(executorch::aten::Tensor* const* tensors, size_t first_output, size_t count) {
  if (!state_.device) {
    copy_back_host(state_, tensors, first_output, count, copied_);
    return Error::Ok;
  }
  for (size_t k = first_output; k < first_output + count; ++k) {
    if (state_.staged[k] == kNotStaged || tensors[k] == nullptr) continue;
    executorch::aten::Tensor& t = *tensors[k];
    const size_t bytes = t.nbytes();
    if (bytes == 0) continue;
    const bool to_host = state_.staged[k] == kStagedFromHost;
    (to_host ? copied_.device_to_host : copied_.realigned) += static_cast<int64_t>(bytes);
    // ExecuTorch's caller reads host outputs as soon as execute() returns: end() waits for these copies.
    if (to_host) host_memory_in_flight_ = true;
    const cudaError_t status = cudaMemcpyAsync(t.mutable_data_ptr(), state_.staging[k].data(), bytes,
                                               cudaMemcpyDefault, as_stream(stream_));
    if (status != cudaSuccess)
      return fail(why_, Error::Internal, "copying output %zu (%zu bytes) back to the host failed (cudaMemcpyAsync): %s",
                  k - first_output, bytes, cuda_text(status).c_str());
  }
  return Error::Ok;
}

Error DeviceCall::check_in_place(const executorch::aten::Tensor& input, const char* name) {
  if (!state_.device || input.nbytes() == 0) return Error::Ok;
  int device = -1;
  if (!refuses_in_place_update(place_of(input, &device), state_.reach)) return Error::Ok;
  return fail(why_, Error::InvalidArgument,
              "input '%s' is updated in place by the engine (an aliased output, e.g. a KV cache), but it is in host "
              "memory this device does not address: etrt would stage it through a device buffer, copying the whole "
              "input to the device and back on every call. Pass it in device memory of device %d (e.g. a "
              "device-resident KV cache)",
              name, state_.device_id);
}

Error DeviceCall::finish_in_place(size_t k, executorch::aten::Tensor& input, executorch::aten::Tensor* write_back,
                                  size_t bytes, const char* name) {
  if (!state_.device) {
    finish_in_place_host(state_, k, input, write_back, bytes, copied_);
    return Error::Ok;
  }
  if (bytes == 0) return Error::Ok;
  void* data = input.mutable_data_ptr();
  cudaError_t status = cudaSuccess;
  // A staged input: the engine updated the staging buffer. Misaligned device memory was staged on the device; on an
  // integrated GPU, misaligned host memory through a device buffer.
  if (state_.staged[k] != kNotStaged) {
    const bool to_host = state_.staged[k] == kStagedFromHost;
    (to_host ? copied_.device_to_host : copied_.realigned) += static_cast<int64_t>(bytes);
    if (to_host) host_memory_in_flight_ = true;
    status = cudaMemcpyAsync(data, state_.staging[k].data(), bytes, cudaMemcpyDefault, as_stream(stream_));
  }
  if (status == cudaSuccess && write_back != nullptr && write_back->mutable_data_ptr() != data) {
    int device = -1;
    if (is_host(place_of(*write_back, &device))) host_memory_in_flight_ = true;
    copied_.write_back += static_cast<int64_t>(bytes);
    status = cudaMemcpyAsync(write_back->mutable_data_ptr(), data, bytes, cudaMemcpyDefault, as_stream(stream_));
  }
  if (status != cudaSuccess)
    return fail(why_, Error::Internal,
                "copying the in-place update of input '%s' (%zu bytes) failed (cudaMemcpyAsync): %s", name, bytes,
                cuda_text(status).c_str());
  return Error::Ok;
}

Error DeviceCall::write_back_state(void* state, const void* output, size_t bytes, const char* name) {
  copied_.write_back += static_cast<int64_t>(bytes);
  if (!state_.device) {
    std::memcpy(state, output, bytes);
    return Error::Ok;
  }
  const cudaError_t status = cudaMemcpyAsync(state, output, bytes, cudaMemcpyDeviceToDevice, as_stream(stream_));
  if (status != cudaSuccess)
    return fail(why_, Error::Internal,
                "writing the new value of state '%s' back (%zu bytes) failed (cudaMemcpyAsync): %s", name, bytes,
                cuda_text(status).c_str());
  return Error::Ok;
}

Error DeviceCall::enqueue(engine::ExecutionContext& context, GraphSet* graphs, bool steady, int32_t profile,
                          const std::vector<Shape>& shapes, const std::vector<void*>& addresses) {
  // Only on the caller's own stream: the legacy stream cannot be captured, and without a caller stream every
  // execution waits for its work before returning anyway.
  const bool use_graphs = graphs != nullptr && state_.device && !state_.graphs_failed && caller_stream_ &&
                          !is_special_stream(as_stream(stream_));
  // A change to the context since the capture (a switch, a shape, an address: `steady` is false) makes its graphs
  // stale, even if a later execution returns to the captured configuration. A launch still in flight is freed by
  // CUDA when it completes.
  if (graphs != nullptr && !steady) drop_graphs(*graphs);
  if (use_graphs && steady) {
    GraphSet::Entry* entry = nullptr;
    for (GraphSet::Entry& e : graphs->entries)
      if (same_key(e, profile, shapes, addresses)) entry = &e;
    if (entry == nullptr) {
      // Only logged: execution goes on without graphs, so the reason stays out of the caller's `why`.
      Diagnostic capture_why;
      cudaGraphExec_t exec = capture(context, as_stream(stream_), capture_why);
      if (exec == nullptr) {
        state_.graphs_failed = true;
        ET_LOG(Info, "TensorRT delegate %s: CUDA graphs turned off for good, enqueueing plainly: %s", delegate_,
               capture_why.c_str());
      } else {
        // The least recently used slot (a free one has never been used).
        entry = &graphs->entries[0];
        for (GraphSet::Entry& e : graphs->entries)
          if (e.graph == nullptr || e.last_use < entry->last_use) entry = &e;
        if (entry->graph != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(entry->graph));
        entry->graph = exec;
        entry->profile = profile;
        entry->shapes = shapes;
        entry->addresses = addresses;
      }
    }
    if (entry != nullptr) {
      entry->last_use = ++graphs->clock;
      const cudaError_t status = cudaGraphLaunch(static_cast<cudaGraphExec_t>(entry->graph), as_stream(stream_));
      if (status == cudaSuccess) return Error::Ok;
      return fail(why_, Error::Internal, "replaying the CUDA graph of profile %d failed (cudaGraphLaunch): %s", profile,
                  cuda_text(status).c_str());
    }
  }
  const Error status = context.enqueue(stream_, why_);
  if (status != Error::Ok) why_.prepend("the engine failed to run under profile %d: ", profile);
  return status;
}

Error DeviceCall::end(Error status) {
  if (!state_.device || !issued_) return status;
  // Recorded on every path that issued work, failed ones too: whatever a switch or an enqueue left on the stream
  // must be waited for by the next execution and by destroy.
  cudaError_t cuda = cudaEventRecord(as_event(state_.in_flight_event), as_stream(stream_));
  const char* call = "cudaEventRecord";
  if (cuda == cudaSuccess) {
    recorded_ = true;
    state_.in_flight_recorded = true;
    state_.in_flight_stream = stream_;
    // Without a caller stream nobody else can order work after ours -- another delegate reading these outputs
    // runs on a stream of its own -- so, like the released upstream delegate, the execution finishes before
    // returning. With a caller stream the caller owns the order; we wait only while host memory is in use.
    if (host_memory_in_flight_ || !caller_stream_) {
      const NvtxRange range("etrt wait for the device");
      cuda = cudaEventSynchronize(as_event(state_.in_flight_event));
      call = "cudaEventSynchronize";
      finished_ = cuda == cudaSuccess;
    }
  }
  // A kernel fault surfaces here; the CUDA context is then unusable, and saying so beats a later mystery.
  if (cuda != cudaSuccess)
    return fail(why_, Error::Internal,
                "the device work of this execution failed (%s): %s. If that error is sticky (a kernel fault), the "
                "process's CUDA context is unusable: restart the process",
                call, cuda_text(cuda).c_str());
  return status;
}

}  // namespace etrt::backend
