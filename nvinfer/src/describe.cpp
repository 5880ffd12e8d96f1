// etrt_gpufree_describeEngine: what the deserializer reads from an engine, as JSON, for tools (etrt inspect and
// validate through libetrt's C ABI). The bytes go through deserialize_model and plan_memory, the very calls
// deserializeCudaEngine makes, so a tool refuses exactly what the runtime refuses, with its message.

#include <cstdio>
#include <string>
#include <vector>

#include "NvInferRuntime.h"
#include "format.h"
#include "model.h"

namespace etrt::gpufree {
namespace {

// JSON string text of a name the decoder accepted (valid UTF-8 without NUL): quotes, backslashes and control
// characters escaped, everything else as it is.
void append_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void append_shape(std::string& out, const Shape& s) {
  out += '[';
  for (int32_t i = 0; i < s.rank; ++i) {
    if (i > 0) out += ',';
    out += std::to_string(s.d[i]);
  }
  out += ']';
}

// Every IO output's shape with every input at profile p's min (which 0) or max (which 2) shape. validate() has
// run the same inference on the same model, so it cannot fail here.
bool append_outputs(std::string& out, const Model& m, size_t p, int which, std::vector<Shape>& shapes,
                    std::string* error) {
  for (size_t i = 0, k = 0; i < m.io.size(); ++i) {
    if (!m.io[i].is_input) continue;
    const InputRange& r = m.profiles[p][k++];
    shapes[i] = which == 0 ? r.min : which == 1 ? r.opt : r.max;
  }
  if (!infer_shapes(m, shapes, error)) return false;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < m.io.size(); ++i) {
    if (m.io[i].is_input) continue;
    if (!first) out += ',';
    first = false;
    append_string(out, m.io[i].name);
    out += ':';
    append_shape(out, shapes[i]);
  }
  out += '}';
  return true;
}

// The description; its size is linear in the engine's bytes plus outputs x profiles (at most the shape inference
// work limit, as each output is written by one op).
bool describe(const Model& m, const MemoryPlan& plan, size_t size, std::string& out, std::string* error) {
  out += "{\"version\":" + std::to_string(kFormatVersion) + ",\"size\":" + std::to_string(size) + ",\"label\":";
  append_string(out, m.label);
  out += ",\"tracing\":";
  out += m.tracing ? "true" : "false";
  out += ",\"cuda_mode\":";
  out += m.memory_kind == MemoryKind::kDevice ? "true" : "false";
  out += ",\"streamable_weights\":";
  out += m.streamable_weights ? "true" : "false";
  out += ",\"profile_sharing\":";
  out += m.exclusive_profiles ? "false" : "true";
  out += ",\"switch_cost_ns\":" + std::to_string(m.switch_cost_ns);
  out += ",\"requested_device_memory\":" + std::to_string(m.requested_device_memory);
  out += ",\"device_memory_size\":" + std::to_string(plan.device_memory_size);
  out += ",\"io\":[";
  for (size_t i = 0; i < m.io.size(); ++i) {
    const TensorDesc& t = m.io[i];
    if (i > 0) out += ',';
    out += "{\"name\":";
    append_string(out, t.name);
    out += std::string(",\"is_input\":") + (t.is_input ? "true" : "false") + ",\"dtype\":\"" + to_string(t.dtype) +
           "\",\"shape\":";
    append_shape(out, t.shape);
    out += std::string(",\"is_shape_tensor\":") + (t.is_shape_tensor ? "true" : "false") +
           ",\"on_host\":" + (t.on_host ? "true" : "false") +
           ",\"data_dependent\":" + (t.data_dependent ? "true" : "false") + "}";
  }
  out += "],\"constants\":[";
  for (size_t i = 0; i < m.constants.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"name\":";
    append_string(out, m.constants[i].name);
    out += ",\"shape\":";
    append_shape(out, m.constants[i].shape);
    out += '}';
  }
  out += "],\"intermediates\":[";
  for (size_t i = 0; i < m.intermediates.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"name\":";
    append_string(out, m.intermediates[i].name);
    out += std::string(",\"dtype\":\"") + to_string(m.intermediates[i].dtype) + "\"}";
  }
  out += "],\"profiles\":[";
  for (size_t p = 0; p < m.profiles.size(); ++p) {
    if (p > 0) out += ',';
    out += '[';
    for (size_t k = 0; k < m.profiles[p].size(); ++k) {
      const InputRange& r = m.profiles[p][k];
      if (k > 0) out += ',';
      out += '[';
      append_shape(out, r.min);
      out += ',';
      append_shape(out, r.opt);
      out += ',';
      append_shape(out, r.max);
      out += ']';
    }
    out += ']';
  }
  out += "],\"ops\":[";
  for (size_t k = 0; k < m.ops.size(); ++k) {
    const Op& op = m.ops[k];
    if (k > 0) out += ',';
    char factor[32];
    std::snprintf(factor, sizeof factor, "%.9g", static_cast<double>(op.factor));
    out += "[" + std::to_string(static_cast<int>(op.kind)) + ",\"" + to_string(op.kind) + "\"," + std::to_string(op.a) +
           "," + std::to_string(op.b) + "," + std::to_string(op.c) + "," + std::to_string(op.d) + "," +
           std::to_string(op.out) + "," + factor + "]";
  }
  // The shapes each profile makes each output at its min and max input shapes (outputs only grow with inputs).
  out += "],\"output_shapes\":[";
  std::vector<Shape> shapes(static_cast<size_t>(m.num_tensors()));
  for (size_t p = 0; p < m.profiles.size(); ++p) {
    if (p > 0) out += ',';
    out += "{\"min\":";
    if (!append_outputs(out, m, p, 0, shapes, error)) return false;
    out += ",\"max\":";
    if (!append_outputs(out, m, p, 2, shapes, error)) return false;
    out += '}';
  }
  out += "]}";
  return true;
}

}  // namespace
}  // namespace etrt::gpufree

extern "C" ETRT_GPUFREE_API bool etrt_gpufree_describeEngine(const void* data, size_t size,
                                                             void (*sink)(void* context, const char* text,
                                                                          size_t length),
                                                             void* context) noexcept {
  using namespace etrt::gpufree;
  if (sink == nullptr) return false;
  std::string text, error;
  try {
    Model model;
    MemoryPlan plan;
    if (deserialize_model(data, size, &model, &error) && plan_memory(model, &plan, &error) &&
        describe(model, plan, size, text, &error)) {
      sink(context, text.data(), text.size());
      return true;
    }
  } catch (const std::bad_alloc&) {
    error = "out of memory describing a " + std::to_string(size) + "-byte engine";
  }
  sink(context, error.data(), error.size());
  return false;
}
