// The runtime's readings for tools (inspection.h): a blob as parse_blob reads it, and a blob against its engine as
// Delegate::load resolves them (backend/io_resolution.h).
#include "tools/inspection.h"

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backend/rules/io_resolution.h"
#include "blob/blob.h"
#include "blob/json_text.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::tools {

using backend::IoSlot;
using backend::Resolution;
using backend::ResolvedAlias;
using backend::ResolvedState;

namespace {

// A little-endian u32 of a header parse_blob accepted.
uint32_t header_u32(const uint8_t* bytes, size_t at) {
  return static_cast<uint32_t>(bytes[at]) | static_cast<uint32_t>(bytes[at + 1]) << 8 |
         static_cast<uint32_t>(bytes[at + 2]) << 16 | static_cast<uint32_t>(bytes[at + 3]) << 24;
}

void append_string(std::string& out, const char* key, const std::string& value) {
  out += '"';
  out += key;
  out += "\":";
  blob::detail::append_json_string(out, value);
}

void append_int(std::string& out, const char* key, int64_t value) {
  out += '"';
  out += key;
  out += "\":";
  blob::detail::append_json_int(out, value);
}

void append_shape(std::string& out, const char* key, const Shape& shape) {
  out += '"';
  out += key;
  out += "\":[";
  for (int32_t d = 0; d < shape.rank; ++d) {
    if (d > 0) out += ',';
    blob::detail::append_json_int(out, shape.d[d]);
  }
  out += ']';
}

// The slots of one side, as "inputs" or "outputs" list them.
void append_slots(std::string& out, const engine::Engine& engine, const std::vector<IoSlot>& slots,
                  const std::vector<IoSlot>& inputs) {
  out += '[';
  for (size_t k = 0; k < slots.size(); ++k) {
    const engine::TensorDesc& desc = engine.io_tensor(slots[k].engine_index);
    out += k > 0 ? ",{" : "{";
    append_string(out, "name", slots[k].name);
    out += ',';
    append_string(out, "dtype", engine::to_string(desc.dtype));
    out += ',';
    append_shape(out, "shape", desc.shape);
    if (slots[k].alias_of >= 0) {
      out += ',';
      append_string(out, "alias_of", inputs[static_cast<size_t>(slots[k].alias_of)].name);
    }
    out += '}';
  }
  out += ']';
}

std::string resolution_json(const engine::Engine* engine, const blob::Metadata& metadata, const Resolution& r,
                            const char* refused) {
  std::string out = "{\"inputs\":";
  if (engine != nullptr) {
    append_slots(out, *engine, r.inputs, r.inputs);
    out += ",\"outputs\":";
    append_slots(out, *engine, r.outputs, r.inputs);
  } else {
    out += "[],\"outputs\":[]";
  }
  out += ",\"aliases\":[";
  for (size_t k = 0; k < r.aliases.size(); ++k) {
    const ResolvedAlias& a = r.aliases[k];
    out += k > 0 ? ",{" : "{";
    append_string(out, "output", r.outputs[static_cast<size_t>(a.output)].name);
    out += ',';
    append_string(out, "input", r.inputs[static_cast<size_t>(a.input)].name);
    out += ',';
    append_string(out, "kind",
                  a.entry >= 0 ? metadata.aliased_io[static_cast<size_t>(a.entry)].kind
                               : std::string(blob::kAliasKindKvCacheUpdate));
    out += ',';
    append_int(out, "entry", a.entry);
    out += '}';
  }
  out += "],\"num_profiles\":";
  blob::detail::append_json_int(out, r.table.num_profiles());
  out += ",\"states\":[";
  for (size_t k = 0; k < r.states.size(); ++k) {
    const ResolvedState& s = r.states[k];
    const blob::DelegateState& entry = metadata.delegate_state[k];
    out += k > 0 ? ",{" : "{";
    append_string(out, "name", entry.name);
    out += ',';
    append_string(out, "input", entry.input);
    out += ',';
    append_string(out, "output", entry.output);
    out += s.in_place ? ",\"in_place\":true," : ",\"in_place\":false,";
    append_string(out, "dtype", engine::to_string(s.dtype));
    out += ',';
    append_shape(out, "shape", s.shape);
    out += ',';
    append_int(out, "bytes", static_cast<int64_t>(s.bytes));
    out += '}';
  }
  out += "],\"refusal\":";
  if (refused == nullptr) {
    out += "null}";
    return out;
  }
  out += '{';
  append_string(out, "rule", r.refusal.rule != nullptr ? r.refusal.rule : "engine");
  out += ',';
  append_int(out, "entry", r.refusal.entry);
  out += ',';
  append_string(out, "message", refused);
  out += "}}";
  return out;
}

// Parses the blob as a load does and gives it to `answer`, which writes *text: a refused blob answers the reader's
// message with its error, an allocation failure an empty text.
template <typename Answer>
Error with_parsed_blob(const void* data, size_t size, std::string* text, Answer&& answer) {
  try {
    blob::ParsedBlob parsed;
    Diagnostic why;
    if (const Error e = blob::parse_blob(data, size, &parsed, why); e != Error::Ok) {
      *text = why.c_str();
      return e;
    }
    return answer(parsed, why);
  } catch (const std::bad_alloc&) {
    text->clear();
    return Error::MemoryAllocationFailed;
  }
}

}  // namespace

Error describe_blob(const void* data, size_t size, std::string* text) {
  return with_parsed_blob(data, size, text, [&](const blob::ParsedBlob& parsed, Diagnostic&) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    std::string metadata = blob::metadata_to_json(parsed.metadata);
    text->clear();
    text->reserve(metadata.size() + 200);
    *text += "{\"magic\":\"" + parsed.magic + "\",\"metadata_offset\":" + std::to_string(header_u32(bytes, 4)) +
             ",\"metadata_size\":" + std::to_string(header_u32(bytes, 8)) +
             ",\"engine_offset\":" + std::to_string(header_u32(bytes, 12)) +
             ",\"engine_size\":" + std::to_string(parsed.engine_size) + ",\"blob_size\":" + std::to_string(size) +
             ",\"metadata\":";
    *text += metadata;
    *text += '}';
    return Error::Ok;
  });
}

Error resolve_delegate(const void* data, size_t size, std::string* text) {
  return with_parsed_blob(data, size, text, [&](const blob::ParsedBlob& parsed, Diagnostic& why) {
    if (engine::tensorrt::deserializes_on_device()) {
      *text =
          "this etrt was built against NVIDIA's TensorRT, which deserializes an engine only on its GPU; load the "
          "program to resolve its delegates (a build against the GPU-free NvInfer, the default, resolves its own "
          "engines anywhere)";
      return Error::NotSupported;
    }
    // The GPU-free NvInfer deserializes without a device: a CUDA-mode engine uploads its weights at context
    // creation, which resolution never reaches.
    std::unique_ptr<engine::Engine> engine;
    Resolution r;
    if (engine::tensorrt::deserialize(parsed.engine, parsed.engine_size, parsed.metadata.device_id,
                                      engine::tensorrt::RuntimeOptions{}, &engine, why) != Error::Ok) {
      *text = resolution_json(nullptr, parsed.metadata, r, why.c_str());
      return Error::Ok;
    }
    const bool ok = backend::resolve(*engine, parsed.metadata, &r, why) == Error::Ok;
    *text = resolution_json(engine.get(), parsed.metadata, r, ok ? nullptr : why.c_str());
    return Error::Ok;
  });
}

}  // namespace etrt::tools
