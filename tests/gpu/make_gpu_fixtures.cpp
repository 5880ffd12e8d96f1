// Builds the GPU suite's fixtures: the end-to-end fixtures of tests/backend
// (same names, same model, same expected values: tests/backend/fixtures.h),
// but with CUDA-mode reference engines (Builder::set_memory_kind(kDevice)),
// plus variants only the CUDA path needs: unplanned IO (so a runner can pass
// device memory in and out), blobs naming device 1 and a device that does not
// exist, and the benchmark's programs. CMake packs each spec into a .pte.
//
// Runs at build time on machines without a GPU: building and packing a
// CUDA-mode engine touches no CUDA.
//
// usage: etrt_make_gpu_fixtures <output-dir>

#include <cstdio>
#include <functional>
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
using etrt::engine::MemoryKind;
using etrt::engine::reference::Builder;
using json = nlohmann::json;

constexpr int64_t kHidden = etrt::fixtures::kHidden;

std::string g_dir;

struct Profile {
  Shape min, opt, max;
};
Profile exact(int64_t s) {
  return {make_shape<int64_t>({1, s}), make_shape<int64_t>({1, s}), make_shape<int64_t>({1, s})};
}
Profile range(int64_t lo, int64_t opt, int64_t hi) {
  return {make_shape<int64_t>({1, lo}), make_shape<int64_t>({1, opt}), make_shape<int64_t>({1, hi})};
}

std::vector<uint8_t> built(const Builder& b, const std::string& label) {
  std::string error;
  auto bytes = b.build(&error);
  if (bytes.empty()) std::fprintf(stderr, "make_gpu_fixtures: engine %s: %s\n", label.c_str(), error.c_str());
  return bytes;
}

// tests/backend's model, embedding + matmul: input_ids [1, S] -> logits [1, S, kHidden], in CUDA mode unless
// `kind` says otherwise.
std::vector<uint8_t> llm_engine(const std::string& label, const std::vector<Profile>& profiles,
                                MemoryKind kind = MemoryKind::kDevice, bool tracing = true) {
  Builder b(label);
  b.add_input("input_ids", DataType::kInt64, make_shape({1, -1}))
      .add_output("logits", DataType::kFloat32, make_shape<int64_t>({1, -1, kHidden}));
  for (const Profile& p : profiles) b.set_profile_shape(b.add_profile(), "input_ids", p.min, p.opt, p.max);
  b.add_constant("table", make_shape<int64_t>({etrt::fixtures::kVocab, kHidden}), etrt::fixtures::table())
      .add_constant("weight", make_shape<int64_t>({kHidden, kHidden}), etrt::fixtures::weight())
      .embedding("input_ids", "table", "hidden")
      .matmul("hidden", "weight", "logits")
      .set_memory_kind(kind)
      .set_tracing(tracing);
  return built(b, label);
}

// x [1, 4] float32 -> y = 2x: a static, one-profile engine.
std::vector<uint8_t> static_engine(const std::string& label) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, 4})).add_output("y", DataType::kFloat32, make_shape({1, 4}));
  b.scale("x", 2.0f, "y").set_memory_kind(MemoryKind::kDevice);
  return built(b, label);
}

bool write_blob(const std::string& name, const std::vector<uint8_t>& engine,
                const std::function<void(etrt::blob::Metadata&)>& edit = nullptr) {
  std::string error;
  auto blob = engine.empty() ? engine : etrt::refkit::blob_for_engine(engine, true, &error, edit);
  if (blob.empty() || !etrt::refkit::write_file(g_dir + "/" + name + ".blob", blob, &error)) {
    std::fprintf(stderr, "make_gpu_fixtures: %s: %s\n", name.c_str(), error.c_str());
    return false;
  }
  return true;
}

json tensor(const std::string& name, const char* dtype, std::vector<int64_t> sizes, bool dynamic, bool planned = true) {
  return {{"name", name}, {"dtype", dtype}, {"sizes", sizes}, {"dynamic", dynamic}, {"planned", planned}};
}

json call(const std::string& backend, const std::string& blob, std::vector<std::string> args) {
  return {{"backend_id", backend}, {"blob_file", blob + ".blob"}, {"args", args}};
}
json trt_call(const std::string& blob, std::vector<std::string> args) { return call("TensorRTBackend", blob, args); }

bool write_spec(const std::string& name, json values, std::vector<std::string> inputs, std::vector<std::string> outputs,
                json calls) {
  json spec = {
      {"name", "forward"}, {"values", values}, {"inputs", inputs}, {"outputs", outputs}, {"delegate_calls", calls}};
  std::string error;
  if (!etrt::refkit::write_text(g_dir + "/" + name + ".json", spec.dump(2), &error)) {
    std::fprintf(stderr, "make_gpu_fixtures: %s\n", error.c_str());
    return false;
  }
  return true;
}

