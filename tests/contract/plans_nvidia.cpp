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
#include <string>
#include <utility>
#include <vector>

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

// 0, 1, .., n - 1.
std::vector<int32_t> iota(int64_t n) {
  std::vector<int32_t> values(static_cast<size_t>(n));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i);
  return values;
}

// Adds layers to `network` for the model descriptions' ops, keeping the weights it makes up (TensorRT reads them
// until the build ends).
class Layers {
 public:
  explicit Layers(nvinfer1::INetworkDefinition& network) : network_(network) {}

  // `values` reshaped to `rank` by leading 1s (TensorRT's elementwise and matrix layers broadcast over equal ranks);
  // they must outlive the build.
  nvinfer1::ITensor* constant(const std::vector<int64_t>& shape, const std::vector<float>& values, int32_t rank) {
    std::vector<int64_t> dims(static_cast<size_t>(rank) - shape.size(), 1);
    dims.insert(dims.end(), shape.begin(), shape.end());
    nvinfer1::Weights w{nvinfer1::DataType::kFLOAT, values.data(), static_cast<int64_t>(values.size())};
    return network_.addConstant(to_dims(dims), w)->getOutput(0);
  }
  // One float of `rank` 1s.
  nvinfer1::ITensor* scalar(float value, int32_t rank) { return constant({1}, floats_.emplace_back(1, value), rank); }
  nvinfer1::ITensor* ints(const std::vector<int64_t>& shape, std::vector<int32_t> values) {
    const std::vector<int32_t>& kept = ints_.emplace_back(std::move(values));
    nvinfer1::Weights w{nvinfer1::DataType::kINT32, kept.data(), static_cast<int64_t>(kept.size())};
    return network_.addConstant(to_dims(shape), w)->getOutput(0);
  }
  nvinfer1::ITensor* elementwise(nvinfer1::ITensor& a, nvinfer1::ITensor& b, nvinfer1::ElementWiseOperation op) {
    return network_.addElementWise(a, b, op)->getOutput(0);
  }
  nvinfer1::ITensor* matmul(nvinfer1::ITensor& a, nvinfer1::ITensor& b, bool transpose_b = false) {
    return network_
        .addMatrixMultiply(a, nvinfer1::MatrixOperation::kNONE, b,
                           transpose_b ? nvinfer1::MatrixOperation::kTRANSPOSE : nvinfer1::MatrixOperation::kNONE)
        ->getOutput(0);
  }

  // [B, S, 1] int32: positions[b] + s for each row s of `rows` [B, S, ...], S <= `limit`. S is known at run time
  // only, so 0 .. S - 1 is the first S of a constant 0 .. limit - 1, sliced to [1, S, 1] by rows' shape.
  nvinfer1::ITensor* row_positions(nvinfer1::ITensor& positions, nvinfer1::ITensor& rows, int64_t limit) {
    using Op = nvinfer1::ElementWiseOperation;
    nvinfer1::ITensor* shape = network_.addShape(rows)->getOutput(0);  // [B, S, D]
    nvinfer1::ITensor* size =
        elementwise(*elementwise(*shape, *ints({3}, {0, 1, 0}), Op::kPROD), *ints({3}, {1, 0, 1}), Op::kSUM);
    nvinfer1::ISliceLayer* first = network_.addSlice(*ints({1, limit, 1}, iota(limit)), to_dims({0, 0, 0}),
                                                     to_dims({1, 1, 1}), to_dims({1, 1, 1}));
    first->setInput(2, *size);
    nvinfer1::IShuffleLayer* start = network_.addShuffle(positions);  // [B] -> [B, 1, 1]
    start->setReshapeDimensions(to_dims({-1, 1, 1}));
    return elementwise(*first->getOutput(0), *start->getOutput(0), Op::kSUM);
  }

  // The cache [B, T, D] with rows positions[b] .. + S - 1 replaced by `update` [B, S, D], as a new tensor: 8.6 has
  // no IKVCacheUpdateLayer. A scatter along T, every element of an update row to that row.
  nvinfer1::ITensor* cache_write(nvinfer1::ITensor& cache, nvinfer1::ITensor& update, nvinfer1::ITensor& positions) {
    const nvinfer1::Dims dims = cache.getDimensions();
    nvinfer1::ITensor* rows = row_positions(positions, update, dims.d[1]);
    nvinfer1::ITensor* indices =
        elementwise(*rows, *ints({1, 1, dims.d[2]}, std::vector<int32_t>(static_cast<size_t>(dims.d[2]))),
                    nvinfer1::ElementWiseOperation::kSUM);  // [B, S, D]
    nvinfer1::IScatterLayer* scatter = network_.addScatter(cache, *indices, update, nvinfer1::ScatterMode::kELEMENT);
    scatter->setAxis(1);
    return scatter->getOutput(0);
  }

