// The TensorRT adapter: the engine seam (engine.h) over NvInfer, the one path
// by which etrt drives engines. Built against NVIDIA's TensorRT or against the
// project's GPU-free NvInfer implementation (nvinfer/), from this same source;
// the only difference is ETRT_NVINFER_GPU_FREE's one question below (whether
// an engine runs on the host). Each method is a thin translation: an IO index
// becomes the tensor name NvInfer wants, a Shape becomes Dims, and a failed
// call leaves "<the NvInfer call>: <TensorRT's own reason>" in last_error().
// The policy (which profile, whether a shape fits) lives in the backend and
// the profile core, where the CPU tests reach it; nothing here decides.
//
// Only calls present in both TensorRT 10.x (>= 10.1) and 11.x are used; 11.0
// removed createExecutionContextWithoutDeviceMemory, getDeviceMemorySize(ForProfile)
// and allInputShapesSpecified, so user-managed memory goes through
// createExecutionContext(kUSER_MANAGED), getDeviceMemorySizeV2 and
// setDeviceMemoryV2 (all new in 10.1).

#include "engine/tensorrt/tensorrt_engine.h"

#include "common/shape_text.h"
#include "common/utf8.h"

#include <NvInferRuntime.h>
#include <NvInferVersion.h>
#if ETRT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include <atomic>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#if NV_TENSORRT_MAJOR < 10 || (NV_TENSORRT_MAJOR == 10 && NV_TENSORRT_MINOR < 1)
#error "etrt's TensorRT adapter needs TensorRT 10.1 or newer (getDeviceMemorySizeV2, setDeviceMemoryV2)."
#endif

namespace etrt::engine::tensorrt {
namespace {

// What the translations below assume of NvInfer's types; -Wconversion alone
// would not notice a size_t turning into int64_t.
static_assert(nvinfer1::Dims::MAX_DIMS == kMaxRank, "etrt::Shape must hold exactly what nvinfer1::Dims holds");
static_assert(std::is_same<nvinfer1::Dims, nvinfer1::Dims64>::value, "nvinfer1::Dims must be Dims64 (int64_t dims)");
static_assert(std::is_same<decltype(std::declval<nvinfer1::ICudaEngine&>().getDeviceMemorySizeV2()), int64_t>::value,
              "getDeviceMemorySizeV2 must return int64_t");

// ---- text for error messages (failure paths only; these allocate) ----------

std::string trt_type_name(nvinfer1::DataType t) {
  // Cases by value past kINT4, so the enumerators 10.1's header lacks (kFP4 and
  // kE8M0 arrived later) need not be named.
  switch (t) {
    case nvinfer1::DataType::kFLOAT: return "FLOAT";
    case nvinfer1::DataType::kHALF: return "HALF";
    case nvinfer1::DataType::kBF16: return "BF16";
    case nvinfer1::DataType::kINT8: return "INT8";
    case nvinfer1::DataType::kUINT8: return "UINT8";
    case nvinfer1::DataType::kINT32: return "INT32";
    case nvinfer1::DataType::kINT64: return "INT64";
    case nvinfer1::DataType::kBOOL: return "BOOL";
    case nvinfer1::DataType::kFP8: return "FP8";
    case nvinfer1::DataType::kINT4: return "INT4";
    default: break;
  }
  const int32_t value = static_cast<int32_t>(t);
  if (value == 10) return "FP4";
  if (value == 11) return "E8M0";
  return "nvinfer1::DataType " + std::to_string(value);
}

bool to_etrt_type(nvinfer1::DataType t, DataType* out) {
  switch (t) {
    case nvinfer1::DataType::kFLOAT: *out = DataType::kFloat32; return true;
    case nvinfer1::DataType::kHALF: *out = DataType::kFloat16; return true;
    case nvinfer1::DataType::kBF16: *out = DataType::kBFloat16; return true;
    case nvinfer1::DataType::kINT8: *out = DataType::kInt8; return true;
    case nvinfer1::DataType::kUINT8: *out = DataType::kUInt8; return true;
    case nvinfer1::DataType::kINT32: *out = DataType::kInt32; return true;
    case nvinfer1::DataType::kINT64: *out = DataType::kInt64; return true;
    case nvinfer1::DataType::kBOOL: *out = DataType::kBool; return true;
    default: return false;
  }
}

Shape to_shape(const nvinfer1::Dims& d) {
  Shape s;
  s.rank = d.nbDims;
  for (int32_t i = 0; i < d.nbDims; ++i) s.d[i] = d.d[i];
  return s;
}

// ---- where TensorRT's reasons go ---------------------------------------------

// The latest error one TensorRT channel reported. TensorRT may report from any
// thread, so writers lock; a caller takes a mark() before an NvInfer call (one
// atomic load, so the execute path stays cheap) and, only if the call failed,
// asks since(mark) for what TensorRT said in between.
class LastMessage {
 public:
  void set(const char* text) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.assign(text != nullptr ? text : "");
    count_.fetch_add(1, std::memory_order_release);
  }
  uint64_t mark() const { return count_.load(std::memory_order_acquire); }
  std::string since(uint64_t mark) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_.load(std::memory_order_relaxed) == mark) return "TensorRT gave no reason";
    return text_;
  }
  // For getErrorDesc(), which only etrt would call: valid until the next report.
  const char* text() const { return text_.c_str(); }

 private:
  mutable std::mutex mutex_;
  std::string text_;
  std::atomic<uint64_t> count_{0};
};

