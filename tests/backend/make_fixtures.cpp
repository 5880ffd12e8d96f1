// Builds the end-to-end fixtures: GPU-free NvInfer engines -> TR01 blobs -> packer
// specs. CMake then packs each spec into a .pte with etrt's packer
// (python -m etrt.pte), and the tests load those files through Module.
//
// With --cuda it builds the GPU suite's fixtures instead (tests/gpu): the
// Module suite's programs (shared_fixtures, refusal_fixtures, scratch_fixtures), names and
// expected values with CUDA-mode GPU-free NvInfer engines
// (Builder::set_memory_kind(kDevice)), plus variants only the CUDA path needs:
// unplanned IO (so a runner can pass device memory in and out), blobs naming
// device 1 and a device that does not exist, and the GPU benchmark's
// programs. Building and packing a CUDA-mode engine touches no CUDA, so this
// runs at build time on machines without a GPU.
//
// usage: etrt_make_fixtures [--cuda] --programs <name>,<name>... <output-dir>
//
// --programs lists the programs (<name>.json, packed into <name>.pte) this mode must write: CMake passes its list
// from tests/backend/fixtures.cmake (ETRT_FIXTURE_NAMES, or ETRT_GPU_FIXTURE_NAMES with --cuda), the same names
// it packs. Writing a program not listed, or not writing a listed one, fails the run and names the program.

#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "blob/blob.h"
#include "etrt_gpufree/builder.h"
#include "fixtures.h"
#include "pte_spec.h"
#include "blobkit/blobkit.h"

namespace {

using etrt::gpufree::Builder;
using etrt::gpufree::DataType;
using etrt::gpufree::make_shape;
using etrt::gpufree::MemoryKind;
using etrt::gpufree::Shape;
using json = nlohmann::json;

std::string g_dir;
// The programs written so far, in order (write_spec).
std::vector<std::string> g_written;
// Where the engines' tensors live: kHost for tests/backend, kDevice for tests/gpu.
MemoryKind g_kind = MemoryKind::kHost;

struct Profile {
  Shape min, opt, max;
};

std::vector<uint8_t> built(const Builder& b, const std::string& label) {
  std::string error;
  std::vector<uint8_t> bytes;
  if (!b.build(&bytes, &error)) std::fprintf(stderr, "make_fixtures: engine %s: %s\n", label.c_str(), error.c_str());
  return bytes;
}

// embedding + matmul over input_ids [1, S] -> logits [1, S, kHidden], in this run's memory kind unless `kind`
// says otherwise.
std::vector<uint8_t> llm_engine(const std::string& label, const std::vector<Profile>& profiles, MemoryKind kind,
                                bool tracing = true,
                                etrt::gpufree::TensorRTVersion version = etrt::gpufree::TensorRTVersion::k10) {
  Builder b(label);
  b.add_input("input_ids", DataType::kInt64, make_shape({1, -1}))
      .add_output("logits", DataType::kFloat32, make_shape<int64_t>({1, -1, etrt::fixtures::kHidden}));
  for (const Profile& p : profiles) b.set_profile_shape(b.add_profile(), "input_ids", p.min, p.opt, p.max);
  b.add_constant("table", make_shape<int64_t>({etrt::fixtures::kVocab, etrt::fixtures::kHidden}),
                 etrt::fixtures::table())
      .add_constant("weight", make_shape<int64_t>({etrt::fixtures::kHidden, etrt::fixtures::kHidden}),
                    etrt::fixtures::weight())
      .embedding("input_ids", "table", "hidden")
      .matmul("hidden", "weight", "logits")
      .set_memory_kind(kind)
      .set_tracing(tracing)
      .set_tensorrt_version(version);
  return built(b, label);
}
std::vector<uint8_t> llm_engine(const std::string& label, const std::vector<Profile>& profiles) {
  return llm_engine(label, profiles, g_kind);
}

// x [1, 4] float32 -> y = 2x: a static, one-profile engine.
std::vector<uint8_t> static_engine(const std::string& label) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, 4})).add_output("y", DataType::kFloat32, make_shape({1, 4}));
  b.scale("x", 2.0f, "y").set_memory_kind(g_kind);
  return built(b, label);
}

bool write_blob(const std::string& name, const std::vector<uint8_t>& engine, bool with_signature = true,
                const std::function<void(etrt::blob::Metadata&)>& edit = nullptr) {
  std::string error;
  auto blob = engine.empty() ? engine : etrt::blobkit::blob_for_engine(engine, with_signature, &error, edit);
  if (blob.empty() || !etrt::blobkit::write_file(g_dir + "/" + name + ".blob", blob, &error)) {
    std::fprintf(stderr, "make_fixtures: %s: %s\n", name.c_str(), error.c_str());
    return false;
  }
  return true;
}

// A blob around `engine` with the metadata of `twin`, an engine with the same IO and profiles: for engines the
// adapter refuses to open, which blob_for_engine therefore cannot describe.
bool write_blob_described_by(const std::string& name, const std::vector<uint8_t>& engine,
                             const std::vector<uint8_t>& twin) {
  std::string error = "no engine";
  etrt::blob::Metadata metadata;
  std::vector<uint8_t> blob;
  if (!engine.empty() && !twin.empty() &&
      !etrt::blobkit::blob_for_engine(twin, true, &error, [&](etrt::blob::Metadata& m) { metadata = m; }).empty()) {
    blob = etrt::blob::write_blob(metadata, engine.data(), engine.size());
    if (blob.empty()) error = "write_blob refused the twin's metadata";
  }
  if (blob.empty() || !etrt::blobkit::write_file(g_dir + "/" + name + ".blob", blob, &error)) {
    std::fprintf(stderr, "make_fixtures: %s: %s\n", name.c_str(), error.c_str());
    return false;
  }
  return true;
}

