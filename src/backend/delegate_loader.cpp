// Delegate::load: blob bytes -> engine -> IO slots and aliases -> profile table -> execution contexts -> staging
// buffers (and, for device engines, the in-flight event and CUDA graph sets). Runs in BackendInterface::init();
// may allocate. Also the destructor, which waits for the delegate's work in flight.

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include <executorch/runtime/platform/log.h>

#include "backend/delegate.h"
#include "backend/io_resolution.h"
#include "backend/staging.h"
#include "common/shape_text.h"
#include "common/utf8.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::backend {
namespace {

// Bytes of a tensor of `shape` and `dtype`; 0 for a shape with a dynamic dim left.
size_t bytes_of(const Shape& shape, engine::DataType dtype) {
  const int64_t n = shape.numel();
  return n > 0 ? static_cast<size_t>(n) * engine::element_size(dtype) : 0;
}

}  // namespace

Delegate::Delegate(const char* name, const LoadOptions& options) noexcept : options_(options) {
  std::snprintf(name_, sizeof(name_), "%s", name);
}

Delegate::~Delegate() {
  // TensorRT objects and device memory are released on the device they belong to, once the last execution's
  // work is done: an execution with device-only IO returns with its work still queued on the caller's stream.
  DeviceGuard device;
  Diagnostic ignored;  // a device that cannot be made current: there is nothing to wait on it for
  if (device_.device && device.activate(device_.device_id, ignored, /*check_range=*/false) == Error::Ok)
    wait_for_in_flight(device_);
}

Error Delegate::load(const void* blob, size_t size, const executorch::runtime::NamedDataMap* data, const void* scope,
                     Diagnostic& why) {
  blob::ParsedBlob parsed;
  Error status = blob::parse_blob(blob, size, &parsed, why);
  if (status != Error::Ok) return status;

  // The blob's device is current for everything a device engine does at load, and the caller's device again
  // afterwards. A host engine never touches CUDA, so a CUDA build runs host engines on machines without a GPU.
  DeviceGuard device;
  status = deserialize(parsed, device, why);
  if (status != Error::Ok) return status;
  const bool on_device = device_.device;
  const engine::StreamHandle stream = on_device ? load_stream() : nullptr;

  Resolution io;
  status = resolve_arguments(*engine_, parsed.metadata, &io, why);
  if (status == Error::Ok) status = resolve_profiles_and_states(*engine_, parsed.metadata, &io, why);
  if (status == Error::Ok) adopt(parsed.metadata, io);
  if (status == Error::Ok) status = bind_state(parsed.metadata, io.states, data, scope, why);
  if (status == Error::Ok) status = create_contexts(stream, scope, why);
  if (status == Error::Ok) status = prepare_staging(stream, why);
  if (status == Error::Ok && on_device) status = finish_load_work(why);
  if (status != Error::Ok) {
    // Whatever the failed load put on the load stream is finished before the delegate is destroyed; the load's
    // own error is the one to report.
    Diagnostic ignored;
    if (on_device) (void)finish_load_work(ignored);
    return status;
  }
  size_execution_scratch();
  return Error::Ok;
}

Error Delegate::deserialize(const blob::ParsedBlob& parsed, DeviceGuard& device, Diagnostic& why) {
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
  device_.device = true;
  device_.device_id = static_cast<int>(device_id);
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
             name_);
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
           name_);
  }
  ET_LOG(Info, "TensorRT delegate %s: weight-streaming budget %lld of %lld streamable bytes", name_,
         static_cast<long long>(engine.weight_streaming_budget()), static_cast<long long>(streamable));
  return Error::Ok;
}

// Takes the slots and the profile table the blob's resolution against the engine built (io_resolution.h).
void Delegate::adopt(const blob::Metadata& metadata, Resolution& io) {
  inputs_ = std::move(io.inputs);
  outputs_ = std::move(io.outputs);
  table_ = std::move(io.table);
  num_aliased_ = io.aliases.size();
  if (metadata.io_bindings.empty())
    ET_LOG(Info, "TensorRT delegate %s: the blob lists no io_bindings; took %zu inputs and %zu outputs from the engine",
           name_, inputs_.size(), outputs_.size());
  for (const ResolvedAlias& a : io.aliases) {
    if (a.entry >= 0) continue;
    ET_LOG(Info,
           "TensorRT delegate %s: output '%s' is written in place into input '%s' (the engine says so; the blob's "
           "aliased_io does not list it)",
           name_, outputs_[static_cast<size_t>(a.output)].display_name.c_str(),
           inputs_[static_cast<size_t>(a.input)].display_name.c_str());
  }
}