  // softmax(scale * q k^T, keys past each query's position hidden) v, for q [B, S, D] at positions[b] + s and
  // k, v [B, T, D].
  nvinfer1::ITensor* causal_attention(nvinfer1::ITensor& q, nvinfer1::ITensor& k, nvinfer1::ITensor& v,
                                      nvinfer1::ITensor& positions, float scale) {
    using Op = nvinfer1::ElementWiseOperation;
    const int64_t keys = k.getDimensions().d[1];
    nvinfer1::ITensor* scores = elementwise(*matmul(q, k, /*transpose_b=*/true), *scalar(scale, 3), Op::kPROD);
    nvinfer1::ITensor* hidden =  // [B, S, T] bool: the key lies past the query's position
        elementwise(*row_positions(positions, q, keys), *ints({1, 1, keys}, iota(keys)), Op::kLESS);
    // A large negative score rather than -inf: exp gives 0 either way, and no inf - inf can make a NaN.
    nvinfer1::ITensor* masked = network_.addSelect(*hidden, *scalar(-1e30f, 3), *scores)->getOutput(0);
    nvinfer1::ISoftMaxLayer* softmax = network_.addSoftMax(*masked);
    softmax->setAxes(1U << 2);
    return matmul(*softmax->getOutput(0), v);
  }

 private:
  nvinfer1::INetworkDefinition& network_;
  std::deque<std::vector<float>> floats_;
  std::deque<std::vector<int32_t>> ints_;
};

}  // namespace

std::string implementation() {
  return "NVIDIA TensorRT " + std::to_string(NV_TENSORRT_MAJOR) + "." + std::to_string(NV_TENSORRT_MINOR) + "." +
         std::to_string(NV_TENSORRT_PATCH);
}
bool is_nvidia() { return true; }
bool shares_profiles(const ModelSpec& model) { return NV_TENSORRT_MAJOR >= 10 || model.profile_sharing_0806; }

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
#if NV_TENSORRT_MAJOR < 10
  // Deprecated from 10.0 on, where sharing is always on.
  if (model.profile_sharing_0806) config->setPreviewFeature(nvinfer1::PreviewFeature::kPROFILE_SHARING_0806, true);
#endif

  std::map<std::string, nvinfer1::ITensor*> tensors;
  for (const TensorSpec& t : model.inputs)
    tensors[t.name] = network->addInput(t.name.c_str(), to_trt(t.dtype), to_dims(t.shape));
  std::map<std::string, const ConstantSpec*> constants;
  for (const ConstantSpec& c : model.constants) constants[c.name] = &c;
  Layers layers(*network);
  for (const OpSpec& op : model.ops) {
    nvinfer1::ITensor* a = tensors.at(op.a);
    const int32_t rank = a->getDimensions().nbDims;
    nvinfer1::ITensor* out = nullptr;
    switch (op.kind) {
      case OpKind::kEmbedding: {
        const ConstantSpec& table = *constants.at(op.b);
        out = network->addGather(*layers.constant(table.shape, table.values, 2), *a, 0)->getOutput(0);
        break;
      }
      case OpKind::kMatMul: {
        const ConstantSpec& w = *constants.at(op.b);
        out = layers.matmul(*a, *layers.constant(w.shape, w.values, rank));
        break;
      }
      case OpKind::kScale:
        out = layers.elementwise(*a, *layers.scalar(op.factor, rank), nvinfer1::ElementWiseOperation::kPROD);
        break;
      case OpKind::kAdd:
        out = layers.elementwise(*a, *tensors.at(op.b), nvinfer1::ElementWiseOperation::kSUM);
        break;
      case OpKind::kCacheWrite:
        out = layers.cache_write(*a, *tensors.at(op.b), *tensors.at(op.positions));
        break;
      case OpKind::kCausalAttention:
        out = layers.causal_attention(*a, *tensors.at(op.b), *tensors.at(op.c), *tensors.at(op.positions), op.factor);
        break;
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