using etrt::pte_spec::call;
using etrt::pte_spec::tensor;
using etrt::pte_spec::trt_call;

bool write_spec(const std::string& name, const std::vector<json>& values, std::vector<std::string> inputs,
                std::vector<std::string> outputs, const std::vector<json>& calls) {
  const json spec = etrt::pte_spec::program(values, std::move(inputs), std::move(outputs), calls);
  g_written.push_back(name);
  std::string error;
  if (!etrt::blobkit::write_text(g_dir + "/" + name + ".json", spec.dump(2), &error)) {
    std::fprintf(stderr, "make_fixtures: %s\n", error.c_str());
    return false;
  }
  return true;
}

// One TensorRT delegate running `blob`: input_ids [1, <=max_seq] -> logits [1, <=out_seq, H].
bool llm_spec(const std::string& name, const std::string& blob, int64_t max_seq, int64_t out_seq, bool planned = true) {
  return write_spec(name,
                    {tensor("input_ids", "int64", {1, max_seq}, true, planned),
                     tensor("logits", "float32", {1, out_seq, etrt::fixtures::kHidden}, true, planned)},
                    {"input_ids"}, {"logits"}, {trt_call(blob, {"input_ids", "logits"})});
}

bool llm_fixture(const std::string& name, const std::vector<Profile>& profiles, int64_t max_seq, int64_t out_seq) {
  return write_blob(name, llm_engine(name, profiles)) && llm_spec(name, name, max_seq, out_seq);
}

bool write_text(const std::string& name, const std::string& text) {
  std::string error;
  if (etrt::blobkit::write_text(g_dir + "/" + name, text, &error)) return true;
  std::fprintf(stderr, "make_fixtures: %s\n", error.c_str());
  return false;
}

Profile exact(int64_t s) {
  return {make_shape<int64_t>({1, s}), make_shape<int64_t>({1, s}), make_shape<int64_t>({1, s})};
}
Profile range(int64_t lo, int64_t opt, int64_t hi) {
  return {make_shape<int64_t>({1, lo}), make_shape<int64_t>({1, opt}), make_shape<int64_t>({1, hi})};
}

const int64_t H = etrt::fixtures::kHidden;
const std::vector<Profile> kLlmProfiles = {exact(1), range(32, 512, 2048)};  // decode [1,1], prefill [1,32..2048]

// The programs both suites run, in this run's memory kind.
bool shared_fixtures() {
  bool ok = true;
  // Decode profile [1,1] and prefill profile [1,32..2048]: the RFC's workload.
  ok &= llm_fixture("llm", kLlmProfiles, 2048, 2048);
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
  ok &= write_blob("mixed_multi", llm_engine("mixed_multi", kLlmProfiles)) &&
        write_blob("mixed_static", static_engine("mixed_static")) &&
        write_spec("mixed",
                   {tensor("input_ids", "int64", {1, 2048}, true), tensor("logits", "float32", {1, 2048, H}, true),
                    tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                   {"input_ids", "x"}, {"logits", "y"},
                   {trt_call("mixed_multi", {"input_ids", "logits"}), trt_call("mixed_static", {"x", "y"})});

  // A TensorRT delegate feeding a non-TensorRT one (EtrtTestAddOne, tests/backend/add_one_backend.cpp), which reads
  // the TensorRT delegate's host output the moment execute() returns: it must be complete by then.
  ok &= write_blob("foreign_multi", llm_engine("foreign_multi", kLlmProfiles)) &&
        write_text("add_one.blob", "ETRT_TEST_ADD_ONE") &&
        write_spec("foreign",
                   {tensor("input_ids", "int64", {1, 2048}, true), tensor("logits", "float32", {1, 2048, H}, true),
                    tensor("plus_one", "float32", {1, 2048, H}, true)},
                   {"input_ids"}, {"plus_one"},
                   {trt_call("foreign_multi", {"input_ids", "logits"}),
                    call("EtrtTestAddOne", "add_one", {"logits", "plus_one"})});
  return ok;
}

// One delegate of the shared-scratch programs (fixtures.h): x [1, 4] -> h = 2x, in scratch -> y = h + bias, needing
// `need` bytes of scratch.
std::vector<uint8_t> scratch_engine(const std::string& label, float bias, int64_t need, bool tracing = true) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, 4})).add_output("y", DataType::kFloat32, make_shape({1, 4}));
  b.add_constant("bias", make_shape({4}), std::vector<float>(4, bias))
      .scale("x", 2.0f, "h")
      .add("h", "bias", "y")
      .set_device_memory_size(static_cast<uint64_t>(need))
      .set_memory_kind(g_kind)
      .set_tracing(tracing);
  return built(b, label);
}

bool write_methods(const std::string& name, const std::vector<json>& methods, bool named_data_table = true);

// A method running blobs <blob>_0 .. <blob>_<n-1> in a chain, x -> y0 -> ... -> y<n-1>.
json scratch_method(const std::string& method, const std::string& blob, size_t n) {
  std::vector<json> values = {tensor("x", "float32", {1, 4}, false)};
  std::vector<json> calls;
  for (size_t i = 0; i < n; ++i) {
    const std::string in = i == 0 ? "x" : "y" + std::to_string(i - 1), out = "y" + std::to_string(i);
    values.push_back(tensor(out, "float32", {1, 4}, false));
    calls.push_back(trt_call(blob + "_" + std::to_string(i), {in, out}));
  }
  json m = etrt::pte_spec::program(values, {"x"}, {"y" + std::to_string(n - 1)}, calls);
  m["name"] = method;
  return m;
}

