// The GPU-free NvInfer's CUDA runtime calls (device_runtime.h), for builds
// with -DETRT_WITH_CUDA=ON.
#include <cuda_runtime_api.h>

#include "device_runtime.h"

namespace etrt::gpufree::device {

namespace {

bool failed(cudaError_t status, const char* call, std::string* error) {
  // Clears the error so it does not resurface in an unrelated later call (sticky errors stay regardless).
  (void)cudaGetLastError();
  if (error != nullptr)
    *error = std::string(call) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  return false;
}

cudaStream_t as_stream(StreamHandle stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

bool built_with_cuda() { return true; }

bool current_device(int* device, std::string* error) {
  const cudaError_t status = cudaGetDevice(device);
  return status == cudaSuccess || failed(status, "cudaGetDevice", error);
}

bool allocate(size_t bytes, void** out, std::string* error) {
  *out = nullptr;
  if (bytes == 0) return true;
  const cudaError_t status = cudaMalloc(out, bytes);
  if (status == cudaSuccess) return true;
  *out = nullptr;
  return failed(status, ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str(), error);
}

void release(void* memory) {
  if (memory != nullptr) (void)cudaFree(memory);
}

bool upload(void* device_dst, const void* host_src, size_t bytes, std::string* error) {
  if (bytes == 0) return true;
  const cudaError_t status = cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice);
  return status == cudaSuccess || failed(status, "cudaMemcpy (weights to the device)", error);
}

bool pointer_info(const void* address, PointerInfo* info, std::string* error) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, address);
  if (status != cudaSuccess) return failed(status, "cudaPointerGetAttributes", error);
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      *info = {PointerKind::kDevice, attributes.device};
      return true;
    case cudaMemoryTypeManaged:
      *info = {PointerKind::kManaged, attributes.device};
      return true;
    case cudaMemoryTypeHost:
      // Pinned memory is device-accessible only when mapped (it has a device address).
      *info = {attributes.devicePointer != nullptr ? PointerKind::kMappedHost : PointerKind::kHost, -1};
      return true;
    default:
      *info = {PointerKind::kHost, -1};
      return true;
  }
}

bool touch_ends(void* memory, size_t bytes, StreamHandle stream, std::string* error) {
  if (bytes == 0) return true;
  auto* p = static_cast<unsigned char*>(memory);
  cudaError_t status = cudaMemsetAsync(p, 0, 1, as_stream(stream));
  if (status == cudaSuccess) status = cudaMemsetAsync(p + bytes - 1, 0, 1, as_stream(stream));
  return status == cudaSuccess || failed(status, "cudaMemsetAsync (scratch memory)", error);
}

bool stream_capturing(StreamHandle stream, bool* capturing, std::string* error) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t result = cudaStreamIsCapturing(as_stream(stream), &status);
  // The legacy stream while another stream captures: a capture all the same.
  if (result == cudaErrorStreamCaptureImplicit) {
    *capturing = true;
    return true;
  }
  if (result != cudaSuccess) return failed(result, "cudaStreamIsCapturing", error);
  *capturing = status != cudaStreamCaptureStatusNone;
  return true;
}

bool synchronize_stream(StreamHandle stream, std::string* error) {
  const cudaError_t status = cudaStreamSynchronize(as_stream(stream));
  return status == cudaSuccess || failed(status, "cudaStreamSynchronize (a streaming engine's enqueue waits)", error);
}

bool launch_status(std::string* error) {
  const cudaError_t status = cudaGetLastError();
  return status == cudaSuccess || failed(status, "a kernel launch", error);
}

bool create_event(void** event, std::string* error) {
  cudaEvent_t created = nullptr;
  const cudaError_t status = cudaEventCreateWithFlags(&created, cudaEventDisableTiming);
  if (status != cudaSuccess) return failed(status, "cudaEventCreateWithFlags", error);
  *event = created;
  return true;
}

void destroy_event(void* event) {
  if (event != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

bool record_event(void* event, StreamHandle stream, std::string* error) {
  bool capturing = false;
  if (!stream_capturing(stream, &capturing, error)) return false;
  const cudaError_t status =
      capturing ? cudaEventRecordWithFlags(static_cast<cudaEvent_t>(event), as_stream(stream), cudaEventRecordExternal)
                : cudaEventRecord(static_cast<cudaEvent_t>(event), as_stream(stream));
  return status == cudaSuccess || failed(status, "cudaEventRecord", error);
}

void synchronize_event(void* event) {
  if (event != nullptr && cudaEventSynchronize(static_cast<cudaEvent_t>(event)) != cudaSuccess)
    (void)cudaGetLastError();
}

bool allocate_mapped_flag(int** flag, std::string* error) {
  void* memory = nullptr;
  const cudaError_t status = cudaHostAlloc(&memory, sizeof(int), cudaHostAllocMapped);
  if (status != cudaSuccess) {
    *flag = nullptr;
    return failed(status, "cudaHostAlloc (a host-mapped flag)", error);
  }
  *flag = static_cast<int*>(memory);
  **flag = 0;
  return true;
}

void release_mapped_flag(int* flag) {
  if (flag != nullptr) (void)cudaFreeHost(flag);
}

bool event_complete(void* event) {
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (status == cudaErrorNotReady) (void)cudaGetLastError();
  return status == cudaSuccess;
}

}  // namespace etrt::gpufree::device
