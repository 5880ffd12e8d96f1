// The blob against its engine (io_resolution.h): the steps of Delegate::load that need no context, no memory and no
// named data, shared with the tools' etrt_delegate_resolve.
#include "backend/rules/io_resolution.h"

#include <algorithm>
#include <string>
#include <utility>

#include "backend/rules/signature_check.h"
#include "common/shape_text.h"
#include "common/utf8.h"

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

Error refuse(Resolution* r, const char* rule, int32_t entry, Error e) {
  r->refusal = Refusal{rule, entry};
  return e;
}

// Makes output `o` write into input `i` in place; `where` names the alias in messages.
Error link_alias(Resolution* r, int32_t o, int32_t i, int32_t entry, const char* where, Diagnostic& why) {
  IoSlot& output = r->outputs[static_cast<size_t>(o)];
  IoSlot& input = r->inputs[static_cast<size_t>(i)];
  if (output.alias_of >= 0) {
    return refuse(
        r, "alias-conflict", entry,
        fail(why, Error::InvalidProgram,
             "%s: output '%s' is already written in place into input '%s'; re-export the model", where,
             output.display_name.c_str(), r->inputs[static_cast<size_t>(output.alias_of)].display_name.c_str()));
  }
  if (input.alias_target) {
    std::string other = "another output";
    for (const IoSlot& s : r->outputs)
      if (s.alias_of == i) other = "output '" + s.display_name + "'";
    return refuse(r, "alias-conflict", entry,
                  fail(why, Error::InvalidProgram,
                       "%s: input '%s' is already written in place by %s; an input takes one aliased output at most, "
                       "so output '%s' cannot be written into it too: re-export the model",
                       where, input.display_name.c_str(), other.c_str(), output.display_name.c_str()));
  }
  output.alias_of = i;
  input.alias_target = true;
  r->aliases.push_back(ResolvedAlias{o, i, entry});
  return Error::Ok;
}

}  // namespace

Error bind_io(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r, Diagnostic& why) {
  if (metadata.io_bindings.empty()) {
    const Error status = slots_from_engine(engine, &r->inputs, &r->outputs, why);
    return status == Error::Ok ? status : refuse(r, "io", -1, status);
  }
  const int32_t n_engine = engine.num_io_tensors();
  if (static_cast<size_t>(n_engine) != metadata.io_bindings.size()) {
    return refuse(r, "io", -1,
                  fail(why, Error::InvalidProgram,
                       "the blob describes %zu IO tensors but the engine has %d; the blob and its engine do not belong "
                       "together: re-export the model",
                       metadata.io_bindings.size(), n_engine));
  }
  const NameIndex engine_io = index_engine_io(engine);
  for (const blob::IoBinding& binding : metadata.io_bindings) {
    const int32_t found = find_name(engine_io, binding.name);
    if (found < 0) {
      return refuse(r, "io", -1,
                    fail(why, Error::InvalidProgram,
                         "the blob names IO tensor '%s', which the engine does not have; re-export the model",
                         escape_name(binding.name).c_str()));
    }
    const engine::TensorDesc& desc = engine.io_tensor(found);
    if (desc.is_input != binding.is_input) {
      return refuse(
          r, "io", -1,
          fail(why, Error::InvalidProgram,
               "IO tensor '%s' is an %s in the blob but an %s of the engine; re-export the model",
               desc.display_name.c_str(), binding.is_input ? "input" : "output", desc.is_input ? "input" : "output"));
    }
    IoSlot slot;
    const Error made = make_slot(engine, found, &slot, why);
    if (made != Error::Ok) return refuse(r, "io", -1, made);
    (binding.is_input ? r->inputs : r->outputs).push_back(std::move(slot));
  }
  return Error::Ok;
}

