#pragma once
// The loop that runs a model's ops: resolves each op's operands to pointers
// and sizes and calls a Kernels. Knows nothing of contexts, profiles or where
// the pointers came from, so a CUDA Kernels can reuse it unchanged.

#include <string>
#include <vector>

#include "kernels.h"
#include "model.h"

namespace etrt::gpufree {

// `data[id]` and `shapes[id]` give every tensor's storage and current shape (from infer_shapes), by tensor id.
// Fails only on data errors the shapes cannot reveal (an embedding id out of range), naming the op and the value.
bool run_ops(const Model& model, const std::vector<void*>& data, const std::vector<Shape>& shapes,
             const Kernels& kernels, std::string* error);

}  // namespace etrt::gpufree
