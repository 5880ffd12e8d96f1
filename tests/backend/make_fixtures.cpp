// Builds the end-to-end fixtures: reference engines -> TR01 blobs -> packer
// specs. CMake then packs each spec into a .pte with etrt's packer
// (python -m etrt.pte), and the tests load those files through Module.
//
// usage: etrt_make_fixtures <output-dir>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/reference/builder.h"
#include "fixtures.h"
#include "refkit/refkit.h"

namespace {

using etrt::make_shape;
using etrt::Shape;
using etrt::engine::DataType;
using etrt::engine::reference::Builder;
using json = nlohmann::json;

std::string g_dir;

struct Profile {
  Shape min, opt, max;
};

// embedding + matmul over input_ids [1, S] -> logits [1, S, kHidden].
std::vector<uint8_t> llm_engine(const std::string& label, const std::vector<Profile>& profiles) {
  Builder b(label);
  b.add_input("input_ids", DataType::kInt64, make_shape({1, -1}))
      .add_output("logits", DataType::kFloat32, make_shape<int64_t>({1, -1, etrt::fixtures::kHidden}));
  for (const Profile& p : profiles) b.set_profile_shape(b.add_profile(), "input_ids", p.min, p.opt, p.max);
  b.add_constant("table", make_shape<int64_t>({etrt::fixtures::kVocab, etrt::fixtures::kHidden}), etrt::fixtures::table())
      .add_constant("weight", make_shape<int64_t>({etrt::fixtures::kHidden, etrt::fixtures::kHidden}),
                    etrt::fixtures::weight())
      .embedding("input_ids", "table", "hidden")
      .matmul("hidden", "weight", "logits");
  std::string error;
  auto bytes = b.build(&error);
  if (bytes.empty()) std::fprintf(stderr, "make_fixtures: engine %s: %s\n", label.c_str(), error.c_str());
  return bytes;
}

// x [1, 4] float32 -> y = 2x: a static, one-profile engine.
std::vector<uint8_t> static_engine(const std::string& label) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, 4})).add_output("y", DataType::kFloat32, make_shape({1, 4}));
  b.scale("x", 2.0f, "y");
  std::string error;
  auto bytes = b.build(&error);
  if (bytes.empty()) std::fprintf(stderr, "make_fixtures: engine %s: %s\n", label.c_str(), error.c_str());
  return bytes;
}

bool write_blob(const std::string& name, const std::vector<uint8_t>& engine, bool with_signature = true) {
  std::string error;
  auto blob = etrt::refkit::blob_for_engine(engine, with_signature, &error);
  if (blob.empty() || !etrt::refkit::write_file(g_dir + "/" + name + ".blob", blob, &error)) {
    std::fprintf(stderr, "make_fixtures: %s: %s\n", name.c_str(), error.c_str());
    return false;
  }
  return true;
}

json tensor(const std::string& name, const char* dtype, std::vector<int64_t> sizes, bool dynamic) {
  return {{"name", name}, {"dtype", dtype}, {"sizes", sizes}, {"dynamic", dynamic}};
}

json trt_call(const std::string& blob, std::vector<std::string> args) {
  return {{"backend_id", "TensorRTBackend"}, {"blob_file", blob + ".blob"}, {"args", args}};
}

bool write_spec(const std::string& name, json values, std::vector<std::string> inputs,
                std::vector<std::string> outputs, json calls) {
  json spec = {{"name", "forward"}, {"values", values}, {"inputs", inputs}, {"outputs", outputs},
               {"delegate_calls", calls}};
  std::string error;
  if (!etrt::refkit::write_text(g_dir + "/" + name + ".json", spec.dump(2), &error)) {
    std::fprintf(stderr, "make_fixtures: %s\n", error.c_str());
    return false;
  }
  return true;
}

// A single TensorRT delegate: input_ids [1, <=max_seq] -> logits [1, <=out_seq, H].
bool llm_fixture(const std::string& name, const std::vector<Profile>& profiles, int64_t max_seq, int64_t out_seq) {
  return write_blob(name, llm_engine(name, profiles)) &&
         write_spec(name,
                    {tensor("input_ids", "int64", {1, max_seq}, true),
                     tensor("logits", "float32", {1, out_seq, etrt::fixtures::kHidden}, true)},
                    {"input_ids"}, {"logits"}, {trt_call(name, {"input_ids", "logits"})});
}

