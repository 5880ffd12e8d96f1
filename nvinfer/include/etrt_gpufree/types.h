#pragma once
// Vocabulary of the GPU-free NvInfer implementation's own API (builder.h,
// trace.h): element types as its engine format stores them, where an engine's
// tensors live, and a tensor's description. Not part of NvInfer; etrt's
// adapter never includes this.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/data_type.h"
#include "common/shape.h"

// What the library exports; everything else in it is hidden.
#define ETRT_GPUFREE_API __attribute__((visibility("default")))

namespace etrt::gpufree {

// An opaque CUDA stream (cudaStream_t), or nullptr; opaque so no CUDA header is needed.
using StreamHandle = void*;

// Element types, with the values the engine format stores (format.h), their sizes and spellings.
using etrt::DataType;
using etrt::element_size;
using etrt::to_string;

// Host: the engine's "device" is the CPU, its tensors are host memory and its
// ops run on the calling thread. Device (CUDA mode): CUDA kernels over device
// memory, on the enqueue's stream.
enum class MemoryKind : uint8_t { kHost, kDevice };

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
