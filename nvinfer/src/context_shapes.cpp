// An execution context's tensor shapes (context_shapes.h).

#include "context_shapes.h"

namespace etrt::gpufree {

ContextShapes::ContextShapes(const EngineImpl::State& state)
    : state_(state), input_set_(state.model.io.size(), false), shapes_(static_cast<size_t>(state.model.num_tensors())) {
  set_static_input_shapes();
}

void ContextShapes::set_input(size_t io_index, const Shape& shape) {
  shapes_[io_index] = shape;
  if (!input_set_[io_index]) ++inputs_set_;
  input_set_[io_index] = true;
  inferred_ = false;
}

void ContextShapes::forget_inputs() {
  for (size_t i = 0; i < input_set_.size(); ++i) input_set_[i] = false;
  inputs_set_ = 0;
  inferred_ = false;
  set_static_input_shapes();
}

bool ContextShapes::tensor_shape(int32_t io_index, Shape* out, std::string* error) const {
  const Model& m = state_.model;
  const auto i = static_cast<size_t>(io_index);
  const TensorDesc& t = m.io[i];
  if (t.is_input) {
    *out = input_set_[i] ? shapes_[i] : t.shape;
    return true;
  }
  if (!all_inputs_set()) {
    // Like TensorRT: the declared shape, -1 where the engine cannot know yet.
    *out = t.shape;
    return true;
  }
  if (!infer()) {
    *error = "tensor_shape('" + t.name + "'): " + inference_error_;
    return false;
  }
  *out = shapes_[i];
  // A data-dependent output's dynamic dims stay unknown until it has run, as in TensorRT.
  if (t.data_dependent)
    for (int32_t d = 0; d < t.shape.rank; ++d)
      if (t.shape.d[d] < 0) out->d[d] = -1;
  return true;
}

bool ContextShapes::infer() const {
  if (!inferred_) {
    inference_ok_ = infer_shapes(state_.model, shapes_, &inference_error_);
    inferred_ = true;
  }
  return inference_ok_;
}

void ContextShapes::set_static_input_shapes() {
  const Model& m = state_.model;
  for (size_t i = 0; i < m.io.size(); ++i) {
    const TensorDesc& t = m.io[i];
    if (!t.is_input || input_set_[i] || !is_static(t.shape)) continue;
    shapes_[i] = t.shape;
    input_set_[i] = true;
    ++inputs_set_;
  }
}

}  // namespace etrt::gpufree
