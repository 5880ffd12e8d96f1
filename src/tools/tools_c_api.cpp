// libetrt_tools' C ABI (include/etrt/tools_c_api.h): thin glue over inspection.h, the byte-count rule
// (common/byte_count.h) and a host engine's placement rule (backend/staging.h host_engine_binds).
#include "etrt/tools_c_api.h"

#include <new>
#include <string>

#include "backend/device/staging.h"
#include "common/byte_count.h"
#include "tools/inspection.h"

struct etrt_text {
  std::string text;
};

namespace {

using ReadFn = etrt::Error (*)(const void*, size_t, std::string*);

int read(ReadFn fn, const void* data, size_t size, etrt_text** out) noexcept {
  if (out == nullptr) return ETRT_E_INVALID_ARGUMENT;
  *out = nullptr;
  if (data == nullptr && size > 0) return ETRT_E_INVALID_ARGUMENT;
  auto* text = new (std::nothrow) etrt_text();
  if (text == nullptr) return ETRT_E_NO_MEMORY;
  const etrt::Error e = fn(data == nullptr ? "" : data, size, &text->text);
  if (e == etrt::Error::MemoryAllocationFailed) {
    delete text;
    return ETRT_E_NO_MEMORY;
  }
  *out = text;
  if (e == etrt::Error::Ok) return ETRT_OK;
  return e == etrt::Error::NotSupported ? ETRT_E_NOT_SUPPORTED : ETRT_E_FAILED;
}

}  // namespace

extern "C" {

uint32_t etrt_tools_abi_version(void) { return ETRT_TOOLS_ABI_VERSION; }

const char* etrt_text_data(const etrt_text* text) { return text != nullptr ? text->text.c_str() : ""; }

size_t etrt_text_size(const etrt_text* text) { return text != nullptr ? text->text.size() : 0; }

void etrt_text_free(etrt_text* text) { delete text; }

int etrt_blob_describe(const void* data, size_t size, etrt_text** out) {
  return read(etrt::tools::describe_blob, data, size, out);
}

int etrt_engine_describe(const void* data, size_t size, etrt_text** out) {
  return read(etrt::tools::describe_engine, data, size, out);
}

int etrt_delegate_resolve(const void* data, size_t size, etrt_text** out) {
  return read(etrt::tools::resolve_delegate, data, size, out);
}

int etrt_parse_byte_count(const void* data, size_t size, int64_t* bytes) {
  if (bytes == nullptr) return ETRT_E_INVALID_ARGUMENT;
  return etrt::parse_byte_count(static_cast<const char*>(data), size, bytes) ? ETRT_OK : ETRT_E_INVALID_ARGUMENT;
}

int etrt_host_engine_binds(int32_t device_type, int32_t device_index, int is_input, const char* name,
                           etrt_text** out) {
  using executorch::runtime::etensor::DeviceType;
  using executorch::runtime::etensor::kNumDeviceTypes;
  if (out == nullptr) return ETRT_E_INVALID_ARGUMENT;
  *out = nullptr;
  if (name == nullptr || device_type < 0 || static_cast<size_t>(device_type) >= kNumDeviceTypes)
    return ETRT_E_INVALID_ARGUMENT;
  etrt::Diagnostic why;
  if (etrt::backend::host_engine_binds(why, static_cast<DeviceType>(device_type), device_index, is_input != 0, name) ==
      etrt::Error::Ok)
    return ETRT_OK;
  auto* text = new (std::nothrow) etrt_text();
  if (text == nullptr) return ETRT_E_NO_MEMORY;
  try {
    text->text = why.c_str();
  } catch (const std::bad_alloc&) {
    delete text;
    return ETRT_E_NO_MEMORY;
  }
  *out = text;
  return ETRT_E_FAILED;
}

int etrt_build_has_cuda(void) { return etrt::tools::built_with_cuda() ? 1 : 0; }

int etrt_device_memory(int32_t device, uint64_t* bytes) {
  if (bytes == nullptr) return ETRT_E_INVALID_ARGUMENT;
  etrt::Diagnostic why;
  return etrt::tools::device_memory(device, bytes, why) == etrt::Error::Ok ? ETRT_OK : ETRT_E_NOT_SUPPORTED;
}

}  // extern "C"
