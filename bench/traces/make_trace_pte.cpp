// Builds the programs trace_bench.cpp runs: one TensorRT delegate over an
// LLM-shaped GPU-free NvInfer engine, input_ids [1, S] int64 -> logits [1, S, 16]
// (embedding, then matmul), tracing off, in two profile layouts and with two
// modelled switch costs (Builder::set_switch_cost_ns, busy-waited on every
// successful setOptimizationProfileAsync):
//
//   disjoint_<cost>: profile 0 = decode [1, 1], profile 1 = prefill [1, 32..2048]
//                    (the layout of the project's llm fixture)
//   overlap_<cost>:  profile 0 = decode [1, 1], profile 1 = prefill [1, 1..2048]
//                    (a one-token input fits both)
//
// with <cost> 0p48 (0.48 ms, upstream's small model) and 3p6 (3.6 ms,
// gemma-3-1b on an A40).
//
// usage: etrt_make_trace_pte <output-dir>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "etrt_gpufree/builder.h"
#include "blobkit/blobkit.h"

namespace {

constexpr int64_t kVocab = 64;
constexpr int64_t kHidden = 16;
constexpr int64_t kMaxSeq = 2048;

std::string spec(const std::string& blob) {
  const std::string max_seq = std::to_string(kMaxSeq);
  const std::string hidden = std::to_string(kHidden);
  return R"({"name": "forward",
  "values": [{"name": "input_ids", "dtype": "int64", "sizes": [1, )" +
         max_seq + R"(], "dynamic": true},
             {"name": "logits", "dtype": "float32", "sizes": [1, )" +
         max_seq + ", " + hidden + R"(], "dynamic": true}],
  "inputs": ["input_ids"], "outputs": ["logits"],
  "delegate_calls": [{"backend_id": "TensorRTBackend", "blob_file": ")" +
         blob + R"(", "args": ["input_ids", "logits"]}]})";
}

bool write_program(const std::string& dir, const std::string& name, int64_t prefill_min, int64_t switch_cost_ns,
                   std::string* error) {
  using etrt::gpufree::make_shape;
  namespace gpufree = etrt::gpufree;
  std::vector<float> table(static_cast<size_t>(kVocab * kHidden));
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.001f * static_cast<float>(i % 97);
  std::vector<float> weight(static_cast<size_t>(kHidden * kHidden));
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = (i % (kHidden + 1) == 0 ? 1.0f : 0.01f);

  gpufree::Builder b(name);
  b.add_input("input_ids", gpufree::DataType::kInt64, make_shape({1, -1}))
      .add_output("logits", gpufree::DataType::kFloat32, make_shape<int64_t>({1, -1, kHidden}));
  const int32_t decode = b.add_profile();
  const int32_t prefill = b.add_profile();
  b.set_profile_shape(decode, "input_ids", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}))
      .set_profile_shape(prefill, "input_ids", make_shape<int64_t>({1, prefill_min}), make_shape<int64_t>({1, 512}),
                         make_shape<int64_t>({1, kMaxSeq}))
      .add_constant("table", make_shape<int64_t>({kVocab, kHidden}), table)
      .add_constant("weight", make_shape<int64_t>({kHidden, kHidden}), weight)
      .embedding("input_ids", "table", "hidden")
      .matmul("hidden", "weight", "logits")
      .set_switch_cost_ns(switch_cost_ns)
      .set_tracing(false);
  std::vector<uint8_t> engine;
  if (!b.build(&engine, error)) return false;
  const auto blob = etrt::blobkit::blob_for_engine(engine, true, error);
  return !blob.empty() && etrt::blobkit::write_file(dir + "/" + name + ".blob", blob, error) &&
         etrt::blobkit::write_text(dir + "/" + name + ".json", spec(name + ".blob"), error);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: etrt_make_trace_pte <output-dir>\n");
    return 2;
  }
  const std::string dir = argv[1];
  struct Program {
    const char* name;
    int64_t prefill_min;
    int64_t switch_cost_ns;
  };
  const Program programs[] = {
      {"disjoint_0p48", 32, 480'000},
      {"disjoint_3p6", 32, 3'600'000},
      {"overlap_0p48", 1, 480'000},
      {"overlap_3p6", 1, 3'600'000},
  };
  std::string error;
  for (const Program& p : programs) {
    if (!write_program(dir, p.name, p.prefill_min, p.switch_cost_ns, &error)) {
      std::fprintf(stderr, "etrt_make_trace_pte: %s: %s\n", p.name, error.c_str());
      return 1;
    }
  }
  return 0;
}
