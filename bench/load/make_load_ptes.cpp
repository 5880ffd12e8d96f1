// Builds the programs bench/load/load_bench.cpp loads (docs/limits.md):
//
//   realistic        a 16-layer KV-cache decoder: 34 inputs, 33 outputs (32 written in place), 2 profiles, 1 MiB of
//                    weights, a profile signature
//   bindings_<n>     a blob of n io_bindings over an engine with n IO tensors (n/2 inputs copied to n/2 outputs),
//                    called with all n tensors: 8192 and 16384 (the limit), loaded in full
//   bindings_100000  100000 io_bindings ({"name": ...} each, 1.7 MB): refused by the blob reader's count limit
//   tensors_<n>      an engine of n chained ops (n - 1 intermediates): 16384 and 65536 (the limit), loaded in full
//   tensors_100000   100000 chained ops: refused by the engine decoder's count limit
//
// usage: etrt_make_load_ptes <output-dir>   (writes <name>.json packer specs and the blobs they name)

#include <cstdio>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "etrt_gpufree/builder.h"
#include "format.h"
#include "model.h"
#include "blobkit/blobkit.h"

namespace {

namespace gpufree = etrt::gpufree;
using etrt::gpufree::make_shape;
using gpufree::DataType;

struct Tensor {
  std::string name, dtype;
  std::vector<int64_t> sizes;
  bool dynamic = false;
};

std::string sizes_json(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// A one-method packer spec: the tensors, and one TensorRT delegate call taking `args` in order.
std::string spec(const std::vector<Tensor>& tensors, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs, const std::string& blob_file) {
  std::string s = "{\"name\": \"forward\", \"values\": [";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    s += std::string(i ? ",\n" : "\n") + "{\"name\": \"" + t.name + "\", \"dtype\": \"" + t.dtype +
         "\", \"sizes\": " + sizes_json(t.sizes) + (t.dynamic ? ", \"dynamic\": true}" : "}");
  }
  auto list = [](const std::vector<std::string>& names) {
    std::string l = "[";
    for (size_t i = 0; i < names.size(); ++i) l += (i ? ", \"" : "\"") + names[i] + "\"";
    return l + "]";
  };
  std::vector<std::string> args = inputs;
  args.insert(args.end(), outputs.begin(), outputs.end());
  return s + "],\n\"inputs\": " + list(inputs) + ",\n\"outputs\": " + list(outputs) +
         ",\n\"delegate_calls\": [{\"backend_id\": \"TensorRTBackend\", \"blob_file\": \"" + blob_file +
         "\", \"args\": " + list(args) + "}]}\n";
}

bool fail(const std::string& what, const std::string& error) {
  std::fprintf(stderr, "etrt_make_load_ptes: %s: %s\n", what.c_str(), error.c_str());
  return false;
}

bool write_program(const std::string& dir, const std::string& name, const std::vector<uint8_t>& blob,
                   const std::string& program_spec) {
  std::string error;
  if (!etrt::blobkit::write_file(dir + "/" + name + ".blob", blob, &error) ||
      !etrt::blobkit::write_text(dir + "/" + name + ".json", program_spec, &error))
    return fail(name, error);
  return true;
}

// Wraps engine bytes into a blob whose bindings and signature are read back from the engine.
bool engine_program(const std::string& dir, const std::string& name, const std::vector<uint8_t>& engine,
                    const std::vector<Tensor>& tensors, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs) {
  std::string error;
  const std::vector<uint8_t> blob = etrt::blobkit::blob_for_engine(engine, /*with_signature=*/true, &error);
  if (blob.empty()) return fail(name, error);
  return write_program(dir, name, blob, spec(tensors, inputs, outputs, name + ".blob"));
}

std::vector<float> filled(size_t n, float v) { return std::vector<float>(n, v); }

bool realistic(const std::string& dir) {
  constexpr int kLayers = 16, kHidden = 64, kVocab = 512, kContext = 2048;
  gpufree::Builder b("realistic_decoder");
  b.add_input("tokens", DataType::kInt64, make_shape({1, -1})).add_input("position", DataType::kInt64, make_shape({1}));
  for (int l = 0; l < kLayers; ++l)
    for (const char* kv : {"k", "v"})
      b.add_input(std::string(kv) + "_cache_" + std::to_string(l), DataType::kFloat32,
                  make_shape({1, kContext, kHidden}));
  b.add_output("logits", DataType::kFloat32, make_shape({1, -1, kVocab}));
  for (int l = 0; l < kLayers; ++l)
    for (const char* kv : {"k", "v"})
      b.add_output(std::string(kv) + "_out_" + std::to_string(l), DataType::kFloat32,
                   make_shape({1, kContext, kHidden}));
  const int32_t decode = b.add_profile(), prefill = b.add_profile();
  b.set_profile_shape(decode, "tokens", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}))
      .set_profile_shape(prefill, "tokens", make_shape({1, 2}), make_shape({1, 512}), make_shape({1, kContext}));
  b.add_constant("embedding", make_shape({kVocab, kHidden}), filled(kVocab * kHidden, 0.01f))
      .add_constant("lm_head", make_shape({kHidden, kVocab}), filled(kHidden * kVocab, 0.02f))
      .embedding("tokens", "embedding", "h0");
  for (int l = 0; l < kLayers; ++l) {
    const std::string n = std::to_string(l), h = "h" + n;
    for (const char* w : {"wq", "wk", "wv"})
      b.add_constant(std::string(w) + n, make_shape({kHidden, kHidden}), filled(kHidden * kHidden, 0.03f));
    b.matmul(h, "wq" + n, "q" + n)
        .matmul(h, "wk" + n, "k" + n)
        .matmul(h, "wv" + n, "v" + n)
        .kv_cache_update("k_cache_" + n, "k" + n, "position", "k_out_" + n)
        .kv_cache_update("v_cache_" + n, "v" + n, "position", "v_out_" + n)
        .causal_attention("q" + n, "k_out_" + n, "v_out_" + n, "position", 0.125f, "a" + n)
        .add(h, "a" + n, "h" + std::to_string(l + 1));
  }
  b.matmul("h" + std::to_string(kLayers), "lm_head", "logits").set_tracing(false);
  std::string error;
  std::vector<uint8_t> engine;
  if (!b.build(&engine, &error)) return fail("realistic", error);
  // The call passes the inputs and logits; the caches are written in place (the engine's own aliases).
  std::vector<Tensor> tensors = {{"tokens", "int64", {1, kContext}, true}, {"position", "int64", {1}, false}};
  std::vector<std::string> inputs = {"tokens", "position"};
  for (int l = 0; l < kLayers; ++l)
    for (const char* kv : {"k", "v"}) {
      const std::string name = std::string(kv) + "_cache_" + std::to_string(l);
      tensors.push_back({name, "float32", {1, kContext, kHidden}, false});
      inputs.push_back(name);
    }
  tensors.push_back({"logits", "float32", {1, kContext, kVocab}, true});
  return engine_program(dir, "realistic", engine, tensors, inputs, {"logits"});
}