// An alias the engine reports but the blob does not list is applied too: TensorRT requires the output to share the
// input's memory.
Error resolve_aliases(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r, Diagnostic& why) {
  const NameIndex outputs = index_names(r->outputs), inputs = index_names(r->inputs);
  for (size_t k = 0; k < metadata.aliased_io.size(); ++k) {
    const blob::AliasedIo& alias = metadata.aliased_io[k];
    const auto entry = static_cast<int32_t>(k);
    const std::string where = "aliased_io[" + std::to_string(k) + "] (output '" + escape_name(alias.output) +
                              "', input '" + escape_name(alias.input) + "', kind '" + escape_name(alias.kind) + "')";
    const int32_t o = find_name(outputs, alias.output);
    const int32_t i = find_name(inputs, alias.input);
    if (o < 0 || i < 0) {
      return refuse(r, "alias-unknown-tensor", entry,
                    fail(why, Error::InvalidProgram, "%s names %s the delegate does not have; re-export the model",
                         where.c_str(), o < 0 ? "an output" : "an input"));
    }
    const engine::TensorDesc& out = engine.io_tensor(r->outputs[static_cast<size_t>(o)].engine_index);
    const engine::TensorDesc& in = engine.io_tensor(r->inputs[static_cast<size_t>(i)].engine_index);
    if (alias.kind == blob::kAliasKindKvCacheUpdate) {
      if (out.aliased_input != r->inputs[static_cast<size_t>(i)].engine_index) {
        const std::string engine_says =
            out.aliased_input < 0 ? "none" : "'" + engine.io_tensor(out.aliased_input).display_name + "'";
        return refuse(
            r, "alias-engine-mismatch", entry,
            fail(why, Error::InvalidProgram,
                 "%s disagrees with the engine, whose alias for output '%s' is %s (getAliasedInputTensor); the "
                 "blob and its engine do not belong together: re-export the model",
                 where.c_str(), out.display_name.c_str(), engine_says.c_str()));
      }
    } else if (alias.kind == blob::kAliasKindUser) {
      if (out.shape != in.shape || out.dtype != in.dtype) {
        return refuse(
            r, "alias-shape-mismatch", entry,
            fail(why, Error::InvalidProgram,
                 "%s: the output is %s %s but the input is %s %s; a user alias writes the output into the input's "
                 "memory, so they must have one shape (every dim, -1 included) and type: re-export the model",
                 where.c_str(), engine::to_string(out.dtype), shape_text(out.shape).c_str(),
                 engine::to_string(in.dtype), shape_text(in.shape).c_str()));
      }
    } else {
      return refuse(r, "alias-unknown-kind", entry,
                    fail(why, Error::InvalidProgram,
                         "%s has an unknown kind; etrt knows '%s' and '%s': re-export the model with one of them",
                         where.c_str(), blob::kAliasKindKvCacheUpdate, blob::kAliasKindUser));
    }
    const Error linked = link_alias(r, o, i, entry, where.c_str(), why);
    if (linked != Error::Ok) return linked;
  }
  std::vector<int32_t> input_slot(static_cast<size_t>(engine.num_io_tensors()), -1);  // engine index -> input slot
  for (size_t k = 0; k < r->inputs.size(); ++k)
    input_slot[static_cast<size_t>(r->inputs[k].engine_index)] = static_cast<int32_t>(k);
  for (size_t o = 0; o < r->outputs.size(); ++o) {
    const engine::TensorDesc& out = engine.io_tensor(r->outputs[o].engine_index);
    if (out.aliased_input < 0 || r->outputs[o].alias_of >= 0) continue;
    const int32_t i = input_slot[static_cast<size_t>(out.aliased_input)];
    const std::string where = "the engine's alias of output '" + out.display_name + "'";
    const Error linked = link_alias(r, static_cast<int32_t>(o), i, -1, where.c_str(), why);
    if (linked != Error::Ok) return linked;
  }
  return Error::Ok;
}

Error build_profile_table(const engine::Engine& engine, Resolution* r, Diagnostic& why) {
  const int32_t n_profiles = engine.num_profiles();
  std::vector<profile::InputBounds> bounds(r->inputs.size());
  for (size_t i = 0; i < r->inputs.size(); ++i) {
    bounds[i].name = r->inputs[i].display_name;  // the table's names are for messages
    for (int32_t p = 0; p < n_profiles; ++p) {
      Shape mn, opt, mx;
      const Error status = engine.profile_shape(p, r->inputs[i].engine_index, &mn, &opt, &mx, why);
      if (status != Error::Ok) {
        why.prepend("the engine reports no bounds for input '%s' under profile %d: ", r->inputs[i].display_name.c_str(),
                    p);
        return refuse(r, "profiles", -1, status);
      }
      bounds[i].min.push_back(mn);
      bounds[i].opt.push_back(opt);
      bounds[i].max.push_back(mx);
    }
  }
  const Error built = profile::ProfileTable::build(
      n_profiles, Span<const profile::InputBounds>(bounds.data(), bounds.size()), &r->table, why);
  return built == Error::Ok ? built : refuse(r, "profiles", -1, built);
}

