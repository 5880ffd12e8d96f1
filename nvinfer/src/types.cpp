#include "etrt_gpufree/types.h"

namespace etrt::gpufree {

namespace {

struct DataTypeInfo {
  DataType type;
  size_t size;
  const char* name;
};

constexpr DataTypeInfo kDataTypes[] = {
    {DataType::kFloat32, 4, "float32"}, {DataType::kFloat16, 2, "float16"}, {DataType::kBFloat16, 2, "bfloat16"},
    {DataType::kInt8, 1, "int8"},       {DataType::kUInt8, 1, "uint8"},     {DataType::kInt32, 4, "int32"},
    {DataType::kInt64, 8, "int64"},     {DataType::kBool, 1, "bool"},
};

const DataTypeInfo* find(DataType t) {
  for (const DataTypeInfo& info : kDataTypes)
    if (info.type == t) return &info;
  return nullptr;
}

}  // namespace

size_t element_size(DataType t) {
  const DataTypeInfo* info = find(t);
  return info != nullptr ? info->size : 0;
}

const char* to_string(DataType t) {
  const DataTypeInfo* info = find(t);
  return info != nullptr ? info->name : "unknown";
}

}  // namespace etrt::gpufree