// A program of delegates <name>_0 .. <name>_<n-1> in a chain (scratch_method), delegate i adding biases[i % size]
// and needing needs[i % size] bytes of scratch.
bool scratch_program(const std::string& name, size_t n, const std::vector<float>& biases,
                     const std::vector<int64_t>& needs, bool tracing = true) {
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    const std::string blob = name + "_" + std::to_string(i);
    ok &= write_blob(blob, scratch_engine(blob, biases[i % biases.size()], needs[i % needs.size()], tracing));
  }
  return ok && write_methods(name, {scratch_method("forward", name, n)});
}

// The shared-scratch programs (fixtures.h), in this run's memory kind.
bool scratch_fixtures() {
  using etrt::fixtures::kScratchChainBias;
  using etrt::fixtures::kScratchChainNeeds;
  return scratch_program("scratch_chain", std::size(kScratchChainNeeds),
                         std::vector<float>(std::begin(kScratchChainBias), std::end(kScratchChainBias)),
                         std::vector<int64_t>(std::begin(kScratchChainNeeds), std::end(kScratchChainNeeds))) &&
         scratch_program("scratch_big", 1, {etrt::fixtures::kScratchBigBias}, {etrt::fixtures::kScratchBigNeed}) &&
         // Both in one program: "forward" runs scratch_chain's delegates, "big" scratch_big's.
         write_methods("scratch_methods", {scratch_method("forward", "scratch_chain", std::size(kScratchChainNeeds)),
                                           scratch_method("big", "scratch_big", 1)});
}

// Programs the backend must refuse at load, in both modes (module_e2e_test.cpp's ModuleEngineTest).
bool refusal_fixtures() {
  bool ok = true;
  // A blob whose profile signature disagrees with its engine (prefill max 1024 declared, 2048 real).
  ok &= write_blob("signature_mismatch", llm_engine("signature_mismatch", kLlmProfiles), true,
                   [](etrt::blob::Metadata& m) {
                     m.profile_signature->inputs[0].profiles[1].max = {1, 1024};
                   }) &&
        llm_spec("signature_mismatch", "signature_mismatch", 2048, 2048);
  {
    Builder b("shape_tensor");
    b.add_input("x", DataType::kFloat32, make_shape({1, 4}))
        .add_input("shape", DataType::kInt32, make_shape({2}))
        .add_output("y", DataType::kFloat32, make_shape({1, 4}))
        .mark_shape_tensor("shape")
        .scale("x", 2.0f, "y");
    ok &= write_blob("shape_tensor", built(b, "shape_tensor")) &&
          write_spec("shape_tensor",
                     {tensor("x", "float32", {1, 4}, false), tensor("shape", "int32", {2}, false),
                      tensor("y", "float32", {1, 4}, false)},
                     {"x", "shape"}, {"y"}, {trt_call("shape_tensor", {"x", "shape", "y"})});
  }
  {
    // A blob whose header promises more engine bytes than it holds.
    std::vector<uint8_t> truncated;
    std::string error;
    auto blob = etrt::blobkit::blob_for_engine(static_engine("truncated"), false, &error);
    truncated.assign(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(blob.size() - 8));
    ok &= etrt::blobkit::write_file(g_dir + "/truncated.blob", truncated, &error) &&
          write_spec("truncated", {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)}, {"x"},
                     {"y"}, {trt_call("truncated", {"x", "y"})});
  }
  {
    // A well-formed TR01 blob around bytes that are not a GPU-free NvInfer engine,
    // as a TensorRT plan would be.
    std::vector<uint8_t> engine = static_engine("plan");
    std::string error;
    auto blob = etrt::blobkit::blob_for_engine(engine, false, &error);
    // Overwrite the engine magic (engine bytes are the blob's tail).
    const size_t engine_offset = blob.size() - engine.size();
    const char fake[4] = {'f', 't', 'r', 't'};
    for (size_t i = 0; i < 4; ++i) blob[engine_offset + i] = static_cast<uint8_t>(fake[i]);
    ok &= etrt::blobkit::write_file(g_dir + "/tensorrt_plan.blob", blob, &error) &&
          write_spec("tensorrt_plan", {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                     {"x"}, {"y"}, {trt_call("tensorrt_plan", {"x", "y"})});
  }
  return ok;
}

// Programs only the CPU suite's adapter and fault tests need (tests/backend/module_adapter_test.cpp,
// module_fault_test.cpp).
bool adapter_fixtures() {
  bool ok = true;
  // Unplanned IO: the runner's own memory is what the delegate sees, so a test can hand it a misaligned buffer.
  ok &= write_blob("unplanned_io", llm_engine("unplanned_io", kLlmProfiles)) &&
        llm_spec("unplanned_io", "unplanned_io", 2048, 2048, /*planned=*/false);
  // An input, and an output, that getTensorLocation reports as kHOST without being shape tensors: refused at load.
  // The adapter refuses to open such an engine, so the blob's metadata is that of its twin without the placement.
  const struct {
    const char* name;
    const char* tensor;
  } placements[] = {{"host_input", "x"}, {"host_output", "y"}};
  for (const auto& placement : placements) {
    const std::string name = placement.name;
    Builder b(name);
    b.add_input("x", DataType::kFloat32, make_shape({1, 4}))
        .add_output("y", DataType::kFloat32, make_shape({1, 4}))
        .scale("x", 2.0f, "y")
        .set_memory_kind(g_kind);
    const std::vector<uint8_t> twin = built(b, name);
    b.place_on_host(placement.tensor);
    ok &= write_blob_described_by(name, built(b, name), twin) &&
          write_spec(name, {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)}, {"x"}, {"y"},
                     {trt_call(name, {"x", "y"})});
  }
  // An output both of whose dims depend on the input values: once the input shape is set, its shape still reads
  // [-1, -1] -- two unknown dims, whose product is positive.
  {
    Builder b("data_dependent");
    b.add_input("x", DataType::kFloat32, make_shape({-1, -1}))
        .add_output("y", DataType::kFloat32, make_shape({-1, -1}))
        .identity("x", "y")
        .mark_data_dependent("y")
        .set_memory_kind(g_kind);
    const int32_t p = b.add_profile();
    b.set_profile_shape(p, "x", make_shape({1, 1}), make_shape({2, 2}), make_shape({4, 4}));
    ok &= write_blob("data_dependent", built(b, "data_dependent")) &&
          write_spec("data_dependent", {tensor("x", "float32", {4, 4}, true), tensor("y", "float32", {4, 4}, true)},
                     {"x"}, {"y"}, {trt_call("data_dependent", {"x", "y"})});
  }
  return ok;
}