// One logger per engine: TensorRT uses the logger a runtime was created with
// for everything created through that runtime, and etrt creates one runtime per
// engine, so an engine's errors are its own. Errors are kept for last_error()
// (the backend logs them with the delegate's name); warnings, which no call's
// result carries, go to stderr.
class Logger final : public nvinfer1::ILogger {
 public:
  void log(Severity severity, const char* msg) noexcept override {
    if (severity == Severity::kINTERNAL_ERROR || severity == Severity::kERROR) {
      errors_.set(msg);
    } else if (severity == Severity::kWARNING) {
      std::fprintf(stderr, "[etrt] TensorRT warning: %s\n", msg != nullptr ? msg : "");
    }
  }
  const LastMessage& errors() const { return errors_; }

 private:
  LastMessage errors_;
};

// One recorder per context, so a failed context call is explained by what that
// context reported. It stores one error, the latest (we are its only reader).
class ErrorRecorder final : public nvinfer1::IErrorRecorder {
 public:
  int32_t getNbErrors() const noexcept override { return reported_.load() > 0 ? 1 : 0; }
  nvinfer1::ErrorCode getErrorCode(int32_t index) const noexcept override {
    return index == 0 && reported_.load() > 0 ? code_.load() : nvinfer1::ErrorCode::kUNSPECIFIED_ERROR;
  }
  ErrorDesc getErrorDesc(int32_t index) const noexcept override {
    return index == 0 && reported_.load() > 0 ? last_.text() : "";
  }
  bool hasOverflowed() const noexcept override { return reported_.load() > 1; }
  void clear() noexcept override { reported_.store(0); }
  bool reportError(nvinfer1::ErrorCode code, ErrorDesc desc) noexcept override {
    code_.store(code);
    last_.set(desc);
    reported_.fetch_add(1);
    return false;  // not fatal: the failing NvInfer call returns its own failure
  }
  RefCount incRefCount() noexcept override { return ++refs_; }
  RefCount decRefCount() noexcept override { return --refs_; }

  const LastMessage& errors() const { return last_; }
  nvinfer1::ErrorCode last_code() const { return code_.load(); }

 private:
  LastMessage last_;
  std::atomic<nvinfer1::ErrorCode> code_{nvinfer1::ErrorCode::kSUCCESS};
  std::atomic<int32_t> reported_{0};
  std::atomic<RefCount> refs_{0};
};

// ---- the engine's state, shared with its contexts ------------------------------

// Members are destroyed in reverse order, which is TensorRT's order: the
// engine before the runtime, the runtime before the logger it was given.
// Contexts hold a shared_ptr to this, so they always go before the engine.
struct Loaded {
  int64_t device_id = -1;
  MemoryKind memory_kind = MemoryKind::kDevice;
  int32_t num_profiles = 0;
  Logger logger;
  std::unique_ptr<nvinfer1::IRuntime> runtime;
  std::unique_ptr<nvinfer1::ICudaEngine> engine;
  std::vector<TensorDesc> io;  // engine order; io[i].name.c_str() is the name NvInfer gets, copied once
};

// getAliasedInputTensor and IKVCacheUpdateLayer first appear in TensorRT 10.15; engines of older versions have no
// aliased outputs.
#if NV_TENSORRT_MAJOR > 10 || (NV_TENSORRT_MAJOR == 10 && NV_TENSORRT_MINOR >= 15)
#define ETRT_TENSORRT_HAS_ALIASES 1
#else
#define ETRT_TENSORRT_HAS_ALIASES 0
#endif

