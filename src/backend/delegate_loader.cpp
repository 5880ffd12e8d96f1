#include "backend/delegate_loader.h"

#include <algorithm>
#include <utility>

#include "backend/staging.h"
#include "backend/signature_check.h"
#include "blob/blob.h"
#include "engine/tensorrt/tensorrt_engine.h"

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

bool create_contexts(DelegateState* state, engine::StreamHandle stream, std::string* error) {
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
      *error =
          "could not give profile " + std::to_string(p) + "'s context its scratch memory: " + context->last_error();
      return false;
    }
    // On the load stream; load_delegate waits for it before returning, so no execution's stream races with it.
    if (p != 0 && !context->set_optimization_profile(p, stream)) {
      *error = "could not bind a context to profile " + std::to_string(p) + ": " + context->last_error();
      return false;
    }
    state->contexts.push_back(std::move(context));
  }
  return true;
}

// Bytes of a tensor of `shape` and `dtype`; 0 for a shape with a dynamic dim left.
size_t bytes_of(const Shape& shape, engine::DataType dtype) {
  const int64_t n = shape.numel();
  return n > 0 ? static_cast<size_t>(n) * engine::element_size(dtype) : 0;
}

// The largest output each profile can produce, for device engines, whose host outputs are staged through buffers
// made at load: every input is set to the profile's max shape and the output shapes read back, on the context
// bound to that profile if there is one, else on a probe context (no memory, never enqueued) switched to it on
// `stream`. An output larger at some smaller input shape is refused at execute with a clear error, never written
// past its buffer.
bool plan_output_staging(DelegateState* state, engine::StreamHandle stream, std::vector<size_t>* bytes,
                         std::string* error) {
  engine::Engine& engine = *state->engine;
  const bool per_profile = state->contexts.size() > 1;
  for (int32_t p = 0; p < state->table.num_profiles(); ++p) {
    std::unique_ptr<engine::ExecutionContext> probe;
    engine::ExecutionContext* context =
        per_profile ? state->contexts[static_cast<size_t>(p)].get() : (p == 0 ? state->contexts[0].get() : nullptr);
    if (context == nullptr) {
      probe = engine.create_context(engine::ContextOptions{/*user_managed_memory=*/true});
      if (!probe || !probe->set_optimization_profile(p, stream)) {
        *error = "sizing the output staging buffers: could not probe profile " + std::to_string(p) + ": " +
                 (probe ? probe->last_error() : engine.last_error());
        return false;
      }
      context = probe.get();
    }
    for (size_t i = 0; i < state->inputs.size(); ++i) {
      if (!context->set_input_shape(state->inputs[i].engine_index,
                                    state->table.bounds(p, static_cast<int32_t>(i)).max)) {
        *error = "sizing the output staging buffers: the engine refused input '" + state->inputs[i].name +
                 "' at profile " + std::to_string(p) + "'s max shape: " + context->last_error();
        return false;
      }
    }
    for (size_t o = 0; o < state->outputs.size(); ++o) {
      Shape shape;
      if (!context->tensor_shape(state->outputs[o].engine_index, &shape) || shape.numel() < 0) {
        *error = "sizing the output staging buffers: the engine cannot infer output '" + state->outputs[o].name +
                 "' at profile " + std::to_string(p) + "'s max input shapes: " + context->last_error();
        return false;
      }
      size_t& b = (*bytes)[state->inputs.size() + o];
      b = std::max(b, bytes_of(shape, state->outputs[o].dtype));
    }
    // The probe's switch may still be running on the load stream; a context is never destroyed with work in flight.
    if (probe && state->engine->memory_kind() == engine::MemoryKind::kDevice && !finish_load_work(error)) return false;
  }
  return true;
}

// Staging buffers for every argument (device engines: device memory, and the in-flight event, on the current --
// the blob's -- device; host engines: host memory, used only for tensors TensorRT's alignment rule refuses).
bool prepare_staging(DelegateState* state, bool on_device, int device_id, engine::StreamHandle stream,
                     std::string* error) {
  std::vector<size_t> bytes(state->inputs.size() + state->outputs.size(), 0);
  for (size_t i = 0; i < state->inputs.size(); ++i)
    for (int32_t p = 0; p < state->table.num_profiles(); ++p)
      bytes[i] =
          std::max(bytes[i], bytes_of(state->table.bounds(p, static_cast<int32_t>(i)).max, state->inputs[i].dtype));
  if (!plan_output_staging(state, stream, &bytes, error)) return false;
  return on_device ? prepare_device_state(&state->device, device_id, bytes, error)
                   : prepare_host_staging(&state->device, bytes, error);
}

}  // namespace

bool load_delegate(const void* data, size_t size, DelegateState* state, std::string* error) {
  blob::ParsedBlob parsed;
  if (!blob::parse_blob(data, size, &parsed, error)) return false;

  // The blob's device is current for everything a device engine does at load, and the caller's device again
  // afterwards. A host engine never touches CUDA, so a CUDA build runs host engines on machines without a GPU.
  const int64_t device_id = parsed.metadata.device_id;
  DeviceGuard device;
  if (engine::tensorrt::deserializes_on_device() && !device.activate(device_id, error)) return false;
  state->engine = engine::tensorrt::deserialize(parsed.engine, parsed.engine_size, device_id, error);
  if (!state->engine) return false;
  const bool on_device = state->engine->memory_kind() == engine::MemoryKind::kDevice;
  if (!memory_kind_supported(state->engine->memory_kind())) {
    *error =
        "the engine runs on CUDA device memory, but this etrt build has no CUDA path; rebuild etrt with "
        "-DETRT_WITH_CUDA=ON";
    return false;
  }
  if (on_device && !device.active() && !device.activate(device_id, error)) return false;
  const engine::StreamHandle stream = on_device ? load_stream() : nullptr;
  if (on_device) {
    // Set now, so that destroy_delegate() makes the device current even when the load fails part-way.
    state->device.device = true;
    state->device.device_id = static_cast<int>(device_id);
  }

  const bool loaded =
      bind_io(parsed.metadata, *state->engine, state, error) && build_profile_table(*state->engine, state, error) &&
      (!parsed.metadata.profile_signature ||
       check_signature(*parsed.metadata.profile_signature, state->table, error)) &&
      create_contexts(state, stream, error) &&
      prepare_staging(state, on_device, static_cast<int>(device_id), stream, error) &&
      (!on_device || finish_load_work(error));
  if (!loaded) {
    // Whatever the failed load put on the load stream is finished before the caller destroys the state.
    std::string ignored;
    if (on_device) finish_load_work(&ignored);
    return false;
  }

  state->input_shapes.resize(state->inputs.size());
  state->output_capacity.assign(state->outputs.size(), -1);
  state->arg_tensors.resize(state->inputs.size() + state->outputs.size());
  state->context_caches.resize(state->contexts.size());
  for (DelegateState::ContextCache& cache : state->context_caches) {
    cache.input_shapes.resize(state->inputs.size());
    cache.output_shapes.resize(state->outputs.size());
    cache.addresses.assign(state->inputs.size() + state->outputs.size(), nullptr);
  }
  state->active_profile = 0;
  return true;
}

void destroy_delegate(DelegateState* state) {
  // TensorRT objects and device memory are released on the device they belong to, once the last execution's
  // work is done: an execution with device-only IO returns with its work still queued on the caller's stream.
  DeviceGuard device;
  if (state->device.device && device.activate(state->device.device_id, nullptr, /*check_range=*/false))
    wait_for_in_flight(state->device);
  state->~DelegateState();
}

}  // namespace etrt::backend
