#pragma once
// The adapter's description of an engine's IO tensors (engine::TensorDesc) from NvInfer's, refusing what etrt cannot
// bind. Private to src/engine/tensorrt/; compiled against NvInfer.

#include <NvInferRuntime.h>

#include <vector>

#include "common/error.h"
#include "common/shape.h"
#include "engine/engine.h"

namespace etrt::engine::tensorrt {

// NvInfer's Dims as a Shape (the rank checked by the caller).
Shape to_shape(const nvinfer1::Dims& d);

// Every IO tensor of `engine`, in engine order: name, direction, element type, shape, whether it is a shape tensor.
// NotSupported for one etrt cannot bind (an element type outside engine::DataType, a non-linear layout, a non-shape
// tensor TensorRT places on the host); Internal for an engine that describes itself inconsistently.
[[nodiscard]] Error describe_io(nvinfer1::ICudaEngine& engine, std::vector<TensorDesc>* io, Diagnostic& why);

// Fills each output's aliased_input from the engine's own alias table (getAliasedInputTensor, TensorRT >= 10.15).
[[nodiscard]] Error describe_aliases(nvinfer1::ICudaEngine& engine, std::vector<TensorDesc>* io, Diagnostic& why);

}  // namespace etrt::engine::tensorrt
