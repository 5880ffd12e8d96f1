#pragma once
// An execution context's tensor shapes: the inputs as set (an input without
// dynamic dims has its one shape from the start), the rest inferred from them
// and cached until an input shape or the profile changes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine_state.h"
#include "model.h"

namespace etrt::gpufree {

class ContextShapes {
 public:
  explicit ContextShapes(const EngineImpl::State& state);

  bool input_set(size_t io_index) const { return input_set_[io_index]; }
  // An input's shape as set, else the declared one (-1 for its dynamic dims).
  const Shape& input_shape(size_t io_index) const {
    return input_set_[io_index] ? shapes_[io_index] : state_.model.io[io_index].shape;
  }
  void set_input(size_t io_index, const Shape& shape);
  // After a profile switch: every dynamic input's shape must be set again.
  void forget_inputs();

  // Counted, not scanned: the backend asks once per output, and an engine may have thousands of IO tensors.
  bool all_inputs_set() const { return inputs_set_ == state_.num_inputs; }

  // What getTensorShape answers for the tensor at `io_index`; false when the inference fails.
  bool tensor_shape(int32_t io_index, Shape* out, std::string* error) const;

  // Output shapes from the current input shapes, cached until an input shape or the profile changes.
  bool infer() const;
  const std::string& inference_error() const { return inference_error_; }

  // By tensor id: inputs as set, the rest inferred.
  const std::vector<Shape>& all() const { return shapes_; }

 private:
  // An input without dynamic dims has its one shape from the start, as in TensorRT: enqueue needs no setInputShape.
  void set_static_input_shapes();

  const EngineImpl::State& state_;
  std::vector<bool> input_set_;        // by io index
  size_t inputs_set_ = 0;              // how many of input_set_ are true
  mutable std::vector<Shape> shapes_;  // by tensor id: inputs as set, the rest inferred
  mutable bool inferred_ = false;
  mutable bool inference_ok_ = false;
  mutable std::string inference_error_;
};

}  // namespace etrt::gpufree