// The cache engine of the aliasing fixtures: x [1, 1..4, 2] and write index pos [1] update rows pos.. of
// cache [1, 8, 2] in place (cache_out, TensorRT's KV-cache update), and y = 2x.
std::vector<uint8_t> kv_engine(const std::string& label) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, -1, 2}))
      .add_input("pos", DataType::kInt64, make_shape({1}))
      .add_input("cache", DataType::kFloat32, make_shape({1, 8, 2}))
      .add_output("y", DataType::kFloat32, make_shape({1, -1, 2}))
      .add_output("cache_out", DataType::kFloat32, make_shape({1, 8, 2}))
      .scale("x", 2.0f, "y")
      .kv_cache_update("cache", "x", "pos", "cache_out")
      .set_memory_kind(g_kind);
  b.set_profile_shape(b.add_profile(), "x", make_shape({1, 1, 2}), make_shape({1, 2, 2}), make_shape({1, 4, 2}));
  return built(b, label);
}

// A TR02 blob around kv_engine with `aliases` as its aliased_io.
bool kv_blob(const std::string& name, std::vector<etrt::blob::AliasedIo> aliases) {
  return write_blob(name, kv_engine(name), true, [&](etrt::blob::Metadata& m) { m.aliased_io = aliases; });
}

// x, pos, cache (the caller's memory: unplanned), y; with `write_back`, also the cache's write-back output
// cache_out, as ExecuTorch passes it for a mutable buffer the program owns. Without `planned`, every tensor is the
// caller's memory, so that a runner's aligned buffers are all bound in place.
bool kv_spec(const std::string& name, const std::string& blob, bool write_back, bool planned = true) {
  std::vector<json> values = {tensor("x", "float32", {1, 4, 2}, true, planned),
                              tensor("pos", "int64", {1}, false, planned),
                              tensor("cache", "float32", {1, 8, 2}, false, /*planned=*/false),
                              tensor("y", "float32", {1, 4, 2}, true, planned)};
  std::vector<std::string> outputs = {"y"};
  std::vector<std::string> args = {"x", "pos", "cache", "y"};
  if (write_back) {
    values.push_back(tensor("cache_out", "float32", {1, 8, 2}, false, planned));
    outputs.push_back("cache_out");
    args.push_back("cache_out");
  }
  return write_spec(name, values, {"x", "pos", "cache"}, outputs, {trt_call(blob, args)});
}

// x [1, 4] -> y = x W (W a constant [4, 4]): an engine whose weights are streamable when `streaming`.
std::vector<uint8_t> weights_engine(const std::string& label, bool streaming) {
  Builder b(label);
  std::vector<float> w(16, 0.0f);
  for (int i = 0; i < 4; ++i) w[static_cast<size_t>(i * 4 + i)] = 3.0f;
  b.add_input("x", DataType::kFloat32, make_shape({1, 4}))
      .add_output("y", DataType::kFloat32, make_shape({1, 4}))
      .add_constant("w", make_shape({4, 4}), w)
      .matmul("x", "w", "y")
      .enable_weight_streaming(streaming)
      .set_memory_kind(g_kind);
  return built(b, label);
}

bool weights_spec(const std::string& name, const std::string& blob, json compile_specs) {
  json c = trt_call(blob, {"x", "y"});
  if (!compile_specs.is_null()) c["compile_specs"] = compile_specs;
  return write_spec(name, {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)}, {"x"}, {"y"},
                    {c});
}

json spec_entry(const char* key, const char* value) { return {{"key", key}, {"value", value}}; }

// Delegate-owned state (the blob's delegate_state; ExecuTorch passes neither the state nor its new value). state_kv:
// x [1, 1..4, 2] and pos [1] update rows pos.. of the delegate's cache [1, 8, 2] in place; view is a copy of the
// updated cache, so a test sees what the cache holds.
std::vector<uint8_t> state_kv_engine(const std::string& label) {
  Builder b(label);
  b.add_input("x", DataType::kFloat32, make_shape({1, -1, 2}))
      .add_input("pos", DataType::kInt64, make_shape({1}))
      .add_input("cache", DataType::kFloat32, make_shape({1, 8, 2}))
      .add_output("cache_out", DataType::kFloat32, make_shape({1, 8, 2}))
      .add_output("view", DataType::kFloat32, make_shape({1, 8, 2}))
      .kv_cache_update("cache", "x", "pos", "cache_out")
      .identity("cache_out", "view")
      .set_memory_kind(g_kind)
      .set_tracing(true);
  b.set_profile_shape(b.add_profile(), "x", make_shape({1, 1, 2}), make_shape({1, 2, 2}), make_shape({1, 4, 2}));
  return built(b, label);
}

