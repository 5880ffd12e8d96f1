#include "backend/delegate_loader.h"

#include <utility>

#include "backend/signature_check.h"
#include "blob/blob.h"
#include "engine/factory.h"

namespace etrt::backend {
namespace {

// Binds each blob IO binding (the delegate's argument order) to the engine
// tensor of the same name.
bool bind_io(const blob::Metadata& metadata, const engine::Engine& engine, DelegateState* state, std::string* error) {
  const int32_t n_engine = engine.num_io_tensors();
  if (static_cast<size_t>(n_engine) != metadata.io_bindings.size()) {
    *error = "the blob describes " + std::to_string(metadata.io_bindings.size()) + " IO tensors but the engine has " +
             std::to_string(n_engine) + "; the blob and its engine do not belong together: re-export the model";
    return false;
  }
  for (const blob::IoBinding& binding : metadata.io_bindings) {
    int32_t found = -1;
    for (int32_t i = 0; i < n_engine; ++i) {
      if (engine.io_tensor(i).name == binding.name) found = i;
    }
    if (found < 0) {
      *error = "the blob names IO tensor '" + binding.name + "', which the engine does not have; re-export the model";
      return false;
    }
    const engine::TensorDesc& desc = engine.io_tensor(found);
    if (desc.is_input != binding.is_input) {
      *error = "IO tensor '" + binding.name + "' is an " + (binding.is_input ? "input" : "output") +
               " in the blob but an " + (desc.is_input ? "input" : "output") + " of the engine; re-export the model";
      return false;
    }
    if (desc.is_shape_tensor) {
      *error = "input '" + binding.name +
               "' is a TensorRT shape tensor; etrt supports only execution tensors as delegate IO. Rebuild the engine "
               "so that shapes reach it through execution tensors";
      return false;
    }
    IoSlot slot{binding.name, found, desc.dtype};
    (binding.is_input ? state->inputs : state->outputs).push_back(std::move(slot));
  }
  return true;
}

bool build_profile_table(const engine::Engine& engine, DelegateState* state, std::string* error) {
  const int32_t n_profiles = engine.num_profiles();
  std::vector<profile::InputBounds> bounds(state->inputs.size());
  for (size_t i = 0; i < state->inputs.size(); ++i) {
    bounds[i].name = state->inputs[i].name;
    for (int32_t p = 0; p < n_profiles; ++p) {
      Shape mn, opt, mx;
      if (!engine.profile_shape(p, state->inputs[i].engine_index, &mn, &opt, &mx)) {
        *error = "the engine reports no bounds for input '" + state->inputs[i].name + "' under profile " +
                 std::to_string(p) + ": " + engine.last_error();
        return false;
      }
      bounds[i].min.push_back(mn);
      bounds[i].opt.push_back(opt);
      bounds[i].max.push_back(mx);
    }
  }
  return profile::ProfileTable::build(n_profiles, Span<const profile::InputBounds>(bounds.data(), bounds.size()),
                                      &state->table, error);
}

bool create_contexts(DelegateState* state, std::string* error) {
  engine::Engine& engine = *state->engine;
  const int32_t n_profiles = engine.num_profiles();
  if (state->options.strategy == ProfileStrategy::kSwitch || n_profiles == 1) {
    auto context = engine.create_context(engine::ContextOptions{});
    if (!context) {
      *error = std::string("could not create an execution context: ") + engine.last_error();
      return false;
    }
    state->contexts.push_back(std::move(context));
    return true;
  }
  // Context per profile: every context runs in the same scratch buffer. One
  // delegate executes one context at a time (state->mutex), so they never
  // need it at once.
  if (!state->scratch.allocate(engine.memory_kind(), engine.device_memory_size(), error)) return false;
  for (int32_t p = 0; p < n_profiles; ++p) {
    auto context = engine.create_context(engine::ContextOptions{/*user_managed_memory=*/true});
    if (!context) {
      *error = "could not create the execution context for profile " + std::to_string(p) + ": " + engine.last_error();
      return false;
    }
    if (!context->set_device_memory(state->scratch.data(), state->scratch.size())) {
      *error = "could not give profile " + std::to_string(p) + "'s context its scratch memory: " + context->last_error();
      return false;
    }
    if (p != 0 && !context->set_optimization_profile(p, nullptr)) {
      *error = "could not bind a context to profile " + std::to_string(p) + ": " + context->last_error();
      return false;
    }
    state->contexts.push_back(std::move(context));
  }
  return true;
}

}  // namespace

bool load_delegate(const void* data, size_t size, DelegateState* state, std::string* error) {
  blob::ParsedBlob parsed;
  if (!blob::parse_blob(data, size, &parsed, error)) return false;

  engine::EngineOptions engine_options;
  engine_options.device_id = parsed.metadata.device_id;
  state->engine = engine::deserialize_engine(parsed.engine, parsed.engine_size, engine_options, error);
  if (!state->engine) return false;
  if (!memory_kind_supported(state->engine->memory_kind())) {
    *error = "the engine runs on CUDA device memory, but this etrt build has no CUDA path; rebuild etrt with "
             "-DETRT_WITH_CUDA=ON";
    return false;
  }

  if (!bind_io(parsed.metadata, *state->engine, state, error)) return false;
  if (!build_profile_table(*state->engine, state, error)) return false;
  if (parsed.metadata.profile_signature && !check_signature(*parsed.metadata.profile_signature, state->table, error))
    return false;
  if (!create_contexts(state, error)) return false;

  state->input_shapes.resize(state->inputs.size());
  state->output_capacity.assign(state->outputs.size(), -1);
  state->arg_tensors.resize(state->inputs.size() + state->outputs.size());
  state->active_profile = 0;
  return true;
}

}  // namespace etrt::backend
