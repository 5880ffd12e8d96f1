#pragma once
// The step-by-step record of decoder runs that the demo runner (--dump) and
// the GPU suite write, and tests/python/test_decoder_demo.py checks against
// NumPy. JSON:
//
//   {"model": "<.pte>", "vocab": V, "runs": [
//     {"strategy": "switch", "selection": "pin", "steps": [
//       {"phase": "prefill", "start_pos": 0, "profile": 1, "switched": true, "next_token": 49,
//        "bytes": {"host_to_device": 0, "device_to_host": 0, "realigned": 0, "write_back": 0},
//                                          what etrt copied (etrt::ExecutionRecord), summed over the step's delegates
//        "tokens": [...],                  the tokens fed, S of them
//        "logits": [[V floats], ...]},     S rows, %.9g (every float32 exactly; NaN as NaN)
//       {"phase": "decode", "start_pos": 48, ...}, ...]}, ...]}

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace etrt::demo {

struct DumpStep {
  DumpStep(const char* phase_, int64_t start_pos_, std::vector<int64_t> tokens_)
      : phase(phase_), start_pos(start_pos_), tokens(std::move(tokens_)) {}
  const char* phase;  // "prefill" or "decode"
  int64_t start_pos;
  std::vector<int64_t> tokens;
  int32_t profile = -1;  // as etrt::ExecutionReport recorded it
  bool switched = false;
  // Bytes etrt copied during the step, by where they moved (etrt::ExecutionRecord).
  int64_t host_to_device_bytes = 0;
  int64_t device_to_host_bytes = 0;
  int64_t realigned_bytes = 0;
  int64_t write_back_bytes = 0;
  std::vector<float> logits;  // [tokens.size(), vocab], row-major
  int64_t next = -1;          // the greedy choice at the last position
};

struct DumpRun {
  std::string strategy;   // the load option profile_strategy
  std::string selection;  // "pin" or "auto"
  std::vector<DumpStep> steps;
};

inline std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

inline bool write_dump(const std::string& path, const std::string& model, int64_t vocab,
                       const std::vector<DumpRun>& runs, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr || vocab <= 0) {
    if (f != nullptr) std::fclose(f);
    *error = "could not write " + path;
    return false;
  }
  std::fprintf(f, "{\n\"model\": %s,\n\"vocab\": %lld,\n\"runs\": [\n", json_string(model).c_str(),
               static_cast<long long>(vocab));
  for (size_t r = 0; r < runs.size(); ++r) {
    const DumpRun& run = runs[r];
    std::fprintf(f, "{\"strategy\": %s, \"selection\": %s, \"steps\": [\n", json_string(run.strategy).c_str(),
                 json_string(run.selection).c_str());
    for (size_t s = 0; s < run.steps.size(); ++s) {
      const DumpStep& step = run.steps[s];
      std::fprintf(f, "{\"phase\": \"%s\", \"start_pos\": %lld, \"profile\": %d, \"switched\": %s, \"next_token\": %lld,",
                   step.phase, static_cast<long long>(step.start_pos), step.profile, step.switched ? "true" : "false",
                   static_cast<long long>(step.next));
      std::fprintf(f,
                   "\n \"bytes\": {\"host_to_device\": %lld, \"device_to_host\": %lld, \"realigned\": %lld, "
                   "\"write_back\": %lld},",
                   static_cast<long long>(step.host_to_device_bytes), static_cast<long long>(step.device_to_host_bytes),
                   static_cast<long long>(step.realigned_bytes), static_cast<long long>(step.write_back_bytes));
      std::fprintf(f, "\n \"tokens\": [");
      for (size_t i = 0; i < step.tokens.size(); ++i)
        std::fprintf(f, "%s%lld", i == 0 ? "" : ", ", static_cast<long long>(step.tokens[i]));
      std::fprintf(f, "],\n \"logits\": [");
      for (size_t i = 0; i < step.logits.size(); ++i) {
        const bool row_start = i % static_cast<size_t>(vocab) == 0;
        if (row_start) std::fprintf(f, "%s\n  [", i == 0 ? "" : "],");
        const float v = step.logits[i];
        // NaN and infinities as Python's json module reads them (a failed CUDA-mode kernel writes NaN).
        if (std::isnan(v)) std::fprintf(f, "%sNaN", row_start ? "" : ", ");
        else if (std::isinf(v)) std::fprintf(f, "%s%sInfinity", row_start ? "" : ", ", v < 0 ? "-" : "");
        else std::fprintf(f, "%s%.9g", row_start ? "" : ", ", static_cast<double>(v));
      }
      std::fprintf(f, "%s]}%s\n", step.logits.empty() ? "" : "]", s + 1 < run.steps.size() ? "," : "");
    }
    std::fprintf(f, "]}%s\n", r + 1 < runs.size() ? "," : "");
  }
  std::fprintf(f, "]\n}\n");
  if (std::fclose(f) != 0) {
    *error = "could not write " + path;
    return false;
  }
  return true;
}

}  // namespace etrt::demo