// Fills each output's aliased_input from the engine's own alias table.
bool describe_aliases(nvinfer1::ICudaEngine& engine, std::vector<TensorDesc>* io, std::string* error) {
#if ETRT_TENSORRT_HAS_ALIASES
  std::unordered_map<std::string_view, int32_t> inputs;  // by name: linear in the number of IO tensors
  for (size_t i = 0; i < io->size(); ++i)
    if ((*io)[i].is_input) inputs.emplace((*io)[i].name, static_cast<int32_t>(i));
  for (TensorDesc& desc : *io) {
    if (desc.is_input) continue;
    const char* input = engine.getAliasedInputTensor(desc.name.c_str());
    if (input == nullptr) continue;
    const auto found = inputs.find(input);
    if (found != inputs.end()) desc.aliased_input = found->second;
    if (desc.aliased_input < 0) {
      *error = "engine output '" + desc.display_name + "' aliases '" + escape_name(input) +
               "' (getAliasedInputTensor), which is not an input of the engine";
      return false;
    }
  }
#else
  (void)engine;
  (void)io;
  (void)error;
#endif
  return true;
}

bool describe_io(nvinfer1::ICudaEngine& engine, std::vector<TensorDesc>* io, std::string* error) {
  const int32_t count = engine.getNbIOTensors();
  const int32_t profiles = engine.getNbOptimizationProfiles();
  io->resize(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    TensorDesc& desc = (*io)[static_cast<size_t>(i)];
    const char* name = engine.getIOTensorName(i);
    if (name == nullptr) {
      *error = "engine IO tensor " + std::to_string(i) + " of " + std::to_string(count) + " has no name";
      return false;
    }
    desc.name = name;
    desc.display_name = escape_name(desc.name);
    const std::string where = "engine IO tensor " + std::to_string(i) + " '" + desc.display_name + "'";

    const nvinfer1::TensorIOMode mode = engine.getTensorIOMode(name);
    if (mode == nvinfer1::TensorIOMode::kNONE) {
      *error = where + " is neither an input nor an output (getTensorIOMode returned kNONE)";
      return false;
    }
    desc.is_input = mode == nvinfer1::TensorIOMode::kINPUT;

    const nvinfer1::DataType type = engine.getTensorDataType(name);
    if (!to_etrt_type(type, &desc.dtype)) {
      *error = where + " has element type " + trt_type_name(type) +
               ", which etrt cannot bind (it binds FLOAT, HALF, BF16, INT8, UINT8, INT32, INT64 and BOOL); rebuild "
               "the engine with a supported type at the network boundary, e.g. cast to HALF before the output";
      return false;
    }

    const nvinfer1::Dims dims = engine.getTensorShape(name);
    if (dims.nbDims < 0 || dims.nbDims > kMaxRank) {
      *error = where + " has no usable shape (getTensorShape returned rank " + std::to_string(dims.nbDims) + ")";
      return false;
    }
    desc.shape = to_shape(dims);
    desc.is_shape_tensor = engine.isShapeInferenceIO(name);

    // etrt binds every tensor to device memory (staging host tensors itself); a tensor TensorRT expects in host
    // memory would be read from the wrong address space. Shape tensors are refused by the backend, with its own words.
    if (!desc.is_shape_tensor && engine.getTensorLocation(name) == nvinfer1::TensorLocation::kHOST) {
      *error = where + " is placed on the host by TensorRT (getTensorLocation returned kHOST) and is not a shape "
               "tensor; etrt binds device memory only: rebuild the engine so this tensor stays on the device "
               "(e.g. make it a regular tensor input instead of a host-computed one)";
      return false;
    }

    // etrt hands TensorRT dense row-major buffers; a vectorized layout (kHWC8,
    // kCHW32, ...) would read them wrongly, so refuse it here rather than at run.
    for (int32_t p = 0; p < profiles && !desc.is_shape_tensor; ++p) {
      if (engine.getTensorFormat(name, p) != nvinfer1::TensorFormat::kLINEAR) {
        const char* format = engine.getTensorFormatDesc(name, p);
        *error = where + " uses a non-linear layout under profile " + std::to_string(p) + " (" +
                 (format != nullptr ? format : "unknown") +
                 "); etrt binds dense row-major tensors only: build the engine with kLINEAR IO formats "
                 "(the default; drop BuilderConfig/ITensor::setAllowedFormats for IO tensors)";
        return false;
      }
    }
  }
  return true;
}

