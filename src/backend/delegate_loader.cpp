// Delegate::load: blob bytes -> engine -> IO slots and aliases -> profile table -> execution contexts -> staging
// buffers (and, for device engines, the in-flight event and CUDA graph sets). Runs in BackendInterface::init();
// may allocate. Also the destructor, which waits for the delegate's work in flight.

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include <executorch/runtime/platform/log.h>

#include "backend/delegate.h"
#include "backend/signature_check.h"
#include "backend/staging.h"
#include "common/shape_text.h"
#include "common/utf8.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::backend {
namespace {

// Engine IO name -> engine index (NameIndex in io_slot.h).
NameIndex index_engine_io(const engine::Engine& engine) {
  NameIndex index;
  index.reserve(static_cast<size_t>(engine.num_io_tensors()));
  for (int32_t i = 0; i < engine.num_io_tensors(); ++i) index.emplace(engine.io_tensor(i).name, i);
  return index;
}

// The slot of IO tensor `engine_index` of `engine`, refusing what etrt cannot bind.
Error make_slot(const engine::Engine& engine, int32_t engine_index, IoSlot* slot, Diagnostic& why) {
  const engine::TensorDesc& desc = engine.io_tensor(engine_index);
  if (desc.is_shape_tensor) {
    return fail(why, Error::NotSupported,
                "input '%s' is a TensorRT shape tensor; etrt supports only execution tensors as delegate IO. Rebuild "
                "the engine so that shapes reach it through execution tensors",
                desc.display_name.c_str());
  }
  *slot = IoSlot{desc.name, desc.display_name, engine_index, desc.dtype};
  slot->scalar_type = scalar_type_of(desc.dtype);
  return Error::Ok;
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
Error slots_from_engine(const engine::Engine& engine, std::vector<IoSlot>* inputs, std::vector<IoSlot>* outputs,
                        Diagnostic& why) {
  for (const bool is_input : {true, false}) {
    std::vector<int32_t> order;
    for (int32_t i = 0; i < engine.num_io_tensors(); ++i)
      if (engine.io_tensor(i).is_input == is_input) order.push_back(i);
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
      const Error made = make_slot(engine, i, &slot, why);
      if (made != Error::Ok) return made;
      (is_input ? inputs : outputs)->push_back(std::move(slot));
    }
  }
  return Error::Ok;
}

// Makes output `o` write into input `i` in place; `where` names the alias in messages.
Error link_alias(std::vector<IoSlot>& outputs, std::vector<IoSlot>& inputs, int32_t o, int32_t i, const char* where,
                 size_t* num_aliased, Diagnostic& why) {
  IoSlot& output = outputs[static_cast<size_t>(o)];
  IoSlot& input = inputs[static_cast<size_t>(i)];
  if (output.alias_of >= 0) {
    return fail(why, Error::InvalidProgram,
                "%s: output '%s' is already written in place into input '%s'; re-export the model", where,
                output.display_name.c_str(), inputs[static_cast<size_t>(output.alias_of)].display_name.c_str());
  }
  if (input.alias_target) {
    return fail(why, Error::InvalidProgram,
                "%s: input '%s' is already updated in place by another output; an input takes one aliased output at "
                "most: re-export the model",
                where, input.display_name.c_str());
  }
  output.alias_of = i;
  input.alias_target = true;
  ++*num_aliased;
  return Error::Ok;
}

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

Error Delegate::load(const void* blob, size_t size, const executorch::runtime::NamedDataMap* data, Diagnostic& why) {
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

  status = bind_io(parsed.metadata, why);
  if (status == Error::Ok) status = resolve_aliases(parsed.metadata, why);
  if (status == Error::Ok) status = apply_weight_streaming(why);
  if (status == Error::Ok) status = build_profile_table(why);
  if (status == Error::Ok && parsed.metadata.profile_signature)
    status = check_signature(*parsed.metadata.profile_signature, table_, inputs_, why);
  if (status == Error::Ok) status = bind_state(parsed.metadata, data, why);
  if (status == Error::Ok) status = create_contexts(stream, data, why);
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
  const Error status =
      engine::tensorrt::deserialize(parsed.engine, parsed.engine_size, device_id, runtime, &engine_, why);
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

// Binds each blob IO binding to the engine tensor of the same name. The delegate's arguments are the inputs in
// the order the bindings list them, then the outputs likewise; inputs and outputs may be interleaved.
Error Delegate::bind_io(const blob::Metadata& metadata, Diagnostic& why) {
  const engine::Engine& engine = *engine_;
  if (metadata.io_bindings.empty()) {
    const Error status = slots_from_engine(engine, &inputs_, &outputs_, why);
    if (status != Error::Ok) return status;
    ET_LOG(Info, "TensorRT delegate %s: the blob lists no io_bindings; took %zu inputs and %zu outputs from the engine",
           name_, inputs_.size(), outputs_.size());
    return Error::Ok;
  }
  const int32_t n_engine = engine.num_io_tensors();
  if (static_cast<size_t>(n_engine) != metadata.io_bindings.size()) {
    return fail(why, Error::InvalidProgram,
                "the blob describes %zu IO tensors but the engine has %d; the blob and its engine do not belong "
                "together: re-export the model",
                metadata.io_bindings.size(), n_engine);
  }
  const NameIndex engine_io = index_engine_io(engine);
  for (const blob::IoBinding& binding : metadata.io_bindings) {
    const int32_t found = find_name(engine_io, binding.name);
    if (found < 0) {
      return fail(why, Error::InvalidProgram,
                  "the blob names IO tensor '%s', which the engine does not have; re-export the model",
                  escape_name(binding.name).c_str());
    }
    const engine::TensorDesc& desc = engine.io_tensor(found);
    if (desc.is_input != binding.is_input) {
      return fail(why, Error::InvalidProgram,
                  "IO tensor '%s' is an %s in the blob but an %s of the engine; re-export the model",
                  desc.display_name.c_str(), binding.is_input ? "input" : "output", desc.is_input ? "input" : "output");
    }
    IoSlot slot;
    const Error made = make_slot(engine, found, &slot, why);
    if (made != Error::Ok) return made;
    (binding.is_input ? inputs_ : outputs_).push_back(std::move(slot));
  }
  return Error::Ok;
}

// Resolves the blob's aliased_io against the engine: each entry names an output written in place into an input.
// kv_cache_update pairs must be the engine's own (getAliasedInputTensor); user pairs must have one shape and type.
// An alias the engine reports but the blob does not list is applied too: TensorRT requires the output to share the
// input's memory.
Error Delegate::resolve_aliases(const blob::Metadata& metadata, Diagnostic& why) {
  const engine::Engine& engine = *engine_;
  const NameIndex outputs = index_names(outputs_), inputs = index_names(inputs_);
  for (size_t k = 0; k < metadata.aliased_io.size(); ++k) {
    const blob::AliasedIo& alias = metadata.aliased_io[k];
    const std::string where = "aliased_io[" + std::to_string(k) + "] (output '" + escape_name(alias.output) +
                              "', input '" + escape_name(alias.input) + "', kind '" + escape_name(alias.kind) + "')";
    const int32_t o = find_name(outputs, alias.output);
    const int32_t i = find_name(inputs, alias.input);
    if (o < 0 || i < 0) {
      return fail(why, Error::InvalidProgram, "%s names %s the delegate does not have; re-export the model",
                  where.c_str(), o < 0 ? "an output" : "an input");
    }
    const engine::TensorDesc& out = engine.io_tensor(outputs_[static_cast<size_t>(o)].engine_index);
    const engine::TensorDesc& in = engine.io_tensor(inputs_[static_cast<size_t>(i)].engine_index);
    if (alias.kind == blob::kAliasKindKvCacheUpdate) {
      if (out.aliased_input != inputs_[static_cast<size_t>(i)].engine_index) {
        const std::string engine_says =
            out.aliased_input < 0 ? "none" : "'" + engine.io_tensor(out.aliased_input).display_name + "'";
        return fail(why, Error::InvalidProgram,
                    "%s disagrees with the engine, whose alias for output '%s' is %s (getAliasedInputTensor); the "
                    "blob and its engine do not belong together: re-export the model",
                    where.c_str(), out.display_name.c_str(), engine_says.c_str());
      }
    } else if (alias.kind == blob::kAliasKindUser) {
      if (out.shape != in.shape || out.dtype != in.dtype) {
        return fail(why, Error::InvalidProgram,
                    "%s: the output is %s %s but the input is %s %s; a user alias writes the output into the input's "
                    "memory, so they must have one shape and type: re-export the model",
                    where.c_str(), engine::to_string(out.dtype), shape_text(out.shape).c_str(),
                    engine::to_string(in.dtype), shape_text(in.shape).c_str());
      }
    } else {
      return fail(why, Error::InvalidProgram,
                  "%s has an unknown kind; etrt knows '%s' and '%s': re-export the model with one of them",
                  where.c_str(), blob::kAliasKindKvCacheUpdate, blob::kAliasKindUser);
    }
    const Error linked = link_alias(outputs_, inputs_, o, i, where.c_str(), &num_aliased_, why);
    if (linked != Error::Ok) return linked;
  }
  std::vector<int32_t> input_slot(static_cast<size_t>(engine.num_io_tensors()), -1);  // engine index -> input slot
  for (size_t k = 0; k < inputs_.size(); ++k)
    input_slot[static_cast<size_t>(inputs_[k].engine_index)] = static_cast<int32_t>(k);
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const engine::TensorDesc& out = engine.io_tensor(outputs_[o].engine_index);
    if (out.aliased_input < 0 || outputs_[o].alias_of >= 0) continue;
    const int32_t i = input_slot[static_cast<size_t>(out.aliased_input)];
    const std::string where = "the engine's alias of output '" + out.display_name + "'";
    const Error linked = link_alias(outputs_, inputs_, static_cast<int32_t>(o), i, where.c_str(), &num_aliased_, why);
    if (linked != Error::Ok) return linked;
    ET_LOG(Info,
           "TensorRT delegate %s: output '%s' is written in place into input '%s' (the engine says so; the blob's "
           "aliased_io does not list it)",
           name_, out.display_name.c_str(), inputs_[static_cast<size_t>(i)].display_name.c_str());
  }
  return Error::Ok;
}

// Applies the weight-streaming budget before the engine's first context (TensorRT allows no change while one
// exists): the one asked for, clamped to the streamable size, else TensorRT's automatic budget, falling back to
// 0 (stream everything) if that is refused.
Error Delegate::apply_weight_streaming(Diagnostic& why) {
  engine::Engine& engine = *engine_;
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

Error Delegate::build_profile_table(Diagnostic& why) {
  const int32_t n_profiles = engine_->num_profiles();
  std::vector<profile::InputBounds> bounds(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    bounds[i].name = inputs_[i].display_name;  // the table's names are for messages
    for (int32_t p = 0; p < n_profiles; ++p) {
      Shape mn, opt, mx;
      const Error status = engine_->profile_shape(p, inputs_[i].engine_index, &mn, &opt, &mx, why);
      if (status != Error::Ok) {
        why.prepend("the engine reports no bounds for input '%s' under profile %d: ", inputs_[i].display_name.c_str(),
                    p);
        return status;
      }
      bounds[i].min.push_back(mn);
      bounds[i].opt.push_back(opt);
      bounds[i].max.push_back(mx);
    }
  }
  return profile::ProfileTable::build(n_profiles, Span<const profile::InputBounds>(bounds.data(), bounds.size()),
                                      &table_, why);
}

// Gives each of the blob's delegate_state entries its storage (delegate_state.h): the input and output slots it names
// are bound to it and leave the call's arguments. A state has one static shape in every profile, and its output the
// input's type and shape; its initial value, when the blob names one, comes from the program's named data, at exactly
// the state's size.
Error Delegate::bind_state(const blob::Metadata& metadata, const executorch::runtime::NamedDataMap* data,
                           Diagnostic& why) {
  num_free_aliased_ = num_aliased_;
  if (metadata.delegate_state.empty()) return Error::Ok;
  const NameIndex outputs = index_names(outputs_), inputs = index_names(inputs_);
  states_.reserve(metadata.delegate_state.size());
  for (size_t k = 0; k < metadata.delegate_state.size(); ++k) {
    const blob::DelegateState& entry = metadata.delegate_state[k];
    const std::string state = escape_name(entry.name);
    const int32_t i = find_name(inputs, entry.input);
    const int32_t o = find_name(outputs, entry.output);
    if (i < 0 || o < 0) {
      return fail(why, Error::InvalidProgram,
                  "delegate_state[%zu] '%s' names %s '%s', which the engine does not have; re-export the model", k,
                  state.c_str(), i < 0 ? "input" : "output", escape_name(i < 0 ? entry.input : entry.output).c_str());
    }
    IoSlot& in = inputs_[static_cast<size_t>(i)];
    IoSlot& out = outputs_[static_cast<size_t>(o)];
    const Shape shape = table_.bounds(0, i).min;
    for (int32_t p = 0; p < table_.num_profiles(); ++p) {
      const profile::ShapeBounds b = table_.bounds(p, i);
      if (b.min != shape || b.max != shape) {
        return fail(why, Error::InvalidProgram,
                    "state '%s' (input '%s') accepts %s..%s under profile %d, but a delegate-owned state has one "
                    "static shape (%s under profile 0) in every profile; rebuild the engine with a static cache shape",
                    state.c_str(), in.display_name.c_str(), shape_text(b.min).c_str(), shape_text(b.max).c_str(), p,
                    shape_text(shape).c_str());
      }
    }
    const engine::TensorDesc& out_desc = engine_->io_tensor(out.engine_index);
    const bool in_place = out.alias_of == i;
    if (!in_place && out.alias_of >= 0) {
      return fail(why, Error::InvalidProgram,
                  "state '%s': output '%s' is written in place into input '%s', not into the state's input '%s'; "
                  "re-export the model",
                  state.c_str(), out.display_name.c_str(),
                  inputs_[static_cast<size_t>(out.alias_of)].display_name.c_str(), in.display_name.c_str());
    }
    if (out.dtype != in.dtype || (!in_place && out_desc.shape != shape)) {
      return fail(why, Error::InvalidProgram,
                  "state '%s': output '%s' is %s %s but input '%s' is %s %s; the new value of a state has the state's "
                  "type and shape: re-export the model",
                  state.c_str(), out.display_name.c_str(), engine::to_string(out.dtype),
                  shape_text(out_desc.shape).c_str(), in.display_name.c_str(), engine::to_string(in.dtype),
                  shape_text(shape).c_str());
    }
    StateSpec spec;
    spec.scope = data;
    spec.name = entry.name;
    spec.kind = engine_->memory_kind();
    spec.device_id = device_.device_id;
    spec.dtype = in.dtype;
    spec.shape = shape;
    spec.bytes = bytes_of(shape, in.dtype);
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
    owned.input = i;
    owned.output = o;
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

Error Delegate::create_contexts(engine::StreamHandle stream, const void* program, Diagnostic& why) {
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
  // context at a time, under lock_, so they never need it at once), or the program's pool (shared_scratch), whose
  // members execute one at a time under its lock and whose memory the contexts get before their first enqueue
  // (Delegate::take_scratch).
  Error status = Error::Ok;
  if (options_.shared_scratch) {
    const ScratchSpec spec{program, engine.memory_kind(), device_.device_id, engine.device_memory_size(), name_};
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
