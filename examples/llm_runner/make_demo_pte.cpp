// Builds the demo decoder (decoder_model.h): its engine, a TR02 blob whose
// aliased_io says that k_cache_out and v_cache_out are written in place into
// k_cache and v_cache (kind kv_cache_update), the packer specs CMake turns
// into .pte files (python -m etrt.pte), and the weights for an independent
// implementation.
//
// Both programs take tokens [1, S] int64, start_pos [1] int64 and the caches
// k_cache, v_cache [1, T, D] float32 as method inputs. The caches are not
// memory-planned: the runner owns them and passes them to every call, and the
// engine updates them in place, so what one call writes the next one reads.
//
//   decoder.pte            the delegate call passes the inputs and logits only (no write-back outputs):
//                          the short argument list, the demo's model
//   decoder_writeback.pte  the call also passes k_cache_out and v_cache_out, planned tensors that receive a copy
//                          of the updated caches; the method returns them after logits
//   decoder_weights.bin/.json   the weights, little-endian float32, and their manifest
//
// With --cuda (the GPU suite, tests/gpu): decoder_cuda.pte and decoder_writeback_cuda.pte hold a CUDA-mode engine
// (the runner passes device caches), decoder_host.pte the host-mode engine, so one process can compare the two.
// Building a CUDA-mode engine touches no CUDA.
//
// usage: etrt_make_demo [--cuda] <output-dir>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "blob/metadata.h"
#include "decoder_model.h"
#include "blobkit/blobkit.h"

namespace {

using json = nlohmann::json;
using etrt::gpufree::MemoryKind;
namespace demo = etrt::demo;

bool write_decoder_blob(const std::string& dir, const std::string& name, MemoryKind kind, std::string* error) {
  std::vector<uint8_t> engine;
  if (!demo::decoder_builder(name, kind).build(&engine, error)) return false;
  // The engine reports the aliases itself (getAliasedInputTensor); the blob says so too, as an exporter does, which
  // makes it a TR02 blob.
  const std::vector<uint8_t> blob =
      etrt::blobkit::blob_for_engine(engine, /*with_signature=*/true, error, [](etrt::blob::Metadata& m) {
        m.aliased_io = {{"k_cache_out", "k_cache", etrt::blob::kAliasKindKvCacheUpdate},
                        {"v_cache_out", "v_cache", etrt::blob::kAliasKindKvCacheUpdate}};
      });
  return !blob.empty() && etrt::blobkit::write_file(dir + "/" + name + ".blob", blob, error);
}

json tensor(const char* name, const char* dtype, std::vector<int64_t> sizes, bool dynamic, bool planned = true) {
  json t = {{"name", name}, {"dtype", dtype}, {"sizes", sizes}, {"dynamic", dynamic}};
  if (!planned) t["planned"] = false;
  return t;
}

bool write_spec(const std::string& dir, const std::string& name, const std::string& blob, bool write_back,
                std::string* error) {
  json values = {tensor("tokens", "int64", {1, demo::kMaxPrompt}, true), tensor("start_pos", "int64", {1}, false),
                 tensor("k_cache", "float32", {1, demo::kContext, demo::kHeadDim}, false, /*planned=*/false),
                 tensor("v_cache", "float32", {1, demo::kContext, demo::kHeadDim}, false, /*planned=*/false),
                 tensor("logits", "float32", {1, demo::kMaxPrompt, demo::kVocab}, true)};
  std::vector<std::string> args = {"tokens", "start_pos", "k_cache", "v_cache", "logits"};
  std::vector<std::string> outputs = {"logits"};
  if (write_back) {
    for (const char* out : {"k_cache_out", "v_cache_out"}) {
      values.push_back(tensor(out, "float32", {1, demo::kContext, demo::kHeadDim}, false));
      args.push_back(out);
      outputs.push_back(out);
    }
  }
  const json spec = {
      {"comment", std::string("the demo decoder (examples/llm_runner/decoder_model.h)") +
                      (write_back ? ", with write-back outputs" : ", caches updated in place, no write-back outputs")},
      {"name", "forward"},
      {"values", values},
      {"inputs", {"tokens", "start_pos", "k_cache", "v_cache"}},
      {"outputs", outputs},
      {"delegate_calls", {{{"backend_id", "TensorRTBackend"}, {"blob_file", blob + ".blob"}, {"args", args}}}}};
  return etrt::blobkit::write_text(dir + "/" + name + ".json", spec.dump(2) + "\n", error);
}

}  // namespace

int main(int argc, char** argv) {
  const bool cuda = argc == 3 && std::strcmp(argv[1], "--cuda") == 0;
  if (argc != 2 && !cuda) {
    std::fprintf(stderr, "usage: %s [--cuda] <output-dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[argc - 1];
  std::string error;
  bool ok = demo::write_weights(dir, "decoder_weights", &error);
  if (!cuda) {
    ok = ok && write_decoder_blob(dir, "decoder", MemoryKind::kHost, &error) &&
         write_spec(dir, "decoder", "decoder", /*write_back=*/false, &error) &&
         write_spec(dir, "decoder_writeback", "decoder", /*write_back=*/true, &error);
  } else {
    ok = ok && write_decoder_blob(dir, "decoder_cuda", MemoryKind::kDevice, &error) &&
         write_decoder_blob(dir, "decoder_host", MemoryKind::kHost, &error) &&
         write_spec(dir, "decoder_cuda", "decoder_cuda", /*write_back=*/false, &error) &&
         write_spec(dir, "decoder_writeback_cuda", "decoder_cuda", /*write_back=*/true, &error) &&
         write_spec(dir, "decoder_host", "decoder_host", /*write_back=*/false, &error);
  }
  if (!ok) {
    std::fprintf(stderr, "etrt_make_demo: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
