#pragma once
// The engine seam: the narrow interface the backend uses to drive an engine,
// so the ExecuTorch glue never includes NvInfer. One implementation: the
// TensorRT adapter (src/engine/tensorrt), built against NVIDIA's TensorRT or
// the project's GPU-free NvInfer implementation (nvinfer/), which holds the
// backend to TensorRT's contract:
//
//  * an engine has >= 1 profile; a new context starts on profile 0, or on none (-1) while another live context
//    holds profile 0 (TensorRT 8.6), and then runs nothing until it is switched to a free profile;
//  * set_optimization_profile(p, stream) must precede set_input_shape for
//    dynamic inputs, and after a switch every input shape must be set again;
//    the switch may enqueue work on `stream`, so switch and enqueue share it;
//  * an out-of-range profile index fails and changes nothing;
//  * set_input_shape outside the active profile's bounds fails;
//  * enqueue fails unless every input shape and every tensor address is set;
//  * two contexts must not run the same profile concurrently, and one context
//    is never enqueued from two streams at once.
//
// Calls are by IO index (0..num_io_tensors()-1, engine order); the TensorRT
// adapter maps indices to the names NvInfer wants. Fallible calls follow the
// project's error convention (common/error.h): they return an Error and write
// the reason, "<the NvInfer call>: <TensorRT's own words>", into the caller's
// Diagnostic. InvalidArgument: the caller's index, profile or shape, or the
// data (TensorRT's kINVALID_ARGUMENT at enqueue, e.g. a token id outside an
// embedding's vocabulary); NotSupported: an engine etrt cannot bind; Internal:
// TensorRT or CUDA failed.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/data_type.h"
#include "common/error.h"
#include "common/shape.h"

namespace etrt::engine {

// An opaque CUDA stream (cudaStream_t) or nullptr for host execution. Kept
// opaque so this header needs no CUDA.
using StreamHandle = void*;

// Element types and their sizes and spellings (common/data_type.h).
using etrt::DataType;
using etrt::element_size;
using etrt::to_string;
// The inverse of to_string: false (and *out untouched) for any other spelling.
[[nodiscard]] inline bool parse_data_type(const std::string& text, DataType* out) {
  return etrt::parse_data_type(text.c_str(), out);
}

struct TensorDesc {
  std::string name;
  std::string display_name;  // `name` as messages quote it: control characters and bad UTF-8 escaped
  bool is_input = false;
  DataType dtype = DataType::kFloat32;
  Shape shape;                     // -1 marks a dynamic dimension
  bool is_shape_tensor = false;    // TensorRT shape-inference IO; etrt refuses these
  // Outputs: the IO index of the input whose memory the engine writes this output into (TensorRT's
  // getAliasedInputTensor, e.g. an IKVCacheUpdateLayer's cache; TensorRT >= 10.15), else -1. Such an output must
  // be bound to the input's address.
  int32_t aliased_input = -1;
};

// TensorRT requires every I/O tensor address to be aligned to this many bytes
// (IExecutionContext::setTensorAddress); the backend binds aligned memory in
// place and stages the rest.
inline constexpr size_t kIoAddressAlignment = 256;

// Whether TensorRT takes `address` as it is: aligned (kIoAddressAlignment) and not null, since enqueueV3 refuses a
// null address even for an empty tensor (seen on TensorRT 8.6); the backend stages anything else.
inline bool io_address_aligned(const void* address) {
  return address != nullptr && reinterpret_cast<uintptr_t>(address) % kIoAddressAlignment == 0;
}

// Where the engine's tensors live. Host: plain pointers the CPU can touch.
// Device: CUDA device pointers (the backend stages host tensors).
enum class MemoryKind : uint8_t { kHost, kDevice };

class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;

  // The active optimization profile: 0 for a new context, -1 for one created while another held profile 0.
  virtual int32_t optimization_profile() const = 0;
  // Switch to `profile`, possibly enqueueing work on `stream`. After a
  // successful switch every input shape must be set again.
  [[nodiscard]] virtual Error set_optimization_profile(int32_t profile, StreamHandle stream, Diagnostic& why) = 0;

  // Set input `io_index`'s runtime shape; InvalidArgument outside the active profile.
  [[nodiscard]] virtual Error set_input_shape(int32_t io_index, const Shape& shape, Diagnostic& why) = 0;
  // The tensor's shape in this context: for inputs the shape last set, for
  // outputs the shape inferred from the current input shapes (-1 where not
  // yet inferable).
  [[nodiscard]] virtual Error tensor_shape(int32_t io_index, Shape* out, Diagnostic& why) const = 0;

  [[nodiscard]] virtual Error set_tensor_address(int32_t io_index, void* address, Diagnostic& why) = 0;

  // Supply the scratch memory a context created with user-managed memory
  // runs in; `size` must be at least Engine::device_memory_size().
  [[nodiscard]] virtual Error set_device_memory(void* memory, size_t size, Diagnostic& why) = 0;

  // InvalidArgument when the engine blamed the input data (TensorRT reported kINVALID_ARGUMENT, e.g. a token id
  // outside an embedding's vocabulary): the caller's data, not etrt or the engine, must change.
  [[nodiscard]] virtual Error enqueue(StreamHandle stream, Diagnostic& why) = 0;
};

struct ContextOptions {
  // Create the context without scratch memory; the caller gives it some with
  // set_device_memory() before enqueue (TensorRT kUSER_MANAGED). Lets one
  // buffer serve several contexts that never run at the same time.
  bool user_managed_memory = false;
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual int32_t num_io_tensors() const = 0;
  virtual const TensorDesc& io_tensor(int32_t io_index) const = 0;

  virtual int32_t num_profiles() const = 0;
  // min/opt/max of input `io_index` under `profile`; InvalidArgument for a bad
  // index or a non-input.
  [[nodiscard]] virtual Error profile_shape(int32_t profile, int32_t io_index, Shape* min, Shape* opt, Shape* max,
                                            Diagnostic& why) const = 0;

  virtual MemoryKind memory_kind() const = 0;
  // Scratch memory one context needs, for the largest profile.
  virtual size_t device_memory_size() const = 0;

  // Weight streaming (TensorRT engines built with kWEIGHT_STREAMING): the bytes of weights that may stay off the
  // device (0: the engine has none), TensorRT's automatic budget, and the budget in force. The budget can be set
  // only before the first context is created.
  virtual int64_t streamable_weights_size() const = 0;
  virtual int64_t weight_streaming_automatic_budget() const = 0;
  virtual int64_t weight_streaming_budget() const = 0;
  [[nodiscard]] virtual Error set_weight_streaming_budget(int64_t bytes, Diagnostic& why) = 0;

  // Whether execution contexts of this engine may hold one optimization profile at once (TensorRT's profile
  // sharing: always from 10.0 on; in 8.6 only for engines built with PreviewFeature::kPROFILE_SHARING_0806), so that
  // several sessions, each with contexts of its own, can run over it. Without it a profile one context holds is
  // refused to every other (the contract above). The first call may create and destroy contexts (8.6 has no query:
  // the adapter tries), so ask before creating any; the answer is kept.
  virtual bool profiles_shared_across_contexts() = 0;

  [[nodiscard]] virtual Error create_context(const ContextOptions& options, std::unique_ptr<ExecutionContext>* out,
                                             Diagnostic& why) = 0;
};

}  // namespace etrt::engine