// One TensorRT delegate input_ids [1, <=max_seq] -> logits [1, <=out_seq, H]; `planned` false leaves both without
// a planned slot, so the runner passes its own memory (host or device) in and out.
bool llm_spec(const std::string& name, const std::string& blob, int64_t max_seq, int64_t out_seq, bool planned = true) {
  return write_spec(name,
                    {tensor("input_ids", "int64", {1, max_seq}, true, planned),
                     tensor("logits", "float32", {1, out_seq, kHidden}, true, planned)},
                    {"input_ids"}, {"logits"}, {trt_call(blob, {"input_ids", "logits"})});
}

bool llm_fixture(const std::string& name, const std::vector<Profile>& profiles, int64_t max_seq, int64_t out_seq) {
  return write_blob(name, llm_engine(name, profiles)) && llm_spec(name, name, max_seq, out_seq);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output-dir>\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  const int64_t H = kHidden;
  bool ok = true;

  // ---- tests/backend's fixtures, CUDA mode ----
  const std::vector<Profile> llm_profiles = {exact(1), range(32, 512, 2048)};
  ok &= llm_fixture("llm", llm_profiles, 2048, 2048);
  ok &= llm_fixture("overlap", {exact(1), range(1, 256, 2048)}, 2048, 2048);
  ok &= llm_fixture("single_dynamic", {range(1, 8, 64)}, 64, 64);
  ok &= llm_fixture("big_output", {exact(1), range(2, 32, 64)}, 64, 64);
  ok &= llm_fixture("small_capacity", {exact(1), range(2, 32, 64)}, 64, 32);
  ok &= write_blob("single_static", static_engine("single_static")) &&
        write_spec("single_static", {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                   {"x"}, {"y"}, {trt_call("single_static", {"x", "y"})});
  ok &= write_blob("mixed_multi", llm_engine("mixed_multi", llm_profiles)) &&
        write_blob("mixed_static", static_engine("mixed_static")) &&
        write_spec("mixed",
                   {tensor("input_ids", "int64", {1, 2048}, true), tensor("logits", "float32", {1, 2048, H}, true),
                    tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                   {"input_ids", "x"}, {"logits", "y"},
                   {trt_call("mixed_multi", {"input_ids", "logits"}), trt_call("mixed_static", {"x", "y"})});
  // A host delegate (EtrtTestAddOne, tests/backend/add_one_backend.cpp) reads the TensorRT delegate's host output
  // the moment execute() returns: it must be complete by then.
  {
    std::string error;
    ok &= etrt::refkit::write_text(g_dir + "/add_one.blob", "ETRT_TEST_ADD_ONE", &error);
  }
  ok &= write_blob("foreign_multi", llm_engine("foreign_multi", llm_profiles)) &&
        write_spec("foreign",
                   {tensor("input_ids", "int64", {1, 2048}, true), tensor("logits", "float32", {1, 2048, H}, true),
                    tensor("plus_one", "float32", {1, 2048, H}, true)},
                   {"input_ids"}, {"plus_one"},
                   {trt_call("foreign_multi", {"input_ids", "logits"}),
                    call("EtrtTestAddOne", "add_one", {"logits", "plus_one"})});

  // ---- CUDA-path variants ----
  // Unplanned IO: the runner's own memory, host or device, is what the delegate sees.
  ok &= write_blob("llm_unplanned", llm_engine("llm_unplanned", llm_profiles)) &&
        llm_spec("llm_unplanned", "llm_unplanned", 2048, 2048, /*planned=*/false);
  // The blob's device_id: device 1 (runs on nvidia-h200-x2), and a device no machine here has.
  ok &= write_blob("llm_device1", llm_engine("llm_device1", llm_profiles),
                   [](etrt::blob::Metadata& m) { m.device_id = 1; }) &&
        llm_spec("llm_device1", "llm_device1", 2048, 2048, /*planned=*/false);
  ok &= write_blob("llm_device9", llm_engine("llm_device9", llm_profiles),
                   [](etrt::blob::Metadata& m) { m.device_id = 9; }) &&
        llm_spec("llm_device9", "llm_device9", 2048, 2048);

  // ---- the benchmark's programs (bench/gpu): tiny compute, tracing off ----
  // decode [1,1] and prefill [1,2..64]; CUDA mode with planned (host) and unplanned (device-capable) IO, the same
  // engine in host mode for comparison, and a delegate that does nothing.
  const std::vector<Profile> bench_profiles = {exact(1), range(2, 32, 64)};
  ok &= write_blob("bench_cuda", llm_engine("bench_cuda", bench_profiles, MemoryKind::kDevice, false)) &&
        llm_spec("bench_cuda", "bench_cuda", 64, 64) &&
        llm_spec("bench_cuda_unplanned", "bench_cuda", 64, 64, /*planned=*/false);
  ok &= write_blob("bench_host", llm_engine("bench_host", bench_profiles, MemoryKind::kHost, false)) &&
        llm_spec("bench_host", "bench_host", 64, 64);
  {
    std::string error;
    ok &= etrt::refkit::write_text(g_dir + "/noop.blob", "noop", &error);
  }
  ok &= write_spec("bench_noop",
                   {tensor("input_ids", "int64", {1, 64}, true), tensor("logits", "float32", {1, 64, H}, true)},
                   {"input_ids"}, {"logits"}, {call("EtrtBenchNoop", "noop", {"input_ids", "logits"})});
  return ok ? 0 : 1;
}