// The state_kv call: x, pos, view -- neither cache nor cache_out.
json state_kv_method(const std::string& name, const std::string& blob) {
  json m = etrt::pte_spec::program({tensor("x", "float32", {1, 4, 2}, true), tensor("pos", "int64", {1}, false),
                                    tensor("view", "float32", {1, 8, 2}, false)},
                                   {"x", "pos"}, {"view"}, {trt_call(blob, {"x", "pos", "view"})});
  m["name"] = name;
  return m;
}

// `named_data_table` false: the program has no named_data table, as ExecuTorch 1.5.1's exporter writes a program
// without named data (docs/pte-packer.md).
bool write_methods(const std::string& name, const std::vector<json>& methods, bool named_data_table) {
  g_written.push_back(name);
  std::string error;
  json spec = {{"methods", json(methods)}};
  if (!named_data_table) spec["named_data_table"] = false;
  if (!etrt::blobkit::write_text(g_dir + "/" + name + ".json", spec.dump(2), &error)) {
    std::fprintf(stderr, "make_fixtures: %s\n", error.c_str());
    return false;
  }
  return true;
}

bool state_fixtures() {
  using etrt::blob::DelegateState;
  bool ok = true;
  const etrt::blob::AliasedIo kv{"cache_out", "cache", "kv_cache_update"};
  const auto with_state = [&](std::vector<DelegateState> states) {
    return [kv, states](etrt::blob::Metadata& m) {
      m.aliased_io = {kv};
      m.delegate_state = states;
    };
  };
  ok &= write_blob("state_kv", state_kv_engine("state_kv"), true, with_state({{"cache", "cache", "cache_out", ""}})) &&
        write_methods("state_kv", {state_kv_method("forward", "state_kv")});
  // llm's engine as TensorRT 8.6 builds it without kPROFILE_SHARING_0806: its contexts cannot share a profile, so
  // Modules of it do not share the engine (engine_cache.h).
  ok &= write_blob("llm_trt86", llm_engine("llm_trt86", kLlmProfiles, g_kind, true,
                                           etrt::gpufree::TensorRTVersion::k8_6)) &&
        llm_spec("llm_trt86", "llm_trt86", 2048, 2048);
  // Prefill and decode: two methods over one cache, shared by name.
  ok &= write_methods("state_two_methods",
                      {state_kv_method("prefill", "state_kv"), state_kv_method("decode", "state_kv")});
  // state_kv and scratch_chain without a named_data table: ExecuTorch hands their delegates no NamedDataMap.
  ok &= write_methods("state_kv_no_table", {state_kv_method("forward", "state_kv")}, /*named_data_table=*/false);
  ok &= write_methods("scratch_chain_no_table",
                      {scratch_method("forward", "scratch_chain", std::size(etrt::fixtures::kScratchChainNeeds))},
                      /*named_data_table=*/false);
  // Refused at load: an initial value the program has no named data for; a state whose input is dynamic.
  ok &= write_blob("state_missing_initial", state_kv_engine("state_missing_initial"), true,
                   with_state({{"cache", "cache", "cache_out", "etrt_state/cache"}})) &&
        write_methods("state_missing_initial", {state_kv_method("forward", "state_missing_initial")});
  ok &= write_blob("state_dynamic", state_kv_engine("state_dynamic"), true,
                   [&](etrt::blob::Metadata& m) {
                     m.delegate_state = {{"x", "x", "view", ""}};
                   }) &&
        write_spec("state_dynamic",
                   {tensor("pos", "int64", {1}, false), tensor("cache", "float32", {1, 8, 2}, false),
                    tensor("cache_out", "float32", {1, 8, 2}, false)},
                   {"pos", "cache"}, {"cache_out"}, {trt_call("state_dynamic", {"pos", "cache", "cache_out"})});
  // state_acc: acc_out = acc + x, written back into the delegate's acc (not in place); y = 2 acc_out.
  {
    Builder b("state_acc");
    b.add_input("x", DataType::kFloat32, make_shape({1, 2}))
        .add_input("acc", DataType::kFloat32, make_shape({1, 2}))
        .add_output("acc_out", DataType::kFloat32, make_shape({1, 2}))
        .add_output("y", DataType::kFloat32, make_shape({1, 2}))
        .add("acc", "x", "acc_out")
        .scale("acc_out", 2.0f, "y")
        .set_memory_kind(g_kind);
    ok &= write_blob("state_acc", built(b, "state_acc"), true,
                     [](etrt::blob::Metadata& m) {
                       m.delegate_state = {{"acc", "acc", "acc_out", ""}};
                     }) &&
          write_spec("state_acc", {tensor("x", "float32", {1, 2}, false), tensor("y", "float32", {1, 2}, false)}, {"x"},
                     {"y"}, {trt_call("state_acc", {"x", "y"})});
  }
  return ok;
}

