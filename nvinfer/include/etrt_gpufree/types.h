#pragma once
// Vocabulary of the GPU-free NvInfer implementation's own API (builder.h,
// trace.h): element types as its engine format stores them, shapes, where an
// engine's tensors live, and a tensor's description. Not part of NvInfer; etrt's
// adapter never includes this. Like NVIDIA's headers, it includes nothing of
// etrt's: the library stands alone (nvinfer/README.md).

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

// What the library exports; everything else in it is hidden.
#define ETRT_GPUFREE_API __attribute__((visibility("default")))

namespace etrt::gpufree {

// An opaque CUDA stream (cudaStream_t), or nullptr; opaque so no CUDA header is needed.
using StreamHandle = void*;

// Element types. Their values, 0 to 7 in this order, are the engine format's dtype codes (format.h;
// python/etrt/gpufree mirrors them): append, never reorder.
enum class DataType : uint8_t { kFloat32, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool };

namespace types_detail {
inline constexpr size_t kSizes[] = {4, 2, 2, 1, 1, 4, 8, 1};  // by DataType value
inline constexpr const char* kNames[] = {"float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"};
inline constexpr size_t kCount = sizeof(kSizes) / sizeof(kSizes[0]);
}  // namespace types_detail

// Bytes per element; 0 for a code outside the enum (a damaged engine: callers refuse it).
constexpr size_t element_size(DataType type) {
  return static_cast<size_t>(type) < types_detail::kCount ? types_detail::kSizes[static_cast<size_t>(type)] : 0;
}

// The spelling messages and engine descriptions use ("float32", "int64", ...); "unknown" outside the enum.
constexpr const char* to_string(DataType type) {
  return static_cast<size_t>(type) < types_detail::kCount ? types_detail::kNames[static_cast<size_t>(type)] : "unknown";
}

// A tensor's dims, as NvInfer's Dims64 holds them: at most kMaxRank, -1 marking a dynamic one.
inline constexpr int32_t kMaxRank = 8;
struct Shape {
  int32_t rank = 0;
  int64_t d[kMaxRank] = {};

  friend constexpr bool operator==(const Shape& a, const Shape& b) {
    int32_t i = 0;
    while (a.rank == b.rank && i < a.rank && a.d[i] == b.d[i]) ++i;
    return a.rank == b.rank && i == a.rank;
  }
  friend constexpr bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
};

// make_shape({1, -1, 16}); a list longer than kMaxRank gives rank -1, which the builder refuses.
template <typename Int>
constexpr Shape make_shape(std::initializer_list<Int> dims) {
  Shape shape;
  shape.rank = dims.size() <= static_cast<size_t>(kMaxRank) ? static_cast<int32_t>(dims.size()) : -1;
  for (int32_t i = 0; i < shape.rank; ++i) shape.d[i] = static_cast<int64_t>(dims.begin()[i]);
  return shape;
}

// Host: the engine's "device" is the CPU, its tensors are host memory and its
// ops run on the calling thread. Device (CUDA mode): CUDA kernels over device
// memory, on the enqueue's stream.
enum class MemoryKind : uint8_t { kHost, kDevice };

// The TensorRT release whose rules an engine follows where releases differ (Builder::set_tensorrt_version): today,
// whether execution contexts share optimization profiles. k10 stands for 10.x and 11.x.
enum class TensorRTVersion : uint8_t { k10, k8_6 };

// TensorRT's nvinfer1::PreviewFeature, the one this implementation models, with NVIDIA's value: in 8.6,
// kPROFILE_SHARING_0806 lets execution contexts share optimization profiles ("This flag defaults to false"); from 10.0
// on sharing is always on and the flag is deprecated (Builder::set_preview_feature).
enum class PreviewFeature : int32_t { kPROFILE_SHARING_0806 = 2 };

struct TensorDesc {
  std::string name;
  bool is_input = false;
  DataType dtype = DataType::kFloat32;
  Shape shape;                   // -1 marks a dynamic dimension
  bool is_shape_tensor = false;  // a TensorRT shape tensor (IO of shape inference)
  bool on_host = false;          // getTensorLocation says kHOST (Builder::place_on_host)
  // An output whose dynamic dims depend on the input values (Builder::mark_data_dependent): they read -1 even
  // once every input shape is set, as TensorRT reports such outputs.
  bool data_dependent = false;
};

}  // namespace etrt::gpufree