Error check_profile_signature(const blob::Metadata& metadata, Resolution* r, Diagnostic& why) {
  if (!metadata.profile_signature) return Error::Ok;
  const Error checked = check_signature(*metadata.profile_signature, r->table, r->inputs, why);
  return checked == Error::Ok ? checked : refuse(r, "signature", -1, checked);
}

Error resolve_states(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r, Diagnostic& why) {
  const NameIndex outputs = index_names(r->outputs), inputs = index_names(r->inputs);
  r->states.reserve(metadata.delegate_state.size());
  for (size_t k = 0; k < metadata.delegate_state.size(); ++k) {
    const blob::DelegateState& entry = metadata.delegate_state[k];
    const auto at = static_cast<int32_t>(k);
    const std::string state = escape_name(entry.name);
    const int32_t i = find_name(inputs, entry.input);
    const int32_t o = find_name(outputs, entry.output);
    if (i < 0 || o < 0) {
      return refuse(
          r, "state", at,
          fail(why, Error::InvalidProgram,
               "delegate_state[%zu] '%s' names %s '%s', which the engine does not have; re-export the model", k,
               state.c_str(), i < 0 ? "input" : "output", escape_name(i < 0 ? entry.input : entry.output).c_str()));
    }
    const IoSlot& in = r->inputs[static_cast<size_t>(i)];
    const IoSlot& out = r->outputs[static_cast<size_t>(o)];
    const Shape shape = r->table.bounds(0, i).min;
    for (int32_t p = 0; p < r->table.num_profiles(); ++p) {
      const profile::ShapeBounds b = r->table.bounds(p, i);
      if (b.min != shape || b.max != shape) {
        return refuse(
            r, "state", at,
            fail(why, Error::InvalidProgram,
                 "state '%s' (input '%s') accepts %s..%s under profile %d, but a delegate-owned state has one "
                 "static shape (%s under profile 0) in every profile; rebuild the engine with a static cache shape",
                 state.c_str(), in.display_name.c_str(), shape_text(b.min).c_str(), shape_text(b.max).c_str(), p,
                 shape_text(shape).c_str()));
      }
    }
    const engine::TensorDesc& out_desc = engine.io_tensor(out.engine_index);
    const bool in_place = out.alias_of == i;
    if (!in_place && out.alias_of >= 0) {
      return refuse(
          r, "state", at,
          fail(why, Error::InvalidProgram,
               "state '%s': output '%s' is written in place into input '%s', not into the state's input '%s'; "
               "re-export the model",
               state.c_str(), out.display_name.c_str(),
               r->inputs[static_cast<size_t>(out.alias_of)].display_name.c_str(), in.display_name.c_str()));
    }
    if (out.dtype != in.dtype || (!in_place && out_desc.shape != shape)) {
      return refuse(
          r, "state", at,
          fail(why, Error::InvalidProgram,
               "state '%s': output '%s' is %s %s but input '%s' is %s %s; the new value of a state has the state's "
               "type and shape: re-export the model",
               state.c_str(), out.display_name.c_str(), engine::to_string(out.dtype),
               shape_text(out_desc.shape).c_str(), in.display_name.c_str(), engine::to_string(in.dtype),
               shape_text(shape).c_str()));
    }
    const int64_t n = shape.numel();
    r->states.push_back(ResolvedState{i, o, in_place, shape, in.dtype,
                                      n > 0 ? static_cast<size_t>(n) * engine::element_size(in.dtype) : 0});
  }
  return Error::Ok;
}

Error resolve_arguments(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r, Diagnostic& why) {
  const Error status = bind_io(engine, metadata, r, why);
  return status == Error::Ok ? resolve_aliases(engine, metadata, r, why) : status;
}

Error resolve_profiles_and_states(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r,
                                  Diagnostic& why) {
  Error status = build_profile_table(engine, r, why);
  if (status == Error::Ok) status = check_profile_signature(metadata, r, why);
  if (status == Error::Ok) status = resolve_states(engine, metadata, r, why);
  return status;
}

Error resolve(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r, Diagnostic& why) {
  const Error status = resolve_arguments(engine, metadata, r, why);
  return status == Error::Ok ? resolve_profiles_and_states(engine, metadata, r, why) : status;
}

}  // namespace etrt::backend