// ---- ExecutionContext -------------------------------------------------------------

class TensorRTContext final : public ExecutionContext {
 public:
  explicit TensorRTContext(std::shared_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}

  // Creates the NvInfer context. Errors during creation go to the engine's
  // logger; from here on they go to this context's recorder.
  bool create(bool user_managed_memory) {
    user_managed_ = user_managed_memory;
    context_.reset(loaded_->engine->createExecutionContext(
        user_managed_memory ? nvinfer1::ExecutionContextAllocationStrategy::kUSER_MANAGED
                            : nvinfer1::ExecutionContextAllocationStrategy::kSTATIC));
    if (context_ == nullptr) return false;
    context_->setErrorRecorder(&recorder_);
    return true;
  }

  int32_t optimization_profile() const override { return context_->getOptimizationProfile(); }

  bool set_optimization_profile(int32_t profile, StreamHandle stream) override {
    const int32_t count = loaded_->num_profiles;
    if (profile < 0 || profile >= count) {
      error_ = "profile " + std::to_string(profile) + " does not exist; the engine has " + std::to_string(count) +
               " (0.." + std::to_string(count - 1) + ")";
      return false;
    }
    const uint64_t mark = recorder_.errors().mark();
    if (context_->setOptimizationProfileAsync(profile, static_cast<cudaStream_t>(stream))) return true;
    return fail(mark, "setOptimizationProfileAsync(" + std::to_string(profile) + ") failed");
  }

  bool set_input_shape(int32_t io_index, const Shape& shape) override {
    if (!check_input(io_index)) return false;
    if (shape.rank < 0 || shape.rank > kMaxRank) {
      error_ = "input '" + name_of(io_index) + "': rank " + std::to_string(shape.rank) + " is outside 0.." +
               std::to_string(kMaxRank);
      return false;
    }
    nvinfer1::Dims dims{};
    dims.nbDims = shape.rank;
    for (int32_t i = 0; i < shape.rank; ++i) dims.d[i] = shape.d[i];
    const uint64_t mark = recorder_.errors().mark();
    if (context_->setInputShape(name(io_index), dims)) return true;
    return fail(mark, "setInputShape('" + name_of(io_index) + "', " + shape_text(shape) + ") under profile " +
                          std::to_string(context_->getOptimizationProfile()) + " failed");
  }

  bool tensor_shape(int32_t io_index, Shape* out) const override {
    if (!check_index(io_index)) return false;
    const uint64_t mark = recorder_.errors().mark();
    const nvinfer1::Dims dims = context_->getTensorShape(name(io_index));
    if (dims.nbDims < 0 || dims.nbDims > kMaxRank) {
      return fail(mark, "getTensorShape('" + name_of(io_index) + "') returned rank " + std::to_string(dims.nbDims));
    }
    *out = to_shape(dims);
    return true;
  }

  bool set_tensor_address(int32_t io_index, void* address) override {
    if (!check_index(io_index)) return false;
    const uint64_t mark = recorder_.errors().mark();
    if (context_->setTensorAddress(name(io_index), address)) return true;
    return fail(mark, "setTensorAddress('" + name_of(io_index) + "') failed");
  }

  bool set_device_memory(void* memory, size_t size) override {
    if (!user_managed_) {
      error_ =
          "set_device_memory on a context TensorRT allocates for itself; create it with "
          "ContextOptions::user_managed_memory = true to supply its memory";
      return false;
    }
    const int64_t needed = loaded_->engine->getDeviceMemorySizeV2();
    const int64_t given = size > static_cast<size_t>(std::numeric_limits<int64_t>::max())
                              ? std::numeric_limits<int64_t>::max()
                              : static_cast<int64_t>(size);
    if (given < needed || (memory == nullptr && needed > 0)) {
      error_ = "scratch memory of " + std::to_string(size) + " bytes at " +
               (memory != nullptr ? "a device address" : "nullptr") + " is not enough: the engine needs " +
               std::to_string(needed) + " bytes (getDeviceMemorySizeV2)";
      return false;
    }
    const uint64_t mark = recorder_.errors().mark();
    context_->setDeviceMemoryV2(memory, given);  // returns nothing; a problem reaches the recorder
    if (recorder_.errors().mark() != mark)
      return fail(mark, "setDeviceMemoryV2(" + std::to_string(size) + " bytes) failed");
    memory_set_ = true;
    return true;
  }

