// An execution context's tensor addresses and device memory (context_impl.h):
// what setTensorAddress and setDeviceMemoryV2 accept, including the part of the
// memory weight streaming stages through.

#include <cstdint>
#include <string>

#include "context_impl.h"

namespace etrt::gpufree {

bool ContextImpl::set_tensor_address(int32_t io_index, void* address) {
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
  bindings_.bind(static_cast<size_t>(io_index), address);
  return traced(nullptr);
}

bool ContextImpl::set_device_memory(void* memory, size_t size) {
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
  bindings_.set_scratch(static_cast<uint8_t*>(memory));
  return traced(nullptr);
}

std::string ContextImpl::streaming_note() const {
  if (!memory_.streams_weights) return std::string();
  return ", of which " + std::to_string(memory_.streaming_bytes) +
         " bytes stage streamed weights (getWeightStreamingScratchMemorySize(): the budget is " +
         std::to_string(memory_.budget) + " of " + std::to_string(state_->streamable_bytes()) + " streamable bytes)";
}

}  // namespace etrt::gpufree
