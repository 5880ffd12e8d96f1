#pragma once
// Host engines (the GPU-free NvInfer implementation's host mode) under
// TensorRT's I/O alignment rule (engine::kIoAddressAlignment): a tensor whose
// memory is aligned is bound in place; one that is not -- ExecuTorch plans
// 16-byte alignment -- is copied through the delegate's staging buffer for
// that argument, made at load (prepare_host_staging). Shared by the builds with
// and without CUDA. No CUDA here.

#include <cstddef>
#include <string>
#include <vector>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "backend/device.h"

namespace etrt::backend {

// Makes one host staging buffer per delegate argument, `staging_bytes[k]` each.
bool prepare_host_staging(DeviceState* state, const std::vector<size_t>& staging_bytes, std::string* error);

// The address a host engine gets for argument `k`; inputs that need staging are copied now.
bool bind_host(DeviceState& state, const char* delegate, size_t k, executorch::aten::Tensor& tensor, bool is_input,
               const char* name, void** address);

// After the enqueue: copies staged outputs back into their tensors.
void copy_back_host(DeviceState& state, executorch::aten::Tensor* const* tensors, size_t first_output, size_t count);

}  // namespace etrt::backend
