#pragma once
// Element types, shared by every layer and by the GPU-free NvInfer
// implementation's engine format (which stores these values): one table, so
// the size, the spelling and the parser cannot disagree. Header-only, like
// shape.h, and allocation-free.

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace etrt {

enum class DataType : uint8_t {
  kFloat32,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool,
};

namespace data_type_detail {
struct Info {
  DataType type;
  size_t size;
  const char* name;
};
inline constexpr Info kInfos[] = {
    {DataType::kFloat32, 4, "float32"}, {DataType::kFloat16, 2, "float16"}, {DataType::kBFloat16, 2, "bfloat16"},
    {DataType::kInt8, 1, "int8"},       {DataType::kUInt8, 1, "uint8"},     {DataType::kInt32, 4, "int32"},
    {DataType::kInt64, 8, "int64"},     {DataType::kBool, 1, "bool"},
};
constexpr const Info* find(DataType t) {
  for (const Info& info : kInfos)
    if (info.type == t) return &info;
  return nullptr;
}
}  // namespace data_type_detail

// Bytes per element of `t`; 0 for a value outside the enum (only a corrupted
// cast makes one; callers treat it as invalid).
constexpr size_t element_size(DataType t) {
  const data_type_detail::Info* info = data_type_detail::find(t);
  return info != nullptr ? info->size : 0;
}

// "float32", "int64", ... (the spelling Torch-TensorRT uses in its blobs); "unknown" outside the enum.
constexpr const char* to_string(DataType t) {
  const data_type_detail::Info* info = data_type_detail::find(t);
  return info != nullptr ? info->name : "unknown";
}

// The inverse of to_string: false (and *out untouched) for any other spelling.
[[nodiscard]] inline bool parse_data_type(const char* text, DataType* out) {
  for (const data_type_detail::Info& info : data_type_detail::kInfos) {
    if (std::strcmp(text, info.name) == 0) {
      *out = info.type;
      return true;
    }
  }
  return false;
}

}  // namespace etrt