// n IO tensors: in_k float32 [2] copied to out_k.
bool bindings(const std::string& dir, size_t n) {
  gpufree::Builder b("wide");
  for (size_t k = 0; k < n / 2; ++k) b.add_input("in_" + std::to_string(k), DataType::kFloat32, make_shape({2}));
  for (size_t k = 0; k < n / 2; ++k) b.add_output("out_" + std::to_string(k), DataType::kFloat32, make_shape({2}));
  for (size_t k = 0; k < n / 2; ++k) b.identity("in_" + std::to_string(k), "out_" + std::to_string(k));
  b.set_tracing(false);
  std::string error;
  std::vector<uint8_t> engine;
  if (!b.build(&engine, &error)) return fail("bindings", error);
  std::vector<Tensor> tensors;
  std::vector<std::string> inputs, outputs;
  for (size_t k = 0; k < n / 2; ++k) {
    inputs.push_back("in_" + std::to_string(k));
    tensors.push_back({inputs.back(), "float32", {2}, false});
  }
  for (size_t k = 0; k < n / 2; ++k) {
    outputs.push_back("out_" + std::to_string(k));
    tensors.push_back({outputs.back(), "float32", {2}, false});
  }
  return engine_program(dir, "bindings_" + std::to_string(n), engine, tensors, inputs, outputs);
}