// Gives each of the blob's delegate_state entries, checked by resolve_states (io_resolution.h), its storage
// (delegate_state.h), shared by name within the load's `scope`: the input and output slots it names are bound to it
// and leave the call's arguments. Its initial value, when the blob names one, comes from the program's named data, at
// exactly the state's size.
Error Delegate::bind_state(const blob::Metadata& metadata, const std::vector<ResolvedState>& states,
                           const executorch::runtime::NamedDataMap* data, const void* scope, Diagnostic& why) {
  num_free_aliased_ = num_aliased_;
  if (metadata.delegate_state.empty()) return Error::Ok;
  states_.reserve(metadata.delegate_state.size());
  for (size_t k = 0; k < metadata.delegate_state.size(); ++k) {
    const blob::DelegateState& entry = metadata.delegate_state[k];
    const ResolvedState& resolved = states[k];
    const std::string state = escape_name(entry.name);
    const Shape& shape = resolved.shape;
    const bool in_place = resolved.in_place;
    IoSlot& in = inputs_[static_cast<size_t>(resolved.input)];
    IoSlot& out = outputs_[static_cast<size_t>(resolved.output)];
    StateSpec spec;
    spec.scope = scope;
    spec.name = entry.name;
    spec.kind = engine_->memory_kind();
    spec.device_id = device_.device_id;
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
    states_.emplace_back();
    OwnedState& owned = states_.back();
    owned.input = resolved.input;
    owned.output = resolved.output;
    owned.in_place = in_place;
    owned.shape = shape;
    owned.bytes = spec.bytes;
    Error status = hold_state(std::move(spec), StateUser{name_, &lock_, &device_}, &owned.hold, why);
    if (status == Error::Ok && !in_place) {
      status = owned.output_buffer.allocate(engine_->memory_kind(), owned.bytes, why);
      writes_back_state_ = true;
    }
    if (status != Error::Ok) return status;
    in.state = out.state = static_cast<int32_t>(k);
  }
  for (const OwnedState& s : states_) num_free_aliased_ -= s.in_place ? 1 : 0;
  ET_LOG(Info, "TensorRT delegate %s: owns %zu state tensor(s); the call passes %zu tensors", name_, states_.size(),
         inputs_.size() + outputs_.size() - 2 * states_.size());
  return Error::Ok;
}

Error Delegate::create_contexts(engine::StreamHandle stream, const void* scope, Diagnostic& why) {
  engine::Engine& engine = *engine_;
  const int32_t n_profiles = engine.num_profiles();
  strategy_ = options_.strategy == ProfileStrategy::kContextPerProfile && n_profiles > 1 ? Strategy::kContextPerProfile
                                                                                         : Strategy::kSwitch;
  if (strategy_ == Strategy::kSwitch && !options_.shared_scratch) {
    std::unique_ptr<engine::ExecutionContext> context;
    const Error status = engine.create_context(engine::ContextOptions{}, &context, why);
    if (status != Error::Ok) {
      why.prepend("could not create an execution context: ");
      return status;
    }
    contexts_.push_back(std::move(context));
    private_scratch_.count(engine.device_memory_size());  // the context's own, which TensorRT allocated
    return Error::Ok;
  }
  // Every context runs in one scratch buffer: the delegate's own (context per profile: one delegate executes one
  // context at a time, under lock_, so they never need it at once), or the load's pool (shared_scratch), whose
  // members execute one at a time under its lock and whose memory the contexts get before their first enqueue
  // (Delegate::take_scratch).
  Error status = Error::Ok;
  if (options_.shared_scratch) {
    const ScratchSpec spec{scope, engine.memory_kind(), device_.device_id, engine.device_memory_size(), name_};
    status = join_scratch_pool(spec, &device_, &scratch_pool_, why);
  } else {
    status = scratch_.allocate(engine.memory_kind(), engine.device_memory_size(), why);
    private_scratch_.count(scratch_.size());
  }
  if (status != Error::Ok) return status;
  const int32_t n_contexts = strategy_ == Strategy::kContextPerProfile ? n_profiles : 1;
  for (int32_t p = 0; p < n_contexts; ++p) {
    std::unique_ptr<engine::ExecutionContext> context;
    status = engine.create_context(engine::ContextOptions{/*user_managed_memory=*/true}, &context, why);
    if (status != Error::Ok) {
      why.prepend("could not create the execution context for profile %d: ", p);
      return status;
    }
    if (!options_.shared_scratch) {
      status = context->set_device_memory(scratch_.data(), scratch_.size(), why);
      if (status != Error::Ok) {
        why.prepend("could not give profile %d's context its scratch memory: ", p);
        return status;
      }
    }
    // On the load stream; load() waits for it before returning, so no execution's stream races with it.
    if (p != 0) {
      status = context->set_optimization_profile(p, stream, why);
      if (status != Error::Ok) {
        why.prepend("could not bind a context to profile %d: ", p);
        return status;
      }
    }
    contexts_.push_back(std::move(context));
  }
  return Error::Ok;
}