// In-place aliased IO, weight streaming, 0-d outputs and blobs without io_bindings (tests/backend only).
bool contract_fixtures() {
  using etrt::blob::AliasedIo;
  bool ok = true;
  const AliasedIo kv{"cache_out", "cache", "kv_cache_update"};
  ok &= kv_blob("kv", {kv}) && kv_spec("kv_write_back", "kv", true) && kv_spec("kv_owned", "kv", false);
  ok &= kv_spec("kv_unplanned_write_back", "kv", true, /*planned=*/false) &&
        kv_spec("kv_unplanned_owned", "kv", false, /*planned=*/false);
  // The engine aliases cache_out to cache, and the blob does not say so: applied all the same.
  ok &= kv_blob("kv_unlisted", {}) && kv_spec("kv_unlisted", "kv_unlisted", true);
  // Bindings listed outputs first and interleaved, as Torch-TensorRT's own tests write them: the arguments are still
  // the inputs in their listed order, then the outputs in theirs.
  ok &= write_blob("kv_interleaved", kv_engine("kv_interleaved"), true,
                   [&](etrt::blob::Metadata& m) {
                     m.aliased_io = {kv};
                     const std::vector<etrt::blob::IoBinding> b = m.io_bindings;  // x, pos, cache, y, cache_out
                     m.io_bindings = {b[3], b[0], b[4], b[1], b[2]};
                   }) &&
        kv_spec("kv_interleaved", "kv_interleaved", true);
  // A user alias: y = 2x written into x.
  ok &= kv_blob("alias_user", {kv, {"y", "x", "user"}}) && kv_spec("alias_user", "alias_user", true);
  // Refused at load.
  ok &= kv_blob("alias_unknown_kind", {{"cache_out", "cache", "mirror"}}) &&
        kv_spec("alias_unknown_kind", "alias_unknown_kind", true);
  ok &= kv_blob("alias_kv_disagrees", {{"cache_out", "x", "kv_cache_update"}}) &&
        kv_spec("alias_kv_disagrees", "alias_kv_disagrees", true);
  ok &= kv_blob("alias_user_shapes", {kv, {"y", "pos", "user"}}) &&
        kv_spec("alias_user_shapes", "alias_user_shapes", true);

  // Weight streaming: the automatic budget, a compile spec, one above the streamable size, malformed and
  // duplicated specs, and an engine without streamable weights.
  ok &= write_blob("ws", weights_engine("ws", true)) && weights_spec("ws_auto", "ws", nullptr) &&
        weights_spec("ws_spec", "ws", json::array({spec_entry("weight_streaming_budget", "40")})) &&
        weights_spec("ws_spec_above", "ws", json::array({spec_entry("weight_streaming_budget", "1000")})) &&
        weights_spec("ws_spec_malformed", "ws", json::array({spec_entry("weight_streaming_budget", "12abc")})) &&
        weights_spec("ws_spec_negative", "ws", json::array({spec_entry("weight_streaming_budget", "-1")})) &&
        weights_spec(
            "ws_spec_twice", "ws",
            json::array({spec_entry("weight_streaming_budget", "8"), spec_entry("weight_streaming_budget", "9")}));
  // A budget that applies and a profile signature that disagrees with the engine (max [1,8], the engine's [1,4]):
  // the load refuses the budget first when the engine refuses it, the signature otherwise.
  ok &= write_blob("ws_signature", weights_engine("ws_signature", true), true,
                   [](etrt::blob::Metadata& m) {
                     m.profile_signature->inputs[0].profiles[0].max = {1, 8};
                   }) &&
        weights_spec("ws_spec_signature_mismatch", "ws_signature",
                     json::array({spec_entry("weight_streaming_budget", "40")}));
  ok &= write_blob("ws_resident", weights_engine("ws_resident", false)) &&
        weights_spec("ws_resident", "ws_resident", json::array({spec_entry("weight_streaming_budget", "40")}));

  // A 0-d output: the engine says [1], ExecuTorch's tensor has rank 0.
  {
    Builder b("scalar_output");
    b.add_input("x", DataType::kFloat32, make_shape({1}))
        .add_output("y", DataType::kFloat32, make_shape({1}))
        .scale("x", 3.0f, "y");
    ok &= write_blob("scalar_output", built(b, "scalar_output")) &&
          write_spec("scalar_output", {tensor("x", "float32", {1}, false), tensor("y", "float32", {}, false)}, {"x"},
                     {"y"}, {trt_call("scalar_output", {"x", "y"})});
    // The same with the output in the caller's memory too (Module::set_output).
    ok &= write_spec("scalar_output_unplanned",
                     {tensor("x", "float32", {1}, false), tensor("y", "float32", {}, false, /*planned=*/false)}, {"x"},
                     {"y"}, {trt_call("scalar_output", {"x", "y"})});
  }
  // No io_bindings: the names come from the engine, ordered by their numeric suffixes, not the engine's order.
  {
    Builder b("no_bindings");
    b.add_input("input_1", DataType::kFloat32, make_shape({1, 4}))
        .add_input("input_0", DataType::kFloat32, make_shape({1, 4}))
        .add_output("output_1", DataType::kFloat32, make_shape({1, 4}))
        .add_output("output_0", DataType::kFloat32, make_shape({1, 4}))
        .identity("input_0", "output_0")
        .scale("input_1", 2.0f, "output_1");
    ok &= write_blob("no_bindings", built(b, "no_bindings"), false,
                     [](etrt::blob::Metadata& m) { m.io_bindings.clear(); }) &&
          write_spec("no_bindings",
                     {tensor("a", "float32", {1, 4}, false), tensor("b", "float32", {1, 4}, false),
                      tensor("c", "float32", {1, 4}, false), tensor("d", "float32", {1, 4}, false)},
                     {"a", "b"}, {"c", "d"}, {trt_call("no_bindings", {"a", "b", "c", "d"})});
  }
  // IO names with control characters (an escape sequence, a newline, a tab): every message quotes them escaped.
  // The program plans 4 elements, the profile takes 3, so a 4-element input reaches the delegate and is refused.
  {
    Builder b("control_names");
    b.add_input("ids\x1b[2J\n", DataType::kFloat32, make_shape({1, -1}))
        .add_output("out\tput", DataType::kFloat32, make_shape({1, -1}))
        .set_profile_shape(b.add_profile(), "ids\x1b[2J\n", make_shape({1, 1}), make_shape({1, 2}), make_shape({1, 3}))
        .scale("ids\x1b[2J\n", 2.0f, "out\tput");
    ok &= write_blob("control_names", built(b, "control_names")) &&
          write_spec("control_names", {tensor("x", "float32", {1, 4}, true), tensor("y", "float32", {1, 4}, true)},
                     {"x"}, {"y"}, {trt_call("control_names", {"x", "y"})});
  }
  return ok;
}