// x [1, -1] -> n chained scales -> y, one profile [1, 1..64]. Serialized without the builder, which would refuse
// the counts above the limits.
std::vector<uint8_t> chain(size_t n) {
  gpufree::Model m;
  m.label = "chain";
  m.tracing = false;
  m.io.push_back({"x", true, DataType::kFloat32, make_shape({1, -1})});
  m.io.push_back({"y", false, DataType::kFloat32, make_shape({1, -1})});
  m.profiles.push_back({gpufree::InputRange{make_shape({1, 1}), make_shape({1, 32}), make_shape({1, 64})}});
  for (size_t k = 0; k + 1 < n; ++k) m.intermediates.push_back({"t" + std::to_string(k), DataType::kFloat32});
  int32_t previous = 0;
  for (size_t k = 0; k < n; ++k) {
    gpufree::Op op;
    op.kind = gpufree::OpKind::kScale;
    op.a = previous;
    op.out = k + 1 == n ? 1 : m.intermediate_id(k);
    op.factor = 0.5f;
    m.ops.push_back(op);
    previous = op.out;
  }
  return gpufree::serialize(m);
}

const std::vector<Tensor> kXY = {{"x", "float32", {1, 64}, true}, {"y", "float32", {1, 64}, true}};

bool tensors(const std::string& dir, size_t n) {
  const std::string name = "tensors_" + std::to_string(n);
  const std::vector<uint8_t> engine = chain(n);
  if (n <= gpufree::kMaxOps) return engine_program(dir, name, engine, kXY, {"x"}, {"y"});
  // Above the limit: a blob the reader accepts around an engine the runtime refuses.
  etrt::blob::Metadata md;
  md.io_bindings = {{"x", "float32", {1, -1}, true}, {"y", "float32", {1, -1}, false}};
  const std::vector<uint8_t> blob = etrt::blob::write_blob(md, engine.data(), engine.size());
  if (blob.empty()) return fail(name, "write_blob refused the metadata");
  return write_program(dir, name, blob, spec(kXY, {"x"}, {"y"}, name + ".blob"));
}

// 100000 io_bindings, the smallest each can be ({"name":"b<k>"}), around a small valid engine.
bool many_bindings(const std::string& dir) {
  std::string json = "{\"io_bindings\":[";
  for (size_t k = 0; k < 100000; ++k) json += (k ? ",{\"name\":\"b" : "{\"name\":\"b") + std::to_string(k) + "\"}";
  json += "]}";
  const std::vector<uint8_t> engine = chain(1);
  const size_t engine_offset = (etrt::blob::kHeaderSize + json.size() + 15) / 16 * 16;
  std::vector<uint8_t> blob(engine_offset + engine.size(), 0);
  auto put = [&blob](size_t at, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) blob[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  blob[0] = 'T', blob[1] = 'R', blob[2] = '0', blob[3] = '1';
  put(4, etrt::blob::kHeaderSize, 4);
  put(8, json.size(), 4);
  put(12, engine_offset, 4);
  put(16, engine.size(), 8);
  blob[24] = 1;
  std::copy(json.begin(), json.end(), blob.begin() + etrt::blob::kHeaderSize);
  std::copy(engine.begin(), engine.end(), blob.begin() + static_cast<std::ptrdiff_t>(engine_offset));
  return write_program(dir, "bindings_100000", blob, spec(kXY, {"x"}, {"y"}, "bindings_100000.blob"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  const bool ok = realistic(dir) && bindings(dir, 8192) && bindings(dir, 16384) && many_bindings(dir) &&
                  tensors(dir, 16384) && tensors(dir, 65536) && tensors(dir, 100000);
  return ok ? 0 : 1;
}
