#include "backend/device/staging.h"

#include <cstdint>
#include <cstring>

namespace etrt::backend {

Error make_staging_buffers(DeviceState* state, engine::MemoryKind kind, const std::vector<size_t>& staging_bytes,
                           Diagnostic& why) {
  state->staging.clear();
  state->staging.reserve(staging_bytes.size());
  for (size_t k = 0; k < staging_bytes.size(); ++k) {
    state->staging.emplace_back();
    const Error status = state->staging.back().allocate(kind, staging_bytes[k], why);
    if (status != Error::Ok) {
      why.prepend("staging buffer for delegate argument %zu: ", k);
      return status;
    }
  }
  state->staged.assign(staging_bytes.size(), 0);
  return Error::Ok;
}

Error fits_staging(const DeviceState& state, Diagnostic& why, size_t k, size_t bytes, const char* role,
                   const char* name, const char* instead) {
  const size_t capacity = state.staging[k].size();
  if (bytes <= capacity) return Error::Ok;
  return fail(why, Error::InvalidArgument,
              "%s '%s' needs %zu bytes, more than the %zu bytes etrt staged for it at load (its size at every "
              "profile's largest input shapes); pass it in %s",
              role, name, bytes, capacity, instead);
}

Error refuse_missing_memory(Diagnostic& why, const char* role, const char* name, size_t bytes) {
  return fail(why, Error::InvalidArgument,
              "%s '%s' has no memory (a null data pointer for %zu bytes): ExecuTorch planned none for it; give it a "
              "buffer (Module::set_output for an output, a tensor with data for an input)",
              role, name, bytes);
}

Error prepare_host_staging(DeviceState* state, const std::vector<size_t>& staging_bytes, Diagnostic& why) {
  return make_staging_buffers(state, engine::MemoryKind::kHost, staging_bytes, why);
}

Error bind_host(DeviceState& state, Diagnostic& why, size_t k, executorch::aten::Tensor& tensor, bool is_input,
                const char* name, void** address, CopiedBytes& copied) {
  void* data = tensor.mutable_data_ptr();
  const Binding binding = choose_binding(host_engine_place_of(tensor), engine::io_address_aligned(data), state.reach);
  // Host code must never touch device memory: refuse before reading or binding it.
  if (binding == Binding::kRefuseOtherDevice)
    return refuse_device_tensor_for_host_engine(why, static_cast<int>(tensor.device_index()), is_input, name);
  state.staged[k] = kNotStaged;
  if (binding == Binding::kInPlace) {
    *address = data;
    return Error::Ok;
  }
  const size_t bytes = tensor.nbytes();
  if (data == nullptr && bytes > 0) return refuse_missing_memory(why, is_input ? "input" : "output", name, bytes);
  const Error fits = fits_staging(state, why, k, bytes, is_input ? "input" : "output", name,
                                  "256-byte-aligned memory instead, which is bound in place");
  if (fits != Error::Ok) return fits;
  void* staging = state.staging[k].data();
  if (is_input && bytes > 0) {
    std::memcpy(staging, data, bytes);
    copied.realigned += static_cast<int64_t>(bytes);
  }
  state.staged[k] = kStagedRealigned;
  *address = staging;
  return Error::Ok;
}

void copy_back_host(DeviceState& state, executorch::aten::Tensor* const* tensors, size_t first_output, size_t count,
                    CopiedBytes& copied) {
  for (size_t k = first_output; k < first_output + count; ++k) {
    if (state.staged[k] == kNotStaged || tensors[k] == nullptr) continue;
    executorch::aten::Tensor& t = *tensors[k];
    if (t.nbytes() == 0) continue;
    std::memcpy(t.mutable_data_ptr(), state.staging[k].data(), t.nbytes());
    copied.realigned += static_cast<int64_t>(t.nbytes());
  }
}

void finish_in_place_host(DeviceState& state, size_t k, executorch::aten::Tensor& input,
                          executorch::aten::Tensor* write_back, size_t bytes, CopiedBytes& copied) {
  if (bytes == 0) return;
  void* data = input.mutable_data_ptr();
  if (state.staged[k] != kNotStaged) {
    std::memcpy(data, state.staging[k].data(), bytes);
    copied.realigned += static_cast<int64_t>(bytes);
  }
  if (write_back != nullptr && write_back->mutable_data_ptr() != data) {
    std::memmove(write_back->mutable_data_ptr(), data, bytes);
    copied.write_back += static_cast<int64_t>(bytes);
  }
}

}  // namespace etrt::backend
