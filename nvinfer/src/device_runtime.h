#pragma once
// The few CUDA runtime calls the GPU-free NvInfer's CUDA mode makes, behind
// functions that need no CUDA header, so the engine's files compile the same
// in every build. device_cuda.cpp implements them over the CUDA runtime
// (-DETRT_WITH_CUDA=ON); device_none.cpp, in builds without CUDA, refuses with
// a message that says how to rebuild. Every failure returns false and words
// the CUDA error into *error.

#include <cstddef>
#include <cstdint>
#include <string>

#include "etrt_gpufree/types.h"

namespace etrt::gpufree::device {

// True when this build has the CUDA mode at all.
bool built_with_cuda();

// The calling thread's current CUDA device.
bool current_device(int* device, std::string* error);

bool allocate(size_t bytes, void** out, std::string* error);
// Frees what allocate() returned; null is a no-op. Errors are ignored: this runs in destructors.
void release(void* memory);
// A synchronous host-to-device copy (weights, at context creation).
bool upload(void* device_dst, const void* host_src, size_t bytes, std::string* error);

// Where `address` lives, for the enqueue's binding check.
enum class PointerKind { kHost, kDevice, kManaged, kMappedHost };
struct PointerInfo {
  PointerKind kind = PointerKind::kHost;
  int device = -1;  // for kDevice
};
bool pointer_info(const void* address, PointerInfo* info, std::string* error);

// Zeroes the first and the last byte of [memory, memory + bytes) on `stream`, the CUDA-mode counterpart of the
// host mode's scratch touch: a buffer that is too small or already freed makes the copy fail (and shows under
// compute-sanitizer).
bool touch_ends(void* memory, size_t bytes, StreamHandle stream, std::string* error);

// Whether `stream` is capturing a CUDA graph.
bool stream_capturing(StreamHandle stream, bool* capturing, std::string* error);

// Blocks until everything issued to `stream` has run (a streaming engine's enqueueV3 is synchronous); false with
// the first error the stream's work raised.
bool synchronize_stream(StreamHandle stream, std::string* error);

// After a run of kernel launches: false with the launch error, if any.
bool launch_status(std::string* error);

// A CUDA event without timing, into *event.
bool create_event(void** event, std::string* error);
void destroy_event(void* event);
// On a capturing stream the record becomes a node of the graph (cudaEventRecordExternal), so each replay records it.
bool record_event(void* event, StreamHandle stream, std::string* error);
// True when the event has completed (or was never recorded).
bool event_complete(void* event);
// Blocks until the event has completed.
void synchronize_event(void* event);

// An int in pinned, device-mapped host memory, zeroed: the device writes it, the host reads it without a copy.
bool allocate_mapped_flag(int** flag, std::string* error);
void release_mapped_flag(int* flag);

// On `stream`: *word = value.
bool store_word(int32_t* word, int32_t value, StreamHandle stream, std::string* error);
// On `stream`: if (*word != expected) *flag = 1.
bool check_word(const int32_t* word, int32_t expected, int* flag, StreamHandle stream, std::string* error);

}  // namespace etrt::gpufree::device
