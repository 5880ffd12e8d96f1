#ifndef ETRT_TOOLS_C_API_H_
#define ETRT_TOOLS_C_API_H_
/**
 * @file
 * The C ABI of libetrt_tools: what the tools (python/etrt: etrt inspect, etrt validate, etrt pack) ask the runtime,
 * so that they read blobs and engines with its code and refuse what a load refuses, with its message
 * (docs/architecture.md, "One rulebook"). A library of its own, installed beside libetrt (the same folder, in a build
 * tree and in an installation), so that libetrt holds production code only; it is built from the same sources as
 * libetrt's load (src/blob, the TensorRT adapter, the load's resolution and rules) and needs neither libetrt nor
 * ExecuTorch's runtime library. Plain types only; every function is safe to call from any thread and never throws.
 *
 * Versioning: etrt_tools_abi_version() returns ETRT_TOOLS_ABI_VERSION of the library; a caller checks it before
 * anything else. Return codes are libetrt's (etrt/c_api.h ETRT_OK, ETRT_E_*).
 *
 * History: version 1, the readers and rules libetrt's C ABI carried as its versions 2 to 5 (etrt/c_api.h),
 * unchanged.
 */

#include <stddef.h>
#include <stdint.h>

#include "etrt/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this header; etrt_tools_abi_version() returns the library's. */
#define ETRT_TOOLS_ABI_VERSION 1

/** ETRT_TOOLS_ABI_VERSION of the library. */
ETRT_C_API uint32_t etrt_tools_abi_version(void);

/** A text the library made for the caller: NUL-terminated, freed with etrt_text_free. */
typedef struct etrt_text etrt_text;

/** The text's bytes (NUL-terminated; the JSON texts below hold no NUL of their own). */
ETRT_C_API const char* etrt_text_data(const etrt_text* text);
/** The text's length, without the NUL. */
ETRT_C_API size_t etrt_text_size(const etrt_text* text);
/** Frees a text; null is ignored. */
ETRT_C_API void etrt_text_free(etrt_text* text);

/**
 * Reads a TR01/TR02 blob (`size` bytes at `data`) as a delegate load does (src/blob parse_blob: the header, the
 * metadata's limits and rules) and never reads outside it. ETRT_OK: *out is a JSON object with "magic",
 * "metadata_offset", "metadata_size", "engine_offset", "engine_size", "blob_size" and "metadata" (the parsed
 * metadata as the writer embeds it: docs/blob-format.md). ETRT_E_FAILED: *out is the reader's refusal
 * ("TensorRT blob: ..."). ETRT_E_INVALID_ARGUMENT (*out null) for a null `out`, or null `data` with a non-zero size;
 * ETRT_E_NO_MEMORY (*out null) when memory ran out. The text is at most a few times the metadata's size (16 MiB at
 * most); the caller frees it.
 */
ETRT_C_API int etrt_blob_describe(const void* data, size_t size, etrt_text** out);

/**
 * Reads an engine of the GPU-free NvInfer (magic "ETRF") as deserializeCudaEngine does (its decoder, limits and
 * validation, shape inference and scratch plan included), without creating a context, so an engine that needs CUDA
 * is described on a build without it. ETRT_OK: *out is a JSON object ("label", "version", "size", "tracing",
 * "cuda_mode", "streamable_weights", "switch_cost_ns", "requested_device_memory", "device_memory_size", "io",
 * "constants", "intermediates", "profiles", "ops", and "output_shapes": each output's shape at each profile's min
 * and max input shapes). ETRT_E_FAILED: *out is the deserializer's refusal. ETRT_E_NOT_SUPPORTED: *out says why
 * this build reads no such engines (one built against NVIDIA's TensorRT). Arguments and memory as
 * etrt_blob_describe. The text is linear in the engine's size.
 */
ETRT_C_API int etrt_engine_describe(const void* data, size_t size, etrt_text** out);

/**
 * Resolves a TR01/TR02 blob against its engine as a delegate load does after deserializing it : the blob's
 * IO bindings against the engine's IO tensors (or the engine's own IO, without io_bindings), the in-place aliases
 * (aliased_io and the engine's own), the profile table and the blob's profile signature against it, and each
 * delegate_state entry's shapes, with the load's rules and messages; no context is created and no named data read,
 * so a CUDA-mode engine of the GPU-free NvInfer is resolved on a build without CUDA. ETRT_OK: *out is a JSON object:
 * "inputs" and "outputs" (the delegate's arguments in order: "name", the engine's "dtype" and "shape", and
 * "alias_of", the input an output is written into in place), "aliases" ("output", "input", "kind", "entry": the
 * aliased_io index, or -1 for an alias only the engine declares), "num_profiles", "states" ("name", "input",
 * "output", "in_place", "dtype", "shape", "bytes"), and "refusal": null when a load would get past these steps, else
 * the first refusal, what resolved before it listed: "message" (the load's, at most 4 KiB), "entry" (the aliased_io or
 * delegate_state index, or -1) and "rule": "engine" (the engine does not deserialize), "io", "alias-unknown-kind",
 * "alias-unknown-tensor", "alias-engine-mismatch", "alias-shape-mismatch", "alias-conflict", "profiles", "signature"
 * or "state". ETRT_E_FAILED: *out is the blob reader's refusal. ETRT_E_NOT_SUPPORTED: *out says why this build
 * resolves no engines without a GPU (one built against NVIDIA's TensorRT). Arguments and memory as
 * etrt_blob_describe; the text is linear in the metadata and the engine's IO.
 */
ETRT_C_API int etrt_delegate_resolve(const void* data, size_t size, etrt_text** out);

/** 1 when this libetrt was built with CUDA (device engines run only on such a build), else 0. */
ETRT_C_API int etrt_build_has_cuda(void);

/**
 * The total memory of CUDA device `device` into *bytes. ETRT_E_NOT_SUPPORTED on a build without CUDA or a machine
 * without that device; ETRT_E_INVALID_ARGUMENT for a null `bytes`.
 */
ETRT_C_API int etrt_device_memory(int32_t device, uint64_t* bytes);

/**
 * A byte count as the runtime reads the weight_streaming_budget compile spec and load option: `size`
 * bytes at `data`, one or more ASCII decimal digits and nothing else (no sign, space, NUL or decimal point), at most
 * 2^63 - 1 (src/common/byte_count.h). ETRT_OK with the count in *bytes; ETRT_E_INVALID_ARGUMENT for anything else or a
 * null `bytes`.
 */
ETRT_C_API int etrt_parse_byte_count(const void* data, size_t size, int64_t* bytes);

/**
 * Whether a host engine (the GPU-free NvInfer's host mode) takes a delegate argument ExecuTorch placed on
 * `device_type` (ExecuTorch's DeviceType: 0 CPU, 1 CUDA) at index `device_index` -- every argument of a delegate
 * exported with a target_device compile spec is placed on that device. The rule and message a call
 * applies before reading the argument (src/backend/device/staging.h host_engine_binds, host_engine_rule.cpp);
 * `is_input` and `name` word the message. ETRT_OK (*out null): the engine binds it; ETRT_E_FAILED: *out is the refusal
 * the call returns, without the "TensorRT delegate <method>#<n>: " prefix. ETRT_E_INVALID_ARGUMENT (*out null) for a
 * null `out` or `name`, or a device type ExecuTorch does not have; ETRT_E_NO_MEMORY (*out null) when memory ran out.
 */
ETRT_C_API int etrt_host_engine_binds(int32_t device_type, int32_t device_index, int is_input, const char* name,
                                      etrt_text** out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ETRT_TOOLS_C_API_H_
