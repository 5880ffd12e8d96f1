// Device plumbing over the CUDA runtime (device.h): a delegate's device resources at load and destroy -- the current
// device, the load stream, the staging buffers and the in-flight event -- and what a build with CUDA can run.
#include <cuda_runtime_api.h>

#include <executorch/runtime/platform/log.h>

#include "backend/device/device_cuda.h"
#include "backend/device/staging.h"
#include "common/error.h"

namespace etrt::backend {

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

void wait_for_in_flight(DeviceState& state) {
  if (!state.device || !state.in_flight_recorded) return;
  const cudaError_t status = cudaEventSynchronize(as_event(state.in_flight_event));
  // destroy() cannot fail; a device error here has been (or will be) reported by the call that caused it.
  if (status != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace etrt::backend
