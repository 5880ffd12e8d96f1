// Where an execution context's tensors live (context_bindings.h).

#include "context_bindings.h"

namespace etrt::gpufree {

ContextBindings::ContextBindings(const EngineImpl::State& state)
    : address_set_(state.model.io.size(), false), data_(static_cast<size_t>(state.model.num_tensors()), nullptr) {
  const Model& m = state.model;
  // CUDA mode: the engine uploaded its weights before creating this context (EngineImpl::prepare_device).
  for (size_t i = 0; i < m.constants.size(); ++i)
    data_[static_cast<size_t>(m.constant_id(i))] =
        state.device_mode() ? state.device_constants[i] : const_cast<float*>(m.constants[i].values.data());
}

void ContextBindings::place_intermediates(const EngineImpl::State& state) {
  const Model& m = state.model;
  for (size_t i = 0; i < m.intermediates.size(); ++i)
    data_[static_cast<size_t>(m.intermediate_id(i))] = scratch_ + state.plan.intermediate_offsets[i];
}

}  // namespace etrt::gpufree
