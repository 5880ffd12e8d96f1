#include "backend/delegate_loader.h"

#include <algorithm>
#include <utility>

#include "backend/signature_check.h"
#include "backend/staging.h"
#include "blob/blob.h"
#include "common/shape_text.h"
#include "common/utf8.h"
#include "engine/tensorrt/tensorrt_engine.h"

#include <executorch/runtime/platform/log.h>

namespace etrt::backend {
namespace {

// Engine IO name -> engine index (NameIndex in delegate_state.h).
NameIndex index_engine_io(const engine::Engine& engine) {
  NameIndex index;
  index.reserve(static_cast<size_t>(engine.num_io_tensors()));
  for (int32_t i = 0; i < engine.num_io_tensors(); ++i) index.emplace(engine.io_tensor(i).name, i);
  return index;
}

// The slot of IO tensor `engine_index` of `engine`, refusing what etrt cannot bind.
bool make_slot(const engine::Engine& engine, int32_t engine_index, IoSlot* slot, std::string* error) {
  const engine::TensorDesc& desc = engine.io_tensor(engine_index);
  if (desc.is_shape_tensor) {
    *error = "input '" + desc.display_name +
             "' is a TensorRT shape tensor; etrt supports only execution tensors as delegate IO. Rebuild the engine "
             "so that shapes reach it through execution tensors";
    return false;
  }
  *slot = IoSlot{desc.name, desc.display_name, engine_index, desc.dtype};
  slot->scalar_type = scalar_type_of(desc.dtype);
  return true;
}

// The number after the last '.' or '_' of `name` (e.g. "output_1" -> 1), or -1.
int64_t name_index(const std::string& name) {
  const size_t at = name.find_last_of("._");
  if (at == std::string::npos || at + 1 == name.size() || name.size() - at > 10) return -1;
  int64_t index = 0;
  for (size_t i = at + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    index = index * 10 + (name[i] - '0');
  }
  return index;
}

// A blob without io_bindings: every engine IO tensor is an argument, inputs then outputs. Within each, the order
// the names' numeric suffixes give ("input_0", "input_1", ...: how exporters name delegate IO) when every name has
// a distinct one, else the engine's order.
bool bind_io_from_engine(const engine::Engine& engine, DelegateState* state, std::string* error) {
  for (const bool inputs : {true, false}) {
    std::vector<int32_t> order;
    for (int32_t i = 0; i < engine.num_io_tensors(); ++i)
      if (engine.io_tensor(i).is_input == inputs) order.push_back(i);
    auto by_suffix = [&engine](int32_t a, int32_t b) {
      return name_index(engine.io_tensor(a).name) < name_index(engine.io_tensor(b).name);
    };
    std::vector<int32_t> sorted = order;
    std::stable_sort(sorted.begin(), sorted.end(), by_suffix);
    bool distinct = true;
    for (size_t k = 0; k < sorted.size(); ++k)
      distinct = distinct && name_index(engine.io_tensor(sorted[k]).name) >= 0 &&
                 (k == 0 || by_suffix(sorted[k - 1], sorted[k]));
    for (int32_t i : distinct ? sorted : order) {
      IoSlot slot;
      if (!make_slot(engine, i, &slot, error)) return false;
      (inputs ? state->inputs : state->outputs).push_back(std::move(slot));
    }
  }
  ET_LOG(Info, "TensorRT delegate %s: the blob lists no io_bindings; took %zu inputs and %zu outputs from the engine",
         state->name, state->inputs.size(), state->outputs.size());
  return true;
}

// Binds each blob IO binding to the engine tensor of the same name. The delegate's arguments are the inputs in
// the order the bindings list them, then the outputs likewise; inputs and outputs may be interleaved.
bool bind_io(const blob::Metadata& metadata, const engine::Engine& engine, DelegateState* state, std::string* error) {
  if (metadata.io_bindings.empty()) return bind_io_from_engine(engine, state, error);
  const int32_t n_engine = engine.num_io_tensors();
  if (static_cast<size_t>(n_engine) != metadata.io_bindings.size()) {
    *error = "the blob describes " + std::to_string(metadata.io_bindings.size()) + " IO tensors but the engine has " +
             std::to_string(n_engine) + "; the blob and its engine do not belong together: re-export the model";
    return false;
  }
  const NameIndex engine_io = index_engine_io(engine);
  for (const blob::IoBinding& binding : metadata.io_bindings) {
    const int32_t found = find_name(engine_io, binding.name);
    if (found < 0) {
      *error = "the blob names IO tensor '" + escape_name(binding.name) +
               "', which the engine does not have; re-export the model";
      return false;
    }
    const engine::TensorDesc& desc = engine.io_tensor(found);
    if (desc.is_input != binding.is_input) {
      *error = "IO tensor '" + desc.display_name + "' is an " + (binding.is_input ? "input" : "output") +
               " in the blob but an " + (desc.is_input ? "input" : "output") + " of the engine; re-export the model";
      return false;
    }
    IoSlot slot;
    if (!make_slot(engine, found, &slot, error)) return false;
    (binding.is_input ? state->inputs : state->outputs).push_back(std::move(slot));
  }
  return true;
}

// Makes output `o` write into input `i` in place.
bool link_alias(DelegateState* state, int32_t o, int32_t i, const std::string& where, std::string* error) {
  IoSlot& output = state->outputs[static_cast<size_t>(o)];
  IoSlot& input = state->inputs[static_cast<size_t>(i)];
  if (output.alias_of >= 0) {
    *error = where + ": output '" + output.display_name + "' is already written in place into input '" +
             state->inputs[static_cast<size_t>(output.alias_of)].display_name + "'; re-export the model";
    return false;
  }
  if (input.alias_target) {
    *error = where + ": input '" + input.display_name +
             "' is already updated in place by another output; an input takes one aliased output at most: "
             "re-export the model";
    return false;
  }
  output.alias_of = i;
  input.alias_target = true;
  ++state->num_aliased;
  return true;
}

// Resolves the blob's aliased_io against the engine: each entry names an output written in place into an input.
// kv_cache_update pairs must be the engine's own (getAliasedInputTensor); user pairs must have one shape and type.
// An alias the engine reports but the blob does not list is applied too: TensorRT requires the output to share the
// input's memory.
bool resolve_aliases(const blob::Metadata& metadata, const engine::Engine& engine, DelegateState* state,
                     std::string* error) {
  const NameIndex outputs = index_names(state->outputs), inputs = index_names(state->inputs);
  for (size_t k = 0; k < metadata.aliased_io.size(); ++k) {
    const blob::AliasedIo& alias = metadata.aliased_io[k];
    const std::string where = "aliased_io[" + std::to_string(k) + "] (output '" + escape_name(alias.output) +
                              "', input '" + escape_name(alias.input) + "', kind '" + escape_name(alias.kind) + "')";
    const int32_t o = find_name(outputs, alias.output);
    const int32_t i = find_name(inputs, alias.input);
    if (o < 0 || i < 0) {
      *error = where + " names " + (o < 0 ? "an output" : "an input") +
               " the delegate does not have; re-export the model";
      return false;
    }
    const engine::TensorDesc& out = engine.io_tensor(state->outputs[static_cast<size_t>(o)].engine_index);
    const engine::TensorDesc& in = engine.io_tensor(state->inputs[static_cast<size_t>(i)].engine_index);
    if (alias.kind == blob::kAliasKindKvCacheUpdate) {
      if (out.aliased_input != state->inputs[static_cast<size_t>(i)].engine_index) {
        const std::string engine_says =
            out.aliased_input < 0 ? "none" : "'" + engine.io_tensor(out.aliased_input).display_name + "'";
        *error = where + " disagrees with the engine, whose alias for output '" + out.display_name + "' is " +
                 engine_says +
                 " (getAliasedInputTensor); the blob and its engine do not belong together: re-export the model";
        return false;
      }
    } else if (alias.kind == blob::kAliasKindUser) {
      if (out.shape != in.shape || out.dtype != in.dtype) {
        *error = where + ": the output is " + engine::to_string(out.dtype) + " " + shape_text(out.shape) +
                 " but the input is " + engine::to_string(in.dtype) + " " + shape_text(in.shape) +
                 "; a user alias writes the output into the input's memory, so they must have one shape and type: "
                 "re-export the model";
        return false;
      }
    } else {
      *error = where + " has an unknown kind; etrt knows '" + std::string(blob::kAliasKindKvCacheUpdate) + "' and '" +
               blob::kAliasKindUser + "': re-export the model with one of them";
      return false;
    }
    if (!link_alias(state, o, i, where, error)) return false;
  }
  std::vector<int32_t> input_slot(static_cast<size_t>(engine.num_io_tensors()), -1);  // engine index -> input slot
  for (size_t k = 0; k < state->inputs.size(); ++k)
    input_slot[static_cast<size_t>(state->inputs[k].engine_index)] = static_cast<int32_t>(k);
  for (size_t o = 0; o < state->outputs.size(); ++o) {
    const engine::TensorDesc& out = engine.io_tensor(state->outputs[o].engine_index);
    if (out.aliased_input < 0 || state->outputs[o].alias_of >= 0) continue;
    const int32_t i = input_slot[static_cast<size_t>(out.aliased_input)];
    if (!link_alias(state, static_cast<int32_t>(o), i, "the engine's alias of output '" + out.display_name + "'",
                    error))
      return false;
    ET_LOG(Info,
           "TensorRT delegate %s: output '%s' is written in place into input '%s' (the engine says so; the blob's "
           "aliased_io does not list it)",
           state->name, out.display_name.c_str(), state->inputs[static_cast<size_t>(i)].display_name.c_str());
  }
  return true;
}

// Applies the weight-streaming budget before the engine's first context (TensorRT allows no change while one
// exists): the one asked for, clamped to the streamable size, else TensorRT's automatic budget, falling back to
// 0 (stream everything) if that is refused.
bool apply_weight_streaming(engine::Engine& engine, DelegateState* state, std::string* error) {
  const int64_t requested = state->options.weight_streaming_budget;
  const int64_t streamable = engine.streamable_weights_size();
  if (streamable <= 0) {
    if (requested >= 0)
      ET_LOG(Info,
             "TensorRT delegate %s: weight_streaming_budget ignored: the engine has no streamable weights (it was "
             "not built with weight streaming); all its weights stay on the device",
             state->name);
    return true;
  }
  const int64_t budget = requested < 0 ? engine.weight_streaming_automatic_budget() : std::min(requested, streamable);
  if (!engine.set_weight_streaming_budget(budget)) {
    if (requested >= 0 || !engine.set_weight_streaming_budget(0)) {
      *error = std::string("could not apply the weight-streaming budget: ") + engine.last_error();
      return false;
    }
    ET_LOG(Info, "TensorRT delegate %s: the automatic weight-streaming budget was refused; streaming every weight",
           state->name);
  }
  ET_LOG(Info, "TensorRT delegate %s: weight-streaming budget %lld of %lld streamable bytes", state->name,
         static_cast<long long>(engine.weight_streaming_budget()), static_cast<long long>(streamable));
  return true;
}

bool build_profile_table(const engine::Engine& engine, DelegateState* state, std::string* error) {
  const int32_t n_profiles = engine.num_profiles();
  std::vector<profile::InputBounds> bounds(state->inputs.size());
  for (size_t i = 0; i < state->inputs.size(); ++i) {
    bounds[i].name = state->inputs[i].display_name;  // the table's names are for messages
    for (int32_t p = 0; p < n_profiles; ++p) {
      Shape mn, opt, mx;
      if (!engine.profile_shape(p, state->inputs[i].engine_index, &mn, &opt, &mx)) {
        *error = "the engine reports no bounds for input '" + state->inputs[i].display_name + "' under profile " +
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
        *error = "sizing the output staging buffers: the engine refused input '" + state->inputs[i].display_name +
                 "' at profile " + std::to_string(p) + "'s max shape: " + context->last_error();
        return false;
      }
    }
    for (size_t o = 0; o < state->outputs.size(); ++o) {
      Shape shape;
      if (!context->tensor_shape(state->outputs[o].engine_index, &shape) || shape.numel() < 0) {
        *error = "sizing the output staging buffers: the engine cannot infer output '" +
                 state->outputs[o].display_name + "' at profile " + std::to_string(p) +
                 "'s max input shapes: " + context->last_error();
        return false;
      }
      size_t& b = (*bytes)[state->inputs.size() + o];
      // An output written in place into an input is never staged on its own.
      if (state->outputs[o].alias_of < 0) b = std::max(b, bytes_of(shape, state->outputs[o].dtype));
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

  const bool loaded = bind_io(parsed.metadata, *state->engine, state, error) &&
                      resolve_aliases(parsed.metadata, *state->engine, state, error) &&
                      apply_weight_streaming(*state->engine, state, error) &&
                      build_profile_table(*state->engine, state, error) &&
                      (!parsed.metadata.profile_signature ||
                       check_signature(*parsed.metadata.profile_signature, state->table, state->inputs, error)) &&
                      create_contexts(state, stream, error) &&
                      prepare_staging(state, on_device, static_cast<int>(device_id), stream, error) &&
                      (!on_device || finish_load_work(error));
  if (!loaded) {
    // Whatever the failed load put on the load stream is finished before the caller destroys the state; the load's
    // own error is the one to report.
    std::string ignored;
    if (on_device) (void)finish_load_work(&ignored);
    return false;
  }

  state->input_shapes.resize(state->inputs.size());
  state->last_choice.input_shapes.resize(state->inputs.size());
  state->output_capacity.assign(state->outputs.size(), -1);
  state->arg_tensors.resize(state->inputs.size() + state->outputs.size());
  state->context_caches.resize(state->contexts.size());
  for (DelegateState::ContextCache& cache : state->context_caches) {
    cache.input_shapes.resize(state->inputs.size());
    cache.output_shapes.resize(state->outputs.size());
    cache.addresses.assign(state->inputs.size() + state->outputs.size(), nullptr);
  }
  state->active_profile = 0;
  if (on_device && state->options.cuda_graphs)
    prepare_graphs(&state->device, state->contexts.size(), state->inputs.size(),
                   state->inputs.size() + state->outputs.size());
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