// The CUDA-graph benchmark's decoder (bench/gpu/gpu_graph_bench.cpp): 64 ops, each one kernel in CUDA mode --
// embedding, Q/K/V projections, two in-place KV-cache updates, causal attention, output projection and residual,
// 27 more residual matmul blocks, LM head -- over tokens [1, S], start_pos [1] and caches [1, 256, 32].
// Decode [1, 1], prefill [1, 2..64]; tracing off; CUDA mode.
std::vector<uint8_t> graph_bench_engine(const std::string& label, bool tracing) {
  constexpr int64_t kVocab = 64, kWidth = 32, kCache = 256;
  constexpr int kBlocks = 27;
  Builder b(label);
  b.add_input("tokens", DataType::kInt64, make_shape<int64_t>({1, -1}))
      .add_input("start_pos", DataType::kInt64, make_shape<int64_t>({1}))
      .add_input("k_cache", DataType::kFloat32, make_shape<int64_t>({1, kCache, kWidth}))
      .add_input("v_cache", DataType::kFloat32, make_shape<int64_t>({1, kCache, kWidth}))
      .add_output("logits", DataType::kFloat32, make_shape<int64_t>({1, -1, kVocab}))
      .add_output("k_cache_out", DataType::kFloat32, make_shape<int64_t>({1, kCache, kWidth}))
      .add_output("v_cache_out", DataType::kFloat32, make_shape<int64_t>({1, kCache, kWidth}));
  b.set_profile_shape(b.add_profile(), "tokens", make_shape<int64_t>({1, 1}), make_shape<int64_t>({1, 1}),
                      make_shape<int64_t>({1, 1}));
  b.set_profile_shape(b.add_profile(), "tokens", make_shape<int64_t>({1, 2}), make_shape<int64_t>({1, 32}),
                      make_shape<int64_t>({1, 64}));
  uint32_t seed = 1;
  auto weights = [&seed](int64_t rows, int64_t cols) {
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (float& v : w) {
      seed = seed * 1664525u + 1013904223u;
      v = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 0.1f;
    }
    return w;
  };
  b.add_constant("embed", make_shape<int64_t>({kVocab, kWidth}), weights(kVocab, kWidth));
  for (const char* w : {"wq", "wk", "wv", "wo"})
    b.add_constant(w, make_shape<int64_t>({kWidth, kWidth}), weights(kWidth, kWidth));
  b.embedding("tokens", "embed", "x")
      .matmul("x", "wq", "q")
      .matmul("x", "wk", "k")
      .matmul("x", "wv", "v")
      .kv_cache_update("k_cache", "k", "start_pos", "k_cache_out")
      .kv_cache_update("v_cache", "v", "start_pos", "v_cache_out")
      .causal_attention("q", "k_cache_out", "v_cache_out", "start_pos", 0.17677670f, "attention")
      .matmul("attention", "wo", "projected")
      .add("x", "projected", "h0");
  for (int i = 0; i < kBlocks; ++i) {
    const std::string w = "w" + std::to_string(i), h = "h" + std::to_string(i), next = "h" + std::to_string(i + 1);
    b.add_constant(w, make_shape<int64_t>({kWidth, kWidth}), weights(kWidth, kWidth))
        .matmul(h, w, "t" + std::to_string(i))
        .add(h, "t" + std::to_string(i), next);
  }
  b.add_constant("lm_head", make_shape<int64_t>({kWidth, kVocab}), weights(kWidth, kVocab))
      .matmul("h" + std::to_string(kBlocks), "lm_head", "logits")
      .set_memory_kind(MemoryKind::kDevice)
      .set_tracing(tracing);
  return built(b, label);
}

// A method running the CUDA-graph decoder `blob`, every IO tensor the runner's (device) memory.
json graph_method(const std::string& method, const std::string& blob) {
  json m = etrt::pte_spec::program(
      {tensor("tokens", "int64", {1, 64}, true, false), tensor("start_pos", "int64", {1}, false, false),
       tensor("k_cache", "float32", {1, 256, 32}, false, false),
       tensor("v_cache", "float32", {1, 256, 32}, false, false), tensor("logits", "float32", {1, 64, 64}, true, false)},
      {"tokens", "start_pos", "k_cache", "v_cache"}, {"logits"},
      {trt_call(blob, {"tokens", "start_pos", "k_cache", "v_cache", "logits"})});
  m["name"] = method;
  return m;
}

// The CUDA-graph decoder as program `name`, caches updated in place.
bool graph_program(const std::string& name, bool tracing) {
  return write_blob(name, graph_bench_engine(name, tracing), true,
                    [](etrt::blob::Metadata& m) {
                      m.aliased_io = {{"k_cache_out", "k_cache", "kv_cache_update"},
                                      {"v_cache_out", "v_cache", "kv_cache_update"}};
                    }) &&
         write_methods(name, {graph_method("forward", name)});
}

