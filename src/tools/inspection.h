#pragma once
// What tools ask the runtime (libetrt_tools' C ABI, etrt/tools_c_api.h: etrt_blob_describe, etrt_engine_describe,
// etrt_delegate_resolve, etrt_device_memory): the runtime's own reading of a blob and of an engine, so `etrt inspect`
// and `etrt validate` refuse exactly what a load refuses, with its message. In libetrt_tools only, never in libetrt;
// each call allocates what its answer needs.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"

namespace etrt::tools {

// parse_blob (src/blob), then one JSON object in *text: "magic", "metadata_offset", "metadata_size",
// "engine_offset", "engine_size", "blob_size", and "metadata", the parsed metadata as the writer embeds it
// (blob::metadata_to_json). On refusal, the reader's message in *text and its error (InvalidArgument for a malformed
// blob, MemoryAllocationFailed). Linear in the blob's metadata.
[[nodiscard]] Error describe_blob(const void* data, size_t size, std::string* text);

// The blob against its engine as Delegate::load resolves them (io_resolution.h: IO bindings, aliases, profile table,
// profile signature, delegate-owned states), without creating a context, so a CUDA-mode engine is resolved on a
// build without CUDA. One JSON object in *text: "inputs" and "outputs" (the delegate's arguments in order: name, the
// engine's dtype and shape, and "alias_of" for an output written in place into an input), "aliases" (output, input,
// kind, and "entry": the aliased_io index or -1 for the engine's own), "num_profiles", "states" (one per
// delegate_state entry resolved: name, input, output, in_place, dtype, shape, bytes), and "refusal": null, or the
// first refusal ("rule", "entry" and "message"; rule "engine" when the engine does not deserialize), what resolved
// before it listed. A refused blob: the reader's message and its error; NotSupported on a build against NVIDIA's
// TensorRT, which deserializes only on a GPU. Linear in the metadata and the engine's IO.
[[nodiscard]] Error resolve_delegate(const void* data, size_t size, std::string* text);

// What the TensorRT adapter's deserialize() reads from `data`, as JSON in *text, when this build runs NvInfer's
// GPU-free implementation and the bytes are one of its engines: the same decoder and checks, and no context created,
// so an engine that needs CUDA is described on a build without it. InvalidArgument with the refusal in *text for
// bytes the deserializer refuses; NotSupported (the reason in *text) for a build against NVIDIA's TensorRT, whose
// plans are opaque; MemoryAllocationFailed when memory ran out. One source per NvInfer implementation, the one the
// build links: engine_describe_gpufree.cpp, engine_describe_nvidia.cpp.
[[nodiscard]] Error describe_engine(const void* data, size_t size, std::string* text);

// Whether this build (libetrt_tools and the libetrt beside it) has CUDA (ETRT_WITH_CUDA): device engines run only on
// such a build. device_query_cuda.cpp, device_query_none.cpp.
bool built_with_cuda();

// The total memory of CUDA device `device` in *bytes. NotSupported (with the reason) on a build without CUDA, on a
// machine without that device, or when CUDA cannot answer.
[[nodiscard]] Error device_memory(int device, uint64_t* bytes, Diagnostic& why);

}  // namespace etrt::tools
