#pragma once
// Memory and stream plumbing between ExecuTorch tensors and an engine.
//
// A host engine (the reference engine on CPU) reads and writes ExecuTorch's
// tensors in place. A device engine (TensorRT, the reference engine's CUDA
// mode) needs device pointers: device_cuda.cpp stages host tensors through
// device buffers on the execution stream. Builds without CUDA refuse device
// engines at load with a message that says how to rebuild.

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/engine.h"

namespace etrt::backend {

// Memory an engine's contexts run in (scratch), host or device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  bool allocate(engine::MemoryKind kind, size_t bytes, std::string* error);
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  engine::MemoryKind kind_ = engine::MemoryKind::kHost;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Per-delegate staging for device engines: one device buffer per IO tensor,
// sized for its capacity, and the delegate's stream and in-flight event.
// Empty for host engines.
struct DeviceStaging {
  bool device = false;
  // Opaque CUDA objects (cudaStream_t, cudaEvent_t) so this header needs no CUDA.
  void* in_flight_event = nullptr;
  int device_id = 0;
};

// True when this build can run engines whose memory kind is `kind`.
bool memory_kind_supported(engine::MemoryKind kind);

}  // namespace etrt::backend
