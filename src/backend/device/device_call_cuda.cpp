// Device plumbing over the CUDA runtime (device.h): the device side of one execution -- its stream, the order after
// the delegate's last work and a shared scratch buffer's last user, binding and staging its arguments, the copies
// back, and the in-flight event at its end. Host engines never reach a CUDA call here: every DeviceCall method checks
// state_.device first.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>

#include "backend/device/device_cuda.h"
#include "backend/device/nvtx_range.h"
#include "backend/device/staging.h"
#include "backend/policy/scratch_pool_policy.h"
#include "common/error.h"

namespace etrt::backend {

// ---- shared scratch (scratch_pool.h) ----

void wait_for_scratch_turn(const ScratchTurn& turn) {
  if (turn.event == nullptr || turn.finished) return;
  // As wait_for_in_flight: a device error here is reported by the execution that caused it.
  if (cudaEventSynchronize(as_event(turn.event)) != cudaSuccess) (void)cudaGetLastError();
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

Error DeviceCall::begin(CallerStream caller_stream) {
  if (!state_.device) return Error::Ok;
  // Without the range check only CUDA itself can fail here.
  if (device_.activate(state_.device_id, why_, /*check_range=*/false) != Error::Ok) return Error::Internal;
  const std::optional<void*> caller = caller_stream();
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