Profile exact(int64_t s) { return {make_shape<int64_t>({1, s}), make_shape<int64_t>({1, s}), make_shape<int64_t>({1, s})}; }
Profile range(int64_t lo, int64_t opt, int64_t hi) {
  return {make_shape<int64_t>({1, lo}), make_shape<int64_t>({1, opt}), make_shape<int64_t>({1, hi})};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output-dir>\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  const int64_t H = etrt::fixtures::kHidden;
  bool ok = true;

  // Decode profile [1,1] and prefill profile [1,32..2048]: the RFC's workload.
  ok &= llm_fixture("llm", {exact(1), range(32, 512, 2048)}, 2048, 2048);
  // Overlapping: profile 0 = exactly one token, profile 1 = 1..2048.
  ok &= llm_fixture("overlap", {exact(1), range(1, 256, 2048)}, 2048, 2048);
  // One dynamic profile.
  ok &= llm_fixture("single_dynamic", {range(1, 8, 64)}, 64, 64);
  // Profile 1 produces the largest output: [1,1,16] vs up to [1,64,16].
  ok &= llm_fixture("big_output", {exact(1), range(2, 32, 64)}, 64, 64);
  // The same engine with an output planned for only 32 tokens.
  ok &= llm_fixture("small_capacity", {exact(1), range(2, 32, 64)}, 64, 32);

  // One static one-profile delegate.
  ok &= write_blob("single_static", static_engine("single_static")) &&
        write_spec("single_static", {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                   {"x"}, {"y"}, {trt_call("single_static", {"x", "y"})});

  // A multi-profile delegate beside a static one-profile delegate.
  ok &= write_blob("mixed_multi", llm_engine("mixed_multi", {exact(1), range(32, 512, 2048)})) &&
        write_blob("mixed_static", static_engine("mixed_static")) &&
        write_spec("mixed",
                   {tensor("input_ids", "int64", {1, 2048}, true), tensor("logits", "float32", {1, 2048, H}, true),
                    tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                   {"input_ids", "x"}, {"logits", "y"},
                   {trt_call("mixed_multi", {"input_ids", "logits"}), trt_call("mixed_static", {"x", "y"})});

  // A TensorRT delegate feeding a non-TensorRT one (EtrtTestAddOne, in the test binary).
  ok &= write_blob("foreign_multi", llm_engine("foreign_multi", {exact(1), range(32, 512, 2048)}));
  {
    std::string error;
    ok &= etrt::refkit::write_text(g_dir + "/add_one.blob", "ETRT_TEST_ADD_ONE", &error);
  }
  ok &= write_spec("foreign",
                   {tensor("input_ids", "int64", {1, 2048}, true), tensor("logits", "float32", {1, 2048, H}, true),
                    tensor("plus_one", "float32", {1, 2048, H}, true)},
                   {"input_ids"}, {"plus_one"},
                   {trt_call("foreign_multi", {"input_ids", "logits"}),
                    {{"backend_id", "EtrtTestAddOne"}, {"blob_file", "add_one.blob"}, {"args", {"logits", "plus_one"}}}});

  // A blob whose profile signature disagrees with its engine (prefill max 1024 declared, 2048 real).
  {
    std::string error;
    auto blob = etrt::refkit::blob_for_engine(llm_engine("signature_mismatch", {exact(1), range(32, 512, 2048)}), true,
                                              &error, [](etrt::blob::Metadata& m) {
                                                m.profile_signature->inputs[0].profiles[1].max = {1, 1024};
                                              });
    ok &= !blob.empty() && etrt::refkit::write_file(g_dir + "/signature_mismatch.blob", blob, &error) &&
          write_spec("signature_mismatch",
                     {tensor("input_ids", "int64", {1, 2048}, true), tensor("logits", "float32", {1, 2048, H}, true)},
                     {"input_ids"}, {"logits"}, {trt_call("signature_mismatch", {"input_ids", "logits"})});
    if (blob.empty()) std::fprintf(stderr, "make_fixtures: signature_mismatch: %s\n", error.c_str());
  }

  // Engines the backend must refuse at load.
  {
    Builder b("shape_tensor");
    b.add_input("x", DataType::kFloat32, make_shape({1, 4}))
        .add_input("shape", DataType::kInt32, make_shape({2}))
        .add_output("y", DataType::kFloat32, make_shape({1, 4}))
        .mark_shape_tensor("shape")
        .scale("x", 2.0f, "y");
    std::string error;
    auto engine = b.build(&error);
    if (engine.empty()) std::fprintf(stderr, "make_fixtures: shape_tensor: %s\n", error.c_str());
    ok &= !engine.empty() && write_blob("shape_tensor", engine) &&
          write_spec("shape_tensor",
                     {tensor("x", "float32", {1, 4}, false), tensor("shape", "int32", {2}, false),
                      tensor("y", "float32", {1, 4}, false)},
                     {"x", "shape"}, {"y"}, {trt_call("shape_tensor", {"x", "shape", "y"})});
  }
  {
    // A blob whose header promises more engine bytes than it holds.
    std::vector<uint8_t> truncated;
    std::string error;
    auto blob = etrt::refkit::blob_for_engine(static_engine("truncated"), false, &error);
    truncated.assign(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(blob.size() - 8));
    ok &= etrt::refkit::write_file(g_dir + "/truncated.blob", truncated, &error) &&
          write_spec("truncated", {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                     {"x"}, {"y"}, {trt_call("truncated", {"x", "y"})});
  }
  {
    // A well-formed TR01 blob around bytes that are not a reference engine,
    // as a TensorRT plan would be.
    std::vector<uint8_t> engine = static_engine("plan");
    std::string error;
    auto blob = etrt::refkit::blob_for_engine(engine, false, &error);
    // Overwrite the engine magic (engine bytes are the blob's tail).
    const size_t engine_offset = blob.size() - engine.size();
    const char fake[4] = {'f', 't', 'r', 't'};
    for (size_t i = 0; i < 4; ++i) blob[engine_offset + i] = static_cast<uint8_t>(fake[i]);
    ok &= etrt::refkit::write_file(g_dir + "/tensorrt_plan.blob", blob, &error) &&
          write_spec("tensorrt_plan", {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                     {"x"}, {"y"}, {trt_call("tensorrt_plan", {"x", "y"})});
  }
  return ok ? 0 : 1;
}
