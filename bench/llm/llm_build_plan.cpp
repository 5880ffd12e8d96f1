// Builds a TensorRT plan from an ONNX model the way a TensorRT 8.6 user does (docs/real-llm.md): NVIDIA's ONNX parser
// fills the network, NVIDIA's builder builds it in fp16 with the optimization profiles asked for, and the plan is
// written for `etrt pack`. The profiles are over the dynamic input `tokens` [1, S]; every other input is static.
//
//   etrt_llm_build_plan <model.onnx> <out.plan> split|wide [max_seq=2048] [opt=512]
//     split: profile 0 decode [1, 1]; profile 1 prefill [1, 32..max_seq], opt [1, opt]
//     wide:  profile 0 [1, 1..max_seq], opt [1, opt]
//
// cuBLAS/cuDNN tactics are off (the H200 machine has neither library TensorRT 8.6 wants); TensorRT's own kernels
// serve every layer. With ETRT_LLM_KEEP_FP32=1 every layer whose output the model computes in float32 (its
// normalizations, attention and logits) is held to float32 (kPREFER_PRECISION_CONSTRAINTS); by default fp16 is
// allowed everywhere, as for any fp16 build. With ETRT_LLM_PROFILE_SHARING=1 the plan is built with TensorRT 8.6's
// PreviewFeature::kPROFILE_SHARING_0806, so that sessions of it share one engine (docs/design.md, decision 21).

#include <NvInfer.h>
#include <NvOnnxParser.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

namespace {

class Logger final : public nvinfer1::ILogger {
  void log(Severity severity, const char* msg) noexcept override {
    if (severity <= Severity::kWARNING) std::fprintf(stderr, "[TensorRT] %s\n", msg);
  }
};

nvinfer1::Dims tokens_dims(int32_t s) {
  nvinfer1::Dims d{};
  d.nbDims = 2;
  d.d[0] = 1;
  d.d[1] = s;
  return d;
}

bool add_profile(nvinfer1::IBuilder& builder, nvinfer1::IBuilderConfig& config, int32_t min, int32_t opt,
                 int32_t max) {
  nvinfer1::IOptimizationProfile* p = builder.createOptimizationProfile();
  return p != nullptr && p->setDimensions("tokens", nvinfer1::OptProfileSelector::kMIN, tokens_dims(min)) &&
         p->setDimensions("tokens", nvinfer1::OptProfileSelector::kOPT, tokens_dims(opt)) &&
         p->setDimensions("tokens", nvinfer1::OptProfileSelector::kMAX, tokens_dims(max)) &&
         config.addOptimizationProfile(p) >= 0;
}

int fail(const char* what) {
  std::fprintf(stderr, "etrt_llm_build_plan: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || (std::strcmp(argv[3], "split") != 0 && std::strcmp(argv[3], "wide") != 0)) {
    std::fprintf(stderr, "usage: %s <model.onnx> <out.plan> split|wide [max_seq=2048] [opt=512]\n", argv[0]);
    return 2;
  }
  const bool split = std::strcmp(argv[3], "split") == 0;
  const int32_t max_seq = argc > 4 ? std::atoi(argv[4]) : 2048;
  const int32_t opt = argc > 5 ? std::atoi(argv[5]) : 512;
  const auto t0 = std::chrono::steady_clock::now();

  Logger logger;
  std::unique_ptr<nvinfer1::IBuilder> builder(nvinfer1::createInferBuilder(logger));
  if (!builder) return fail("createInferBuilder failed");
  const auto explicit_batch =
      1U << static_cast<uint32_t>(nvinfer1::NetworkDefinitionCreationFlag::kEXPLICIT_BATCH);
  std::unique_ptr<nvinfer1::INetworkDefinition> network(builder->createNetworkV2(explicit_batch));
  std::unique_ptr<nvonnxparser::IParser> parser(nvonnxparser::createParser(*network, logger));
  if (!network || !parser) return fail("could not create the network or the ONNX parser");
  if (!parser->parseFromFile(argv[1], static_cast<int>(nvinfer1::ILogger::Severity::kWARNING))) {
    for (int32_t i = 0; i < parser->getNbErrors(); ++i)
      std::fprintf(stderr, "etrt_llm_build_plan: ONNX parser: %s\n", parser->getError(i)->desc());
    return fail("the ONNX parser refused the model");
  }
  std::unique_ptr<nvinfer1::IBuilderConfig> config(builder->createBuilderConfig());
  config->setFlag(nvinfer1::BuilderFlag::kFP16);
  config->setTacticSources(0);
  const char* keep = std::getenv("ETRT_LLM_KEEP_FP32");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) {
    config->setFlag(nvinfer1::BuilderFlag::kPREFER_PRECISION_CONSTRAINTS);
    int32_t held = 0;
    for (int32_t i = 0; i < network->getNbLayers(); ++i) {
      nvinfer1::ILayer* layer = network->getLayer(i);
      if (layer->getNbOutputs() == 1 && layer->getOutput(0)->getType() == nvinfer1::DataType::kFLOAT) {
        layer->setPrecision(nvinfer1::DataType::kFLOAT);
        ++held;
      }
    }
    std::printf("etrt_llm_build_plan: %d layers held to float32\n", held);
  }
  const char* sharing = std::getenv("ETRT_LLM_PROFILE_SHARING");
  if (sharing != nullptr && std::strcmp(sharing, "1") == 0) {
#if NV_TENSORRT_MAJOR < 10
    config->setPreviewFeature(nvinfer1::PreviewFeature::kPROFILE_SHARING_0806, true);
#endif  // from 10.0 on, every plan shares its profiles
    std::printf("etrt_llm_build_plan: profile sharing across contexts on\n");
  }
  const bool profiles = split ? add_profile(*builder, *config, 1, 1, 1) && add_profile(*builder, *config, 32, opt, max_seq)
                              : add_profile(*builder, *config, 1, opt, max_seq);
  if (!profiles) return fail("could not add the optimization profiles");
  std::unique_ptr<nvinfer1::IHostMemory> plan(builder->buildSerializedNetwork(*network, *config));
  if (!plan || plan->size() == 0) return fail("the builder failed (see TensorRT's messages above)");
  std::ofstream out(argv[2], std::ios::binary);
  out.write(static_cast<const char*>(plan->data()), static_cast<std::streamsize>(plan->size()));
  if (!out) return fail("could not write the plan");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("etrt_llm_build_plan: %s: %s plan, %d layers in the network, %.1f MiB, built in %.0f s\n", argv[2],
              split ? "decode + prefill" : "one wide profile", network->getNbLayers(),
              static_cast<double>(plan->size()) / (1 << 20), seconds);
  return 0;
}
