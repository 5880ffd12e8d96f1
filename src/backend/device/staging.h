#pragma once
// Staging buffers: one per delegate argument, made at load at the size the
// argument can reach, through which etrt copies what TensorRT cannot take in
// place. Device engines stage host memory and device memory that breaks
// TensorRT's I/O alignment rule (engine::kIoAddressAlignment; device_call_cuda.cpp);
// host engines (the GPU-free NvInfer implementation's host mode) stage only
// what breaks the alignment rule -- ExecuTorch plans 16-byte alignment. The
// pieces both builds share are here; no CUDA.

#include <cstddef>
#include <vector>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "backend/device/device.h"
#include "common/error.h"
#include "engine/engine.h"

namespace etrt::backend {

// Makes one buffer of `kind` per delegate argument, `staging_bytes[k]` each, and clears the staged flags. A failure
// is DeviceBuffer::allocate's, its reason prefixed with the argument.
// InvalidArgument naming a tensor argument with no memory (a null data pointer for `bytes` > 0), and what to give
// it instead. TensorRT refuses a null address, so a null tensor is staged when empty and refused otherwise.
[[nodiscard]] Error refuse_missing_memory(Diagnostic& why, const char* role, const char* name, size_t bytes);
[[nodiscard]] Error make_staging_buffers(DeviceState* state, engine::MemoryKind kind,
                                         const std::vector<size_t>& staging_bytes, Diagnostic& why);

// Ok when argument `k` (`bytes` long) fits its staging buffer; otherwise InvalidArgument, the reason naming the
// argument and `instead` (the memory the caller can pass to avoid staging, e.g. "device memory instead").
[[nodiscard]] Error fits_staging(const DeviceState& state, Diagnostic& why, size_t k, size_t bytes, const char* role,
                                 const char* name, const char* instead);

// Host engines: the staging buffers, in host memory.
[[nodiscard]] Error prepare_host_staging(DeviceState* state, const std::vector<size_t>& staging_bytes, Diagnostic& why);

// The address a host engine gets for argument `k`; inputs that need staging are copied now (counted in `copied`).
// InvalidArgument when the argument outgrows its staging buffer, or when ExecuTorch placed it on a device
// (Tensor::device_type(): a program exported with a CUDA target device), which host code must not read.
[[nodiscard]] Error bind_host(DeviceState& state, Diagnostic& why, size_t k, executorch::aten::Tensor& tensor,
                              bool is_input, const char* name, void** address, CopiedBytes& copied);

// Whether a host engine takes an argument ExecuTorch placed on `type` (its DeviceType; `index`, the device's index) at
// all: Ok for host memory; for any device's memory the InvalidArgument bind_host returns at the call, naming the
// argument and what to do. The rule bind_host applies, without a tensor: etrt validate asks it through the tools'
// C ABI (etrt_host_engine_binds), so the tools refuse what the call refuses, with its message. host_engine_rule.cpp,
// compiled into libetrt and libetrt_tools alike.
[[nodiscard]] Error host_engine_binds(Diagnostic& why, executorch::runtime::etensor::DeviceType type, int index,
                                      bool is_input, const char* name);
// The refusal itself, for a host engine's argument in memory of CUDA device `index`.
[[nodiscard]] Error refuse_device_tensor_for_host_engine(Diagnostic& why, int index, bool is_input, const char* name);

// After the enqueue: copies staged outputs back into their tensors (null entries skipped).
void copy_back_host(DeviceState& state, executorch::aten::Tensor* const* tensors, size_t first_output, size_t count,
                    CopiedBytes& copied);

// Host engines' DeviceCall::finish_in_place.
void finish_in_place_host(DeviceState& state, size_t k, executorch::aten::Tensor& input,
                          executorch::aten::Tensor* write_back, size_t bytes, CopiedBytes& copied);

}  // namespace etrt::backend
