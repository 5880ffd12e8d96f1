// Delegate::load: blob bytes -> engine -> the plan (arguments and aliases, profile table, strategy, delegate-owned
// states, the call's arity) -> the executor's resources (execution contexts, scratch, staging buffers and, for device
// engines, the in-flight event and CUDA graph sets: executor_setup.cpp). Runs in BackendInterface::init(); may
// allocate. Also the destructor, which waits for the delegate's work in flight.

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include <executorch/runtime/platform/log.h>

#include "backend/glue/delegate.h"
#include "backend/rules/io_resolution.h"
#include "common/shape_text.h"
#include "common/utf8.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::backend {
Delegate::Delegate(const char* name, const LoadOptions& options) noexcept : options_(options) {
  std::snprintf(plan_.name, sizeof(plan_.name), "%s", name);
}

// TensorRT objects and device memory are released on the device they belong to, once the last execution's work is
// done: an execution with device-only IO returns with its work still queued on the caller's stream.
Delegate::~Delegate() { executor_.wait_for_in_flight(); }

Error Delegate::load(const void* blob, size_t size, const executorch::runtime::NamedDataMap* data, const void* scope,
                     Diagnostic& why) {
  blob::ParsedBlob parsed;
  Error status = blob::parse_blob(blob, size, &parsed, why);
  if (status != Error::Ok) return status;

  // The blob's device is current for everything a device engine does at load, and the caller's device again
  // afterwards. A host engine never touches CUDA, so a CUDA build runs host engines on machines without a GPU.
  DeviceGuard device;
  status = deserialize_engine(parsed, device, why);
  if (status != Error::Ok) return status;
  const bool on_device = executor_.device().device;
  const engine::StreamHandle stream = on_device ? load_stream() : nullptr;

  Resolution io;
  status = resolve_arguments(*engine_, parsed.metadata, &io, why);
  if (status == Error::Ok) status = resolve_profiles_and_states(*engine_, parsed.metadata, &io, why);
  if (status == Error::Ok) plan_load(parsed.metadata, io);
  if (status == Error::Ok) status = hold_states(parsed.metadata, io.states, data, scope, why);
  if (status == Error::Ok) status = executor_.initialize(*engine_, options_, scope, stream, why);
  if (status == Error::Ok && on_device) status = finish_load_work(why);
  if (status != Error::Ok) {
    // Whatever the failed load put on the load stream is finished before the delegate is destroyed; the load's
    // own error is the one to report.
    Diagnostic ignored;
    if (on_device) (void)finish_load_work(ignored);
    return status;
  }
  return Error::Ok;
}

// The blob's engine bytes, deserialized (engine::tensorrt::deserialize) into engine_ with the blob's device current
// when TensorRT deserializes on it; then the device a device engine runs on. The one place a load makes its engine.
Error Delegate::deserialize_engine(const blob::ParsedBlob& parsed, DeviceGuard& device, Diagnostic& why) {
  const int64_t device_id = parsed.metadata.device_id;
  if (engine::tensorrt::deserializes_on_device()) {
    const Error activated = device.activate(device_id, why);
    if (activated != Error::Ok) return activated;
  }
  engine::tensorrt::RuntimeOptions runtime;
  runtime.allow_host_code = options_.engine_host_code;
  runtime.plugin_libraries = options_.plugin_libraries;
  // The process's engine of these bytes and options (engine_cache.h), made here when there is none.
  const MakeEngine make = [&](std::unique_ptr<engine::Engine>* made, Diagnostic& reason) {
    const Error deserialized =
        engine::tensorrt::deserialize(parsed.engine, parsed.engine_size, device_id, runtime, made, reason);
    return deserialized != Error::Ok ? deserialized : apply_weight_streaming(**made, reason);
  };
  const EngineKey key = options_.share_engine ? engine_key(parsed.engine, parsed.engine_size, device_id,
                                                           options_.weight_streaming_budget,
                                                           options_.engine_host_code, options_.plugin_libraries)
                                              : EngineKey{};
  const Error status = acquire_engine(key, parsed.engine_size, options_.share_engine, make, &engine_, why);
  if (status != Error::Ok) return status;
  if (!memory_kind_supported(engine_->memory_kind())) {
    return fail(why, Error::NotSupported,
                "the engine runs on CUDA device memory, but this etrt build has no CUDA path; rebuild etrt with "
                "-DETRT_WITH_CUDA=ON");
  }
  if (engine_->memory_kind() != engine::MemoryKind::kDevice) return Error::Ok;
  if (!device.active()) {
    const Error activated = device.activate(device_id, why);
    if (activated != Error::Ok) return activated;
  }
  // Set now, so that the destructor makes the device current even when the load fails part-way.
  executor_.device().device = true;
  executor_.device().device_id = static_cast<int>(device_id);
  return Error::Ok;
}

// Applies the weight-streaming budget before the engine's first context (TensorRT allows no change while one
// exists): the one asked for, clamped to the streamable size, else TensorRT's automatic budget, falling back to
// 0 (stream everything) if that is refused.
Error Delegate::apply_weight_streaming(engine::Engine& engine, Diagnostic& why) {
  const int64_t requested = options_.weight_streaming_budget;
  const int64_t streamable = engine.streamable_weights_size();
  if (streamable <= 0) {
    if (requested >= 0)
      ET_LOG(Info,
             "TensorRT delegate %s: weight_streaming_budget ignored: the engine has no streamable weights (it was "
             "not built with weight streaming); all its weights stay on the device",
             plan_.name);
    return Error::Ok;
  }
  const int64_t budget = requested < 0 ? engine.weight_streaming_automatic_budget() : std::min(requested, streamable);
  if (engine.set_weight_streaming_budget(budget, why) != Error::Ok) {
    const Error fallback = requested >= 0 ? Error::InvalidArgument : engine.set_weight_streaming_budget(0, why);
    if (fallback != Error::Ok) {
      why.prepend("could not apply the weight-streaming budget: ");
      return fallback;
    }
    ET_LOG(Info, "TensorRT delegate %s: the automatic weight-streaming budget was refused; streaming every weight",
           plan_.name);
  }
  ET_LOG(Info, "TensorRT delegate %s: weight-streaming budget %lld of %lld streamable bytes", plan_.name,
         static_cast<long long>(engine.weight_streaming_budget()), static_cast<long long>(streamable));
  return Error::Ok;
}

