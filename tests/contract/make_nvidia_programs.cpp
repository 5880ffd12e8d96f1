// Writes the Module suite's programs for NVIDIA's TensorRT (nvidia_module_test.cpp): for each, the plan its builder
// makes from a model description (models.h, the same the contract suite runs), the blob around it and a packer
// spec; tests/contract/run_nvidia.sh packs the specs into .pte files with the project's packer (python -m etrt.pte).
// Needs a GPU: the builder runs on it, and the blob's description comes from the adapter loading the plan.
//
//   etrt_nvidia_make_programs <dir>      (ETRT_CONTRACT_PLAN_DIR: reuse/keep plans, as the contract suite does; the
//                                         benchmark, bench/nvidia, reads the decoder's plan from there)

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "blob/blob.h"
#include "models.h"
#include "plans.h"
#include "pte_spec.h"
#include "blobkit/blobkit.h"

namespace {

using etrt::contract::ModelSpec;
using json = nlohmann::json;

std::string g_dir;
// Layers of the benchmark's decoder: enough kernels that a decode step is host-bound, as an LLM's is.
constexpr int kDeepLayers = 48;

std::vector<uint8_t> plan_for(const ModelSpec& model) {
  std::string error;
  std::vector<uint8_t> plan = etrt::contract::cached_plan(model, &error);
  if (!error.empty()) std::fprintf(stderr, "make_nvidia_programs: %s\n", error.c_str());
  return plan;
}

// The blob around `model`'s plan. The IO bindings' shapes come from the description: TensorRT 8.6 reports an
// output's dynamic extent as profile 0's (nvinfer/README.md), the description keeps -1.
bool write_blob(const std::string& name, const ModelSpec& model) {
  const std::vector<uint8_t> plan = plan_for(model);
  std::string error = "no plan";
  std::vector<uint8_t> blob;
  if (!plan.empty()) {
    // The call's arguments follow the blob's io_bindings, which list the engine's IO in the engine's order; TensorRT
    // 8.6 does not keep the order outputs were marked in (the decoder's come as k_cache_out, v_cache_out, logits),
    // so the bindings are put in the model's order, the one the packer specs below pass the tensors in.
    blob = etrt::blobkit::blob_for_engine(plan, true, &error, [&](etrt::blob::Metadata& m) {
      std::vector<etrt::blob::IoBinding> ordered;
      for (const auto* list : {&model.inputs, &model.outputs})
        for (const etrt::contract::TensorSpec& t : *list)
          for (const etrt::blob::IoBinding& b : m.io_bindings)
            if (t.name == b.name) {
              ordered.push_back(b);
              ordered.back().shape = t.shape;
            }
      if (ordered.size() == m.io_bindings.size()) m.io_bindings = std::move(ordered);
    });
  }
  if (blob.empty() || !etrt::blobkit::write_file(g_dir + "/" + name + ".blob", blob, &error)) {
    std::fprintf(stderr, "make_nvidia_programs: %s: %s\n", name.c_str(), error.c_str());
    return false;
  }
  return true;
}

using etrt::pte_spec::tensor;
using etrt::pte_spec::trt_call;

bool write_spec(const std::string& name, const std::vector<json>& values, std::vector<std::string> inputs,
                std::vector<std::string> outputs, const std::vector<json>& calls) {
  const json spec = etrt::pte_spec::program(values, std::move(inputs), std::move(outputs), calls);
  std::string error;
  if (etrt::blobkit::write_text(g_dir + "/" + name + ".json", spec.dump(2), &error)) return true;
  std::fprintf(stderr, "make_nvidia_programs: %s\n", error.c_str());
  return false;
}

bool llm_program(const std::string& name, const ModelSpec& model) {
  const int64_t s = etrt::contract::kMaxPrefill, h = etrt::contract::kHidden;
  return write_blob(name, model) &&
         write_spec(name, {tensor("input_ids", "int32", {1, s}, true), tensor("logits", "float32", {1, s, h}, true)},
                    {"input_ids"}, {"logits"}, {trt_call(name, {"input_ids", "logits"})});
}

// The attention decoder, its caches passed in and received as outputs: TensorRT 8.6 cannot update them in place.
bool decoder_program(const std::string& name) {
  namespace d = etrt::contract::decoder;
  const std::vector<int64_t> cache = {1, d::kContext, d::kHeadDim};
  return write_blob(name, etrt::contract::attention_decoder()) &&
         write_spec(
             name,
             {tensor("tokens", "int32", {1, d::kMaxPrompt}, true), tensor("start_pos", "int32", {1}, false),
              tensor("k_cache", "float32", cache, false), tensor("v_cache", "float32", cache, false),
              tensor("logits", "float32", {1, d::kMaxPrompt, d::kVocab}, true),
              tensor("k_cache_out", "float32", cache, false), tensor("v_cache_out", "float32", cache, false)},
             {"tokens", "start_pos", "k_cache", "v_cache"}, {"logits", "k_cache_out", "v_cache_out"},
             {trt_call(name, {"tokens", "start_pos", "k_cache", "v_cache", "logits", "k_cache_out", "v_cache_out"})});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  namespace c = etrt::contract;
  const int64_t s = c::kMaxPrefill, h = c::kHidden;
  bool ok = llm_program("nv_llm", c::two_profile_llm()) && llm_program("nv_overlap", c::three_profile_llm());
  // The same model built with kPROFILE_SHARING_0806: its sessions share one engine (nvidia_module_test.cpp).
  ok = ok && llm_program("nv_llm_sharing", c::two_profile_llm_sharing());
  ok = ok && write_blob("nv_static", c::static_scale()) &&
       write_spec("nv_static", {tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)}, {"x"},
                  {"y"}, {trt_call("nv_static", {"x", "y"})});
  // Two delegates in one program: the two-profile model beside the static one.
  ok = ok && write_spec("nv_mixed",
                        {tensor("input_ids", "int32", {1, s}, true), tensor("logits", "float32", {1, s, h}, true),
                         tensor("x", "float32", {1, 4}, false), tensor("y", "float32", {1, 4}, false)},
                        {"input_ids", "x"}, {"logits", "y"},
                        {trt_call("nv_llm", {"input_ids", "logits"}), trt_call("nv_static", {"x", "y"})});
  // The benchmark's decoder (bench/nvidia), every tensor the runner's memory.
  ok = ok && write_blob("nv_deep", c::deep_decoder(kDeepLayers)) &&
       write_spec("nv_deep",
                  {tensor("input_ids", "int32", {1, 512}, true, false),
                   tensor("logits", "float32", {1, 512, c::kDeepWidth}, true, false)},
                  {"input_ids"}, {"logits"}, {trt_call("nv_deep", {"input_ids", "logits"})});
  ok = ok && decoder_program("nv_decoder");
  std::printf("make_nvidia_programs: %s\n",
              ok ? "wrote nv_llm, nv_overlap, nv_llm_sharing, nv_static, nv_mixed, nv_deep, nv_decoder" : "FAILED");
  return ok ? 0 : 1;
}
