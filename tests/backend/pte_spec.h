#pragma once
// The packer's JSON spec (docs/pte-packer.md), as the programs that write test fixtures build it: make_fixtures.cpp
// (GPU-free NvInfer engines) and tests/contract/make_nvidia_programs.cpp (NVIDIA's).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etrt::pte_spec {

using json = nlohmann::json;

// A tensor value; `planned` false leaves it without a memory-planned slot, so the runner passes its own memory.
inline json tensor(const std::string& name, const char* dtype, std::vector<int64_t> sizes, bool dynamic,
                   bool planned = true) {
  json t = {{"name", name}, {"dtype", dtype}, {"sizes", sizes}, {"dynamic", dynamic}};
  if (!planned) t["planned"] = false;
  return t;
}

// A delegate call of `backend` on <blob>.blob with `args`.
inline json call(const std::string& backend, const std::string& blob, std::vector<std::string> args) {
  return {{"backend_id", backend}, {"blob_file", blob + ".blob"}, {"args", args}};
}
inline json trt_call(const std::string& blob, std::vector<std::string> args) {
  return call("TensorRTBackend", blob, std::move(args));
}

// A one-method ("forward") program. `values` and `calls` are vectors, not json: a one-element braced list given as
// json is the element itself under some compilers (clang) and a one-element array under others (gcc).
inline json program(const std::vector<json>& values, std::vector<std::string> inputs, std::vector<std::string> outputs,
                    const std::vector<json>& calls) {
  return {{"name", "forward"},
          {"values", json(values)},
          {"inputs", inputs},
          {"outputs", outputs},
          {"delegate_calls", json(calls)}};
}

}  // namespace etrt::pte_spec