// The plan's arguments (one per engine IO tensor, plan.h), profile table, strategy and default request, from the
// blob's resolution against the engine (io_resolution.h). The states' arguments are bound to them by hold_states.
void Delegate::plan_load(const blob::Metadata& metadata, Resolution& io) {
  plan_arguments(io.inputs, io.outputs, &plan_);
  plan_.table = std::move(io.table);
  plan_.strategy = options_.strategy == ProfileStrategy::kContextPerProfile && engine_->num_profiles() > 1
                       ? Strategy::kContextPerProfile
                       : Strategy::kSwitch;
  plan_.default_request = options_.default_request(plan_.table.num_profiles());
  if (metadata.io_bindings.empty())
    ET_LOG(Info, "TensorRT delegate %s: the blob lists no io_bindings; took %zu inputs and %zu outputs from the engine",
           plan_.name, io.inputs.size(), io.outputs.size());
  for (const ResolvedAlias& a : io.aliases) {
    if (a.entry >= 0) continue;
    ET_LOG(Info,
           "TensorRT delegate %s: output '%s' is written in place into input '%s' (the engine says so; the blob's "
           "aliased_io does not list it)",
           plan_.name, io.outputs[static_cast<size_t>(a.output)].display_name.c_str(),
           io.inputs[static_cast<size_t>(a.input)].display_name.c_str());
  }
}

// Gives each of the blob's delegate_state entries, checked by resolve_states (io_resolution.h), its storage
// (delegate_state.h), shared by name within the load's `scope`: the input and output arguments it names are bound to it
// and leave the call's arguments (plan_state). Its initial value, when the blob names one, comes from the program's
// named data, at exactly the state's size. Then the call's arity, which the states change (count_arguments).
Error Delegate::hold_states(const blob::Metadata& metadata, const std::vector<ResolvedState>& states,
                            const executorch::runtime::NamedDataMap* data, const void* scope, Diagnostic& why) {
  plan_.states.reserve(metadata.delegate_state.size());
  for (size_t k = 0; k < metadata.delegate_state.size(); ++k) {
    const blob::DelegateState& entry = metadata.delegate_state[k];
    const ResolvedState& resolved = states[k];
    const std::string state = escape_name(entry.name);
    const Shape& shape = resolved.shape;
    const bool in_place = resolved.in_place;
    StateSpec spec;
    spec.scope = scope;
    spec.name = entry.name;
    spec.kind = engine_->memory_kind();
    spec.device_id = executor_.device().device_id;
    spec.dtype = resolved.dtype;
    spec.shape = shape;
    spec.bytes = resolved.bytes;
    spec.initial_key = entry.initial_value;
    if (!entry.initial_value.empty()) {
      const std::string key = escape_name(entry.initial_value);
      if (data == nullptr) {
        return fail(why, Error::InvalidProgram,
                    "state '%s' starts from named data '%s', but the program carries no named data; re-export the "
                    "model with the state's initial value (or none, for zeros)",
                    state.c_str(), key.c_str());
      }
      auto initial = data->get_data(entry.initial_value.c_str());
      if (!initial.ok()) {
        return fail(why, Error::InvalidProgram,
                    "state '%s' starts from named data '%s', which the program does not have (error %d); re-export the "
                    "model, or load it with the .ptd file that holds its named data",
                    state.c_str(), key.c_str(), static_cast<int>(initial.error()));
      }
      if (initial->size() != spec.bytes) {
        const size_t got = initial->size();
        initial->Free();
        return fail(why, Error::InvalidProgram,
                    "state '%s' is %s %s (%zu bytes), but its initial value, named data '%s', has %zu bytes; "
                    "re-export the model",
                    state.c_str(), engine::to_string(spec.dtype), shape_text(shape).c_str(), spec.bytes, key.c_str(),
                    got);
      }
      const auto* bytes = static_cast<const uint8_t*>(initial->data());
      spec.initial.assign(bytes, bytes + spec.bytes);
      initial->Free();
    }
    plan_.states.emplace_back();
    OwnedState& owned = plan_.states.back();
    owned.input = resolved.input;
    owned.output = resolved.output;
    owned.in_place = in_place;
    owned.shape = shape;
    owned.bytes = spec.bytes;
    const StateUser user{plan_.name, &executor_.lock(), &executor_.device()};
    Error status = hold_state(std::move(spec), user, &owned.hold, why);
    if (status == Error::Ok && !in_place)
      status = owned.output_buffer.allocate(engine_->memory_kind(), owned.bytes, why);
    if (status != Error::Ok) return status;
    plan_state(k, &plan_);
  }
  count_arguments(&plan_);
  if (!plan_.states.empty())
    ET_LOG(Info, "TensorRT delegate %s: owns %zu state tensor(s); the call passes %zu tensors", plan_.name,
           plan_.states.size(), plan_.arity.passed);
  return Error::Ok;
}

}  // namespace etrt::backend