  bool enqueue(StreamHandle stream) override {
    if (user_managed_ && !memory_set_) {
      error_ = "enqueue before set_device_memory on a context created with user-managed memory";
      return false;
    }
    const uint64_t mark = recorder_.errors().mark();
    bad_input_ = false;
    if (context_->enqueueV3(static_cast<cudaStream_t>(stream))) return true;
    bad_input_ = recorder_.errors().mark() != mark && recorder_.last_code() == nvinfer1::ErrorCode::kINVALID_ARGUMENT;
    return fail(mark, "enqueueV3 under profile " + std::to_string(context_->getOptimizationProfile()) + " failed");
  }

  const char* last_error() const override { return error_.c_str(); }
  bool last_error_is_bad_input() const override { return bad_input_; }

 private:
  const char* name(int32_t io_index) const { return loaded_->io[static_cast<size_t>(io_index)].name.c_str(); }
  // The name as messages quote it.
  const std::string& name_of(int32_t io_index) const { return loaded_->io[static_cast<size_t>(io_index)].display_name; }

  bool check_index(int32_t io_index) const {
    const int32_t count = static_cast<int32_t>(loaded_->io.size());
    if (io_index >= 0 && io_index < count) return true;
    error_ = "IO index " + std::to_string(io_index) + " is outside 0.." + std::to_string(count - 1);
    return false;
  }
  bool check_input(int32_t io_index) const {
    if (!check_index(io_index)) return false;
    if (loaded_->io[static_cast<size_t>(io_index)].is_input) return true;
    error_ = "IO tensor " + std::to_string(io_index) + " '" + name_of(io_index) + "' is an output, not an input";
    return false;
  }

  bool fail(uint64_t mark, const std::string& what) const {
    error_ = what + ": " + recorder_.errors().since(mark);
    return false;
  }

  // Declaration order is destruction order, reversed: the NvInfer context goes
  // first, then the recorder it holds a reference to, then the engine state.
  std::shared_ptr<Loaded> loaded_;
  ErrorRecorder recorder_;
  std::unique_ptr<nvinfer1::IExecutionContext> context_;
  bool user_managed_ = false;
  bool memory_set_ = false;
  bool bad_input_ = false;
  mutable std::string error_;
};

// ---- Engine -------------------------------------------------------------------

class TensorRTEngine final : public Engine {
 public:
  explicit TensorRTEngine(std::shared_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}

  int32_t num_io_tensors() const override { return static_cast<int32_t>(loaded_->io.size()); }
  const TensorDesc& io_tensor(int32_t io_index) const override { return loaded_->io[static_cast<size_t>(io_index)]; }

  int32_t num_profiles() const override { return loaded_->num_profiles; }

  bool profile_shape(int32_t profile, int32_t io_index, Shape* min, Shape* opt, Shape* max) const override {
    const int32_t count = num_io_tensors();
    if (io_index < 0 || io_index >= count || !loaded_->io[static_cast<size_t>(io_index)].is_input) {
      error_ = "profile_shape: IO index " + std::to_string(io_index) + " is not an input of this engine";
      return false;
    }
    const int32_t profiles = num_profiles();
    if (profile < 0 || profile >= profiles) {
      error_ = "profile_shape: profile " + std::to_string(profile) + " does not exist; the engine has " +
               std::to_string(profiles);
      return false;
    }
    const TensorDesc& desc = loaded_->io[static_cast<size_t>(io_index)];
    const uint64_t mark = loaded_->logger.errors().mark();
    const nvinfer1::OptProfileSelector selectors[3] = {
        nvinfer1::OptProfileSelector::kMIN, nvinfer1::OptProfileSelector::kOPT, nvinfer1::OptProfileSelector::kMAX};
    Shape* outs[3] = {min, opt, max};
    for (int k = 0; k < 3; ++k) {
      const nvinfer1::Dims dims = loaded_->engine->getProfileShape(desc.name.c_str(), profile, selectors[k]);
      if (dims.nbDims < 0 || dims.nbDims > kMaxRank) {
        error_ = "getProfileShape('" + desc.display_name + "', " + std::to_string(profile) + ") returned rank " +
                 std::to_string(dims.nbDims) + ": " + loaded_->logger.errors().since(mark);
        return false;
      }
      if (outs[k] != nullptr) *outs[k] = to_shape(dims);
    }
    return true;
  }

  MemoryKind memory_kind() const override { return loaded_->memory_kind; }

