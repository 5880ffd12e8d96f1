#include "backend/staging.h"

#include <cstdint>
#include <cstring>

#include "backend/last_error.h"

namespace etrt::backend {

bool make_staging_buffers(DeviceState* state, engine::MemoryKind kind, const std::vector<size_t>& staging_bytes,
                          std::string* error) {
  state->staging.clear();
  state->staging.reserve(staging_bytes.size());
  for (size_t k = 0; k < staging_bytes.size(); ++k) {
    state->staging.emplace_back();
    if (!state->staging.back().allocate(kind, staging_bytes[k], error)) {
      *error = "staging buffer for delegate argument " + std::to_string(k) + ": " + *error;
      return false;
    }
  }
  state->staged.assign(staging_bytes.size(), 0);
  return true;
}

bool fits_staging(const DeviceState& state, const char* delegate, size_t k, size_t bytes, const char* role,
                  const char* name, const char* instead) {
  const size_t capacity = state.staging[k].size();
  if (bytes <= capacity) return true;
  report_error(delegate,
               "%s '%s' needs %zu bytes, more than the %zu bytes etrt staged for it at load (its size at every "
               "profile's largest input shapes); pass it in %s",
               role, name, bytes, capacity, instead);
  return false;
}

bool prepare_host_staging(DeviceState* state, const std::vector<size_t>& staging_bytes, std::string* error) {
  return make_staging_buffers(state, engine::MemoryKind::kHost, staging_bytes, error);
}

bool bind_host(DeviceState& state, const char* delegate, size_t k, executorch::aten::Tensor& tensor, bool is_input,
               const char* name, void** address) {
  void* data = tensor.mutable_data_ptr();
  state.staged[k] = 0;
  if (reinterpret_cast<uintptr_t>(data) % engine::kIoAddressAlignment == 0) {
    *address = data;
    return true;
  }
  const size_t bytes = tensor.nbytes();
  if (!fits_staging(state, delegate, k, bytes, is_input ? "input" : "output", name,
                    "256-byte-aligned memory instead, which is bound in place"))
    return false;
  void* staging = state.staging[k].data();
  if (is_input && bytes > 0) std::memcpy(staging, data, bytes);
  state.staged[k] = 1;
  *address = staging;
  return true;
}

void copy_back_host(DeviceState& state, executorch::aten::Tensor* const* tensors, size_t first_output, size_t count) {
  for (size_t k = first_output; k < first_output + count; ++k) {
    if (state.staged[k] == 0 || tensors[k] == nullptr) continue;
    executorch::aten::Tensor& t = *tensors[k];
    if (t.nbytes() > 0) std::memcpy(t.mutable_data_ptr(), state.staging[k].data(), t.nbytes());
  }
}

void finish_in_place_host(DeviceState& state, size_t k, executorch::aten::Tensor& input,
                          executorch::aten::Tensor* write_back, size_t bytes) {
  if (bytes == 0) return;
  void* data = input.mutable_data_ptr();
  if (state.staged[k] != 0) std::memcpy(data, state.staging[k].data(), bytes);
  if (write_back != nullptr && write_back->mutable_data_ptr() != data)
    std::memmove(write_back->mutable_data_ptr(), data, bytes);
}

}  // namespace etrt::backend