// Staging buffers for every argument (device engines: device memory, and the in-flight event, on the current --
// the blob's -- device; host engines: host memory, used only for tensors TensorRT's alignment rule refuses).
Error Delegate::prepare_staging(engine::StreamHandle stream, Diagnostic& why) {
  std::vector<size_t> bytes(inputs_.size() + outputs_.size(), 0);
  for (size_t i = 0; i < inputs_.size(); ++i)
    for (int32_t p = 0; p < table_.num_profiles(); ++p)
      bytes[i] = std::max(bytes[i], bytes_of(table_.bounds(p, static_cast<int32_t>(i)).max, inputs_[i].dtype));
  const Error status = plan_output_staging(stream, &bytes, why);
  if (status != Error::Ok) return status;
  // A state is bound to its own storage, never staged.
  for (const OwnedState& s : states_) {
    bytes[static_cast<size_t>(s.input)] = 0;
    bytes[inputs_.size() + static_cast<size_t>(s.output)] = 0;
  }
  return device_.device ? prepare_device_state(&device_, device_.device_id, bytes, why)
                        : prepare_host_staging(&device_, bytes, why);
}

// The largest output each profile can produce, for device engines, whose host outputs are staged through buffers
// made at load: every input is set to the profile's max shape and the output shapes read back, on the context
// bound to that profile if there is one, else on a probe context (no memory, never enqueued) switched to it on
// `stream`. An output larger at some smaller input shape is refused at execute with a clear error, never written
// past its buffer.
Error Delegate::plan_output_staging(engine::StreamHandle stream, std::vector<size_t>* bytes, Diagnostic& why) {
  static constexpr char kWhat[] = "sizing the output staging buffers: ";
  for (int32_t p = 0; p < table_.num_profiles(); ++p) {
    std::unique_ptr<engine::ExecutionContext> probe;
    engine::ExecutionContext* context = strategy_ == Strategy::kContextPerProfile
                                            ? contexts_[static_cast<size_t>(p)].get()
                                            : (p == 0 ? contexts_[0].get() : nullptr);
    if (context == nullptr) {
      Error status = engine_->create_context(engine::ContextOptions{/*user_managed_memory=*/true}, &probe, why);
      if (status == Error::Ok) status = probe->set_optimization_profile(p, stream, why);
      if (status != Error::Ok) {
        why.prepend("%scould not probe profile %d: ", kWhat, p);
        return status;
      }
      context = probe.get();
    }
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Error status =
          context->set_input_shape(inputs_[i].engine_index, table_.bounds(p, static_cast<int32_t>(i)).max, why);
      if (status != Error::Ok) {
        why.prepend("%sthe engine refused input '%s' at profile %d's max shape: ", kWhat,
                    inputs_[i].display_name.c_str(), p);
        return status;
      }
    }
    for (size_t o = 0; o < outputs_.size(); ++o) {
      Shape shape;
      Error status = context->tensor_shape(outputs_[o].engine_index, &shape, why);
      if (status == Error::Ok && shape.numel() < 0) {
        status = fail(why, Error::NotSupported, "the output shape %s has a data-dependent dimension",
                      shape_text(shape).c_str());
      }
      if (status != Error::Ok) {
        why.prepend("%sthe engine cannot infer output '%s' at profile %d's max input shapes: ", kWhat,
                    outputs_[o].display_name.c_str(), p);
        return status;
      }
      size_t& b = (*bytes)[inputs_.size() + o];
      // An output written in place into an input is never staged on its own.
      if (outputs_[o].alias_of < 0) b = std::max(b, bytes_of(shape, outputs_[o].dtype));
    }
    // The probe's switch may still be running on the load stream; a context is never destroyed with work in flight.
    if (probe && device_.device) {
      const Error finished = finish_load_work(why);
      if (finished != Error::Ok) return finished;
    }
  }
  return Error::Ok;
}

// The per-execution scratch, sized once so that execute() never allocates.
void Delegate::size_execution_scratch() {
  input_shapes_.resize(inputs_.size());
  output_capacity_.assign(outputs_.size(), -1);
  arg_tensors_.resize(inputs_.size() + outputs_.size());
  context_states_.resize(contexts_.size());
  for (size_t c = 0; c < contexts_.size(); ++c) {
    ContextState& state = context_states_[c];
    state.index = c;
    state.context = contexts_[c].get();
    state.input_shapes.resize(inputs_.size());
    state.output_shapes.resize(outputs_.size());
    state.addresses.assign(inputs_.size() + outputs_.size(), nullptr);
  }
  active_profile_ = 0;
  current_ = &context_states_[0];
  if (!device_.device || !options_.cuda_graphs) return;
  // TensorRT: "If the Engine is streaming weights, enqueueV3 will become synchronous, and the graph will not be
  // capturable." So no capture is tried (one would fail and turn graphs off at the first steady call anyway).
  if (engine_->weight_streaming_budget() < engine_->streamable_weights_size()) {
    ET_LOG(Info,
           "TensorRT delegate %s: CUDA graphs off: the engine streams its weights (budget %lld of %lld streamable "
           "bytes), which makes each enqueue synchronous and uncapturable",
           name_, static_cast<long long>(engine_->weight_streaming_budget()),
           static_cast<long long>(engine_->streamable_weights_size()));
    return;
  }
  prepare_graphs(&device_, contexts_.size(), inputs_.size(), inputs_.size() + outputs_.size());
}

}  // namespace etrt::backend
