// Builds the demo model's engine and blob: a reference engine with a decode
// profile [1,1] and a prefill profile [1,32..2048], one set of weights.
// CMake packs the resulting spec into demo.pte (python -m etrt.pte).
//
// usage: etrt_make_demo <output-dir>

#include <cstdio>
#include <string>
#include <vector>

#include "etrt_gpufree/builder.h"
#include "refkit/refkit.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output-dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  constexpr int64_t kVocab = 64, kHidden = 32;
  using etrt::make_shape;
  using etrt::gpufree::DataType;

  std::vector<float> table(kVocab * kHidden), weight(kHidden * kVocab);
  for (int64_t i = 0; i < kVocab * kHidden; ++i) table[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 101) / 101.0f;
  for (int64_t i = 0; i < kHidden * kVocab; ++i) weight[static_cast<size_t>(i)] = static_cast<float>((i * 53) % 97) / 97.0f - 0.5f;

  etrt::gpufree::Builder b("demo");
  b.add_input("input_ids", DataType::kInt64, make_shape({1, -1}))
      .add_output("logits", DataType::kFloat32, make_shape<int64_t>({1, -1, kVocab}));
  const int32_t decode = b.add_profile();
  const int32_t prefill = b.add_profile();
  b.set_profile_shape(decode, "input_ids", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}))
      .set_profile_shape(prefill, "input_ids", make_shape({1, 32}), make_shape({1, 512}), make_shape({1, 2048}))
      .add_constant("embedding", make_shape<int64_t>({kVocab, kHidden}), table)
      .add_constant("lm_head", make_shape<int64_t>({kHidden, kVocab}), weight)
      .embedding("input_ids", "embedding", "hidden")
      .matmul("hidden", "lm_head", "logits");
  std::string error;
  const auto engine = b.build(&error);
  auto blob = engine.empty() ? std::vector<uint8_t>{} : etrt::refkit::blob_for_engine(engine, true, &error);
  const std::string spec = R"({
  "name": "forward",
  "values": [
    {"name": "input_ids", "dtype": "int64", "sizes": [1, 2048], "dynamic": true},
    {"name": "logits", "dtype": "float32", "sizes": [1, 2048, 64], "dynamic": true}
  ],
  "inputs": ["input_ids"],
  "outputs": ["logits"],
  "delegate_calls": [{"backend_id": "TensorRTBackend", "blob_file": "demo.blob", "args": ["input_ids", "logits"]}]
}
)";
  if (blob.empty() || !etrt::refkit::write_file(dir + "/demo.blob", blob, &error) ||
      !etrt::refkit::write_text(dir + "/demo.json", spec, &error)) {
    std::fprintf(stderr, "etrt_make_demo: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