// Variants only the CUDA path needs (tests/gpu, bench/gpu).
bool cuda_fixtures() {
  bool ok = true;
  // Unplanned IO: the runner's own memory, host or device, is what the delegate sees.
  ok &= write_blob("llm_unplanned", llm_engine("llm_unplanned", kLlmProfiles)) &&
        llm_spec("llm_unplanned", "llm_unplanned", 2048, 2048, /*planned=*/false);
  // The blob's device_id: device 1 (runs on nvidia-h200-x2), and a device no machine here has.
  ok &= write_blob("llm_device1", llm_engine("llm_device1", kLlmProfiles), true,
                   [](etrt::blob::Metadata& m) { m.device_id = 1; }) &&
        llm_spec("llm_device1", "llm_device1", 2048, 2048, /*planned=*/false);
  ok &= write_blob("llm_device9", llm_engine("llm_device9", kLlmProfiles), true,
                   [](etrt::blob::Metadata& m) { m.device_id = 9; }) &&
        llm_spec("llm_device9", "llm_device9", 2048, 2048);

  // A streaming engine (no budget: the automatic one, half its weights) for the CUDA-graph rule: no capture is tried.
  ok &= write_blob("ws_cuda", weights_engine("ws_cuda", true)) && weights_spec("ws_cuda", "ws_cuda", nullptr);

  // The benchmark's programs (bench/gpu): tiny compute, tracing off; decode [1,1] and prefill [1,2..64]; CUDA
  // mode with planned (host) and unplanned (device-capable) IO, the same engine in host mode for comparison, and a
  // delegate that does nothing.
  const std::vector<Profile> bench_profiles = {exact(1), range(2, 32, 64)};
  ok &= write_blob("bench_cuda", llm_engine("bench_cuda", bench_profiles, MemoryKind::kDevice, false)) &&
        llm_spec("bench_cuda", "bench_cuda", 64, 64) &&
        llm_spec("bench_cuda_unplanned", "bench_cuda", 64, 64, /*planned=*/false);
  // The same as two methods, "forward" and "again": two delegates of one load (tests/gpu/scratch_cuda_test.cpp).
  {
    std::vector<json> methods;
    for (const char* method : {"forward", "again"}) {
      json m = etrt::pte_spec::program({tensor("input_ids", "int64", {1, 64}, true, false),
                                        tensor("logits", "float32", {1, 64, etrt::fixtures::kHidden}, true, false)},
                                       {"input_ids"}, {"logits"}, {trt_call("bench_cuda", {"input_ids", "logits"})});
      m["name"] = method;
      methods.push_back(m);
    }
    ok &= write_methods("bench_cuda_unplanned_methods", methods);
  }
  ok &= write_blob("bench_host", llm_engine("bench_host", bench_profiles, MemoryKind::kHost, false)) &&
        llm_spec("bench_host", "bench_host", 64, 64);
  // The CUDA-graph benchmark's decoder, tracing off.
  ok &= graph_program("bench_graph", false);
  // The shared-scratch memory benchmark (bench/gpu/gpu_scratch_bench.cpp): N = 1, 8, 32 single-layer delegates in a
  // chain, each needing kScratchBenchNeed bytes of scratch, tracing off.
  for (const size_t n : {1, 8, 32})
    ok &= scratch_program("scratch_n" + std::to_string(n), n, {1.0f}, {etrt::fixtures::kScratchBenchNeed}, false);
  // bench_graph's decoder as "forward" and scratch_n1's delegate as "big" in one program: loading "big" grows the
  // decoder's scratch pool (tests/gpu/scratch_cuda_test.cpp).
  ok &= write_methods("bench_graph_grow",
                      {graph_method("forward", "bench_graph"), scratch_method("big", "scratch_n1", 1)});
  ok &= write_text("noop.blob", "noop") &&
        write_spec("bench_noop",
                   {tensor("input_ids", "int64", {1, 64}, true), tensor("logits", "float32", {1, 64, H}, true)},
                   {"input_ids"}, {"logits"}, {call("EtrtBenchNoop", "noop", {"input_ids", "logits"})});
  return ok;
}

// Splits "a,b,c" into its names.
std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  for (size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
    names.push_back(list.substr(start, comma - start));
  names.push_back(list.substr(start));
  return names;
}

// Whether the programs written are exactly `listed`, each written once; if not, says which differ.
bool written_as_listed(const std::vector<std::string>& listed, const char* list_name) {
  const std::set<std::string> listed_set(listed.begin(), listed.end());
  std::set<std::string> written;
  std::vector<std::string> problems;
  for (const std::string& name : g_written) {
    if (!written.insert(name).second)
      problems.push_back(name + ": written twice");
    else if (listed_set.count(name) == 0)
      problems.push_back(name + ": written, not listed");
  }
  for (const std::string& name : listed)
    if (written.count(name) == 0) problems.push_back(name + ": listed, not written");
  if (problems.empty()) return true;
  std::fprintf(stderr,
               "make_fixtures: the programs written differ from the list passed with --programs (%s in "
               "tests/backend/fixtures.cmake); list each program this mode writes there, and only those:\n",
               list_name);
  for (const std::string& problem : problems) std::fprintf(stderr, "  %s\n", problem.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  bool cuda = false;
  const char* programs = nullptr;
  int i = 1;
  for (; i < argc - 1; ++i) {
    if (std::strcmp(argv[i], "--cuda") == 0) {
      cuda = true;
    } else if (std::strcmp(argv[i], "--programs") == 0 && i + 1 < argc - 1) {
      programs = argv[++i];
    } else {
      break;
    }
  }
  if (i != argc - 1 || programs == nullptr) {
    std::fprintf(stderr, "usage: %s [--cuda] --programs <name>,<name>... <output-dir>\n", argv[0]);
    return 2;
  }
  g_dir = argv[argc - 1];
  g_kind = cuda ? MemoryKind::kDevice : MemoryKind::kHost;
  const bool ok = shared_fixtures() && refusal_fixtures() && scratch_fixtures() &&
                  (cuda ? cuda_fixtures() : adapter_fixtures() && contract_fixtures() && state_fixtures());
  if (!ok) return 1;
  return written_as_listed(split_names(programs), cuda ? "ETRT_GPU_FIXTURE_NAMES" : "ETRT_FIXTURE_NAMES") ? 0 : 1;
}