  size_t device_memory_size() const override {
    const int64_t size = loaded_->engine->getDeviceMemorySizeV2();
    return size > 0 ? static_cast<size_t>(size) : 0;
  }

  int64_t streamable_weights_size() const override { return loaded_->engine->getStreamableWeightsSize(); }
  int64_t weight_streaming_automatic_budget() const override {
    return loaded_->engine->getWeightStreamingAutomaticBudget();
  }
  int64_t weight_streaming_budget() const override { return loaded_->engine->getWeightStreamingBudgetV2(); }

  bool set_weight_streaming_budget(int64_t bytes) override {
    const uint64_t mark = loaded_->logger.errors().mark();
    if (loaded_->engine->setWeightStreamingBudgetV2(bytes)) return true;
    error_ = "setWeightStreamingBudgetV2(" + std::to_string(bytes) + ") failed: " + loaded_->logger.errors().since(mark);
    return false;
  }

  std::unique_ptr<ExecutionContext> create_context(const ContextOptions& options) override {
    const uint64_t mark = loaded_->logger.errors().mark();
    auto context = std::make_unique<TensorRTContext>(loaded_);
    if (!context->create(options.user_managed_memory)) {
      error_ = std::string("createExecutionContext(") + (options.user_managed_memory ? "kUSER_MANAGED" : "kSTATIC") +
               ") on device " + std::to_string(loaded_->device_id) + " failed: " + loaded_->logger.errors().since(mark);
      return nullptr;
    }
    return context;
  }

  const char* last_error() const override { return error_.c_str(); }

 private:
  std::shared_ptr<Loaded> loaded_;
  mutable std::string error_;
};

}  // namespace

std::unique_ptr<Engine> deserialize(const void* data, size_t size, int64_t device_id, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (data == nullptr || size == 0) {
    *error = "no TensorRT engine bytes to deserialize (the blob's engine section is empty)";
    return nullptr;
  }
#if ETRT_WITH_CUDA
  // The backend makes device_id current before calling when deserializes_on_device(); a mismatch here would
  // put the engine on the wrong GPU, so say so instead.
  int current = -1;
  if (deserializes_on_device() && device_id >= 0 && cudaGetDevice(&current) == cudaSuccess && current != device_id) {
    *error = "the engine belongs on CUDA device " + std::to_string(device_id) + " but device " +
             std::to_string(current) + " is current; call cudaSetDevice(" + std::to_string(device_id) +
             ") before deserializing";
    return nullptr;
  }
#endif

  auto loaded = std::make_shared<Loaded>();
  loaded->device_id = device_id;
  const uint64_t mark = loaded->logger.errors().mark();
  loaded->runtime.reset(nvinfer1::createInferRuntime(loaded->logger));
  if (loaded->runtime == nullptr) {
    *error = "createInferRuntime failed (is libnvinfer the version these headers are, " +
             std::to_string(NV_TENSORRT_MAJOR) + "." + std::to_string(NV_TENSORRT_MINOR) +
             "?): " + loaded->logger.errors().since(mark);
    return nullptr;
  }
  loaded->engine.reset(loaded->runtime->deserializeCudaEngine(data, size));
  if (loaded->engine == nullptr) {
    *error = "TensorRT could not deserialize the engine (" + std::to_string(size) +
             " bytes); it must have been built by the same TensorRT version for a compatible GPU, unless built "
             "version- or hardware-compatible: " +
             loaded->logger.errors().since(mark);
    return nullptr;
  }
  loaded->num_profiles = loaded->engine->getNbOptimizationProfiles();
  if (loaded->num_profiles < 1) {
    *error = "the engine reports " + std::to_string(loaded->num_profiles) +
             " optimization profiles; TensorRT promises at least 1";
    return nullptr;
  }
#if defined(ETRT_NVINFER_GPU_FREE)
  // The GPU-free implementation's host engines compute on the calling thread over host memory.
  if (etrt_gpufree_engineRunsOnHost(loaded->engine.get())) loaded->memory_kind = MemoryKind::kHost;
#endif
  if (!describe_io(*loaded->engine, &loaded->io, error) || !describe_aliases(*loaded->engine, &loaded->io, error))
    return nullptr;
  return std::make_unique<TensorRTEngine>(std::move(loaded));
}

bool deserializes_on_device() {
#if defined(ETRT_NVINFER_GPU_FREE)
  // The GPU-free runtime deserializes anywhere; a CUDA-mode engine uploads its weights at context creation.
  return false;
#else
  return true;
#endif
}

}  // namespace etrt::engine::tensorrt
