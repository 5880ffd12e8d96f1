// The NvInfer contract suite's NVIDIA side: plans built by NVIDIA's TensorRT builder (INetworkDefinition) from the
// same model descriptions as the GPU-free side, device memory, and one CUDA stream. Needs a GPU: building a plan
// runs TensorRT's tactic selection on the current device.

#include <NvInfer.h>
#include <NvInferVersion.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>

#include "plans.h"

namespace etrt::contract {
namespace {

class BuildLogger final : public nvinfer1::ILogger {
 public:
  void log(Severity severity, const char* msg) noexcept override {
    if (severity <= Severity::kWARNING) std::fprintf(stderr, "[TensorRT builder] %s\n", msg);
    if (severity <= Severity::kERROR) last_error = msg != nullptr ? msg : "";
  }
  std::string last_error;
};

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "contract suite: %s: %s\n", what, cudaGetErrorString(status));
  std::abort();
}

nvinfer1::Dims to_dims(const std::vector<int64_t>& shape) {
  nvinfer1::Dims d{};
  d.nbDims = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.d[i] = static_cast<decltype(d.d[0] + 0)>(shape[i]);
  return d;
}

nvinfer1::DataType to_trt(DataType t) {
  switch (t) {
    case DataType::kInt32: return nvinfer1::DataType::kINT32;
    case DataType::kFloat16: return nvinfer1::DataType::kHALF;
    default: return nvinfer1::DataType::kFLOAT;
  }
}

// `values` reshaped to `rank` by leading 1s (TensorRT's elementwise and matrix layers broadcast over equal ranks).
nvinfer1::ITensor* constant(nvinfer1::INetworkDefinition& network, const std::vector<int64_t>& shape,
                            const std::vector<float>& values, int32_t rank) {
  std::vector<int64_t> dims(static_cast<size_t>(rank) - shape.size(), 1);
  dims.insert(dims.end(), shape.begin(), shape.end());
  nvinfer1::Weights w{nvinfer1::DataType::kFLOAT, values.data(), static_cast<int64_t>(values.size())};
  return network.addConstant(to_dims(dims), w)->getOutput(0);
}

}  // namespace

std::string implementation() {
  return "NVIDIA TensorRT " + std::to_string(NV_TENSORRT_MAJOR) + "." + std::to_string(NV_TENSORRT_MINOR) + "." +
         std::to_string(NV_TENSORRT_PATCH);
}
bool is_nvidia() { return true; }

std::vector<uint8_t> build_plan(const ModelSpec& model, std::string* error) {
  BuildLogger logger;
  std::unique_ptr<nvinfer1::IBuilder> builder(nvinfer1::createInferBuilder(logger));
  if (builder == nullptr) return *error = "createInferBuilder failed: " + logger.last_error, std::vector<uint8_t>{};
#if NV_TENSORRT_MAJOR < 10
  const uint32_t flags = 1U << static_cast<uint32_t>(nvinfer1::NetworkDefinitionCreationFlag::kEXPLICIT_BATCH);
#else
  const uint32_t flags = 0;  // explicit batch is the only mode from 10.0 on
#endif
  std::unique_ptr<nvinfer1::INetworkDefinition> network(builder->createNetworkV2(flags));
  std::unique_ptr<nvinfer1::IBuilderConfig> config(builder->createBuilderConfig());
  // No cuBLAS/cuDNN (TensorRT's own kernels only) and no TF32, so float results match the CPU reference closely.
  config->setTacticSources(0);
  config->clearFlag(nvinfer1::BuilderFlag::kTF32);

  std::map<std::string, nvinfer1::ITensor*> tensors;
  std::deque<std::vector<float>> factors;  // weights TensorRT reads until the build ends
  for (const TensorSpec& t : model.inputs) tensors[t.name] = network->addInput(t.name.c_str(), to_trt(t.dtype), to_dims(t.shape));
  std::map<std::string, const ConstantSpec*> constants;
  for (const ConstantSpec& c : model.constants) constants[c.name] = &c;
  for (const OpSpec& op : model.ops) {
    nvinfer1::ITensor* a = tensors.at(op.a);
    const int32_t rank = a->getDimensions().nbDims;
    nvinfer1::ITensor* out = nullptr;
    switch (op.kind) {
      case OpKind::kEmbedding: {
        const ConstantSpec& table = *constants.at(op.b);
        out = network->addGather(*constant(*network, table.shape, table.values, 2), *a, 0)->getOutput(0);
        break;
      }
      case OpKind::kMatMul: {
        const ConstantSpec& w = *constants.at(op.b);
        out = network
                  ->addMatrixMultiply(*a, nvinfer1::MatrixOperation::kNONE, *constant(*network, w.shape, w.values, rank),
                                      nvinfer1::MatrixOperation::kNONE)
                  ->getOutput(0);
        break;
      }
      case OpKind::kScale: {
        factors.push_back({op.factor});
        out = network
                  ->addElementWise(*a, *constant(*network, {1}, factors.back(), rank),
                                   nvinfer1::ElementWiseOperation::kPROD)
                  ->getOutput(0);
        break;
      }
    }
    tensors[op.out] = out;
  }
  for (const TensorSpec& t : model.outputs) {
    nvinfer1::ITensor* out = tensors.at(t.name);
    out->setName(t.name.c_str());
    network->markOutput(*out);
  }
  for (const std::vector<Bounds>& bounds : model.profiles) {
    nvinfer1::IOptimizationProfile* profile = builder->createOptimizationProfile();
    for (size_t i = 0; i < bounds.size(); ++i) {
      const char* name = model.inputs[i].name.c_str();
      profile->setDimensions(name, nvinfer1::OptProfileSelector::kMIN, to_dims(bounds[i].min));
      profile->setDimensions(name, nvinfer1::OptProfileSelector::kOPT, to_dims(bounds[i].opt));
      profile->setDimensions(name, nvinfer1::OptProfileSelector::kMAX, to_dims(bounds[i].max));
    }
    config->addOptimizationProfile(profile);
  }
  std::unique_ptr<nvinfer1::IHostMemory> plan(builder->buildSerializedNetwork(*network, *config));
  if (plan == nullptr || plan->size() == 0) {
    *error = "buildSerializedNetwork(" + model.label + ") failed: " + logger.last_error;
    return {};
  }
  const auto* bytes = static_cast<const uint8_t*>(plan->data());
  return std::vector<uint8_t>(bytes, bytes + plan->size());
}

Memory::Memory(size_t bytes) : size_(bytes) { check_cuda(cudaMalloc(&data_, bytes > 0 ? bytes : 256), "cudaMalloc"); }
Memory::~Memory() { (void)cudaFree(data_); }
void Memory::upload(const void* host, size_t bytes) {
  check_cuda(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}
void Memory::download(void* host, size_t bytes) const {
  synchronize();
  check_cuda(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}

engine::StreamHandle stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreate");
    return created;
  }();
  return s;
}
void synchronize() { check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())), "cudaStreamSynchronize"); }

}  // namespace etrt::contract
