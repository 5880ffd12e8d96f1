// The TensorRT adapter: the engine seam (engine.h) over NvInfer, the one path
// by which etrt drives engines. Built against NVIDIA's TensorRT or against the
// project's GPU-free NvInfer implementation (nvinfer/), from this same source;
// the only differences are two questions it asks the implementation
// (nvinfer_implementation.h): whether an engine runs on the host, and whether
// deserializing needs the engine's CUDA device current
// (deserializes_on_device()). Each method is a thin translation: an IO index becomes the tensor name NvInfer wants, a Shape
// becomes Dims, and a failed call writes "<the NvInfer call>: <TensorRT's own
// reason>" into the caller's Diagnostic (common/error.h).
// The policy (which profile, whether a shape fits) lives in the backend and
// the profile core, where the CPU tests reach it; nothing here decides.
//
// TensorRT 8.6, 10.1+ and 11.x: the calls whose spelling differs between them
// (device memory, Dims' extents, per-profile formats, weight streaming) go
// through nvinfer_compat.h, the one place that asks which version this is.

#include "engine/tensorrt/tensorrt_engine.h"

#include "engine/tensorrt/nvinfer_compat.h"
#include "engine/tensorrt/nvinfer_errors.h"
#include "engine/tensorrt/nvinfer_implementation.h"
#include "engine/tensorrt/nvinfer_io.h"

#include "common/shape_text.h"

#include <NvInferRuntime.h>
#if ETRT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace etrt::engine::tensorrt {
namespace {

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
  std::once_flag sharing_once;  // profiles_shared_across_contexts(), found once
  bool shares_profiles = false;
};

// ---- ExecutionContext -------------------------------------------------------------

class TensorRTContext final : public ExecutionContext {
 public:
  explicit TensorRTContext(std::shared_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}

  // Creates the NvInfer context. Errors during creation go to the engine's
  // logger; from here on they go to this context's recorder.
  bool create(bool user_managed_memory) {
    user_managed_ = user_managed_memory;
    context_.reset(nv::create_context(*loaded_->engine, user_managed_memory));
    if (context_ == nullptr) return false;
    context_->setErrorRecorder(&recorder_);
    return true;
  }

  int32_t optimization_profile() const override { return context_->getOptimizationProfile(); }

  Error set_optimization_profile(int32_t profile, StreamHandle stream, Diagnostic& why) override {
    const int32_t count = loaded_->num_profiles;
    if (profile < 0 || profile >= count) {
      return fail(why, Error::InvalidArgument, "profile %d does not exist; the engine has %d (0..%d)", profile, count,
                  count - 1);
    }
    const uint64_t mark = recorder_.errors().mark();
    if (context_->setOptimizationProfileAsync(profile, static_cast<cudaStream_t>(stream))) return Error::Ok;
    return fail_since(why, Error::Internal, recorder_.errors(), mark, "setOptimizationProfileAsync(%d) failed",
                      profile);
  }

  Error set_input_shape(int32_t io_index, const Shape& shape, Diagnostic& why) override {
    const Error checked = check_input(io_index, why);
    if (checked != Error::Ok) return checked;
    if (shape.rank < 0 || shape.rank > kMaxRank) {
      return fail(why, Error::InvalidArgument, "input '%s': rank %d is outside 0..%d", name_of(io_index), shape.rank,
                  kMaxRank);
    }
    nvinfer1::Dims dims{};
    if (!nv::to_dims(shape, &dims)) {
      return fail(why, Error::InvalidArgument,
                  "input '%s': shape %s has an extent this TensorRT (%d.%d) cannot hold in nvinfer1::Dims",
                  name_of(io_index), shape_text(shape).c_str(), NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR);
    }
    const uint64_t mark = recorder_.errors().mark();
    if (context_->setInputShape(name(io_index), dims)) return Error::Ok;
    return fail_since(why, Error::InvalidArgument, recorder_.errors(), mark,
                      "setInputShape('%s', %s) under profile %d failed", name_of(io_index), shape_text(shape).c_str(),
                      context_->getOptimizationProfile());
  }

  Error tensor_shape(int32_t io_index, Shape* out, Diagnostic& why) const override {
    const Error checked = check_index(io_index, why);
    if (checked != Error::Ok) return checked;
    const uint64_t mark = recorder_.errors().mark();
    const nvinfer1::Dims dims = context_->getTensorShape(name(io_index));
    if (dims.nbDims < 0 || dims.nbDims > kMaxRank) {
      return fail_since(why, Error::Internal, recorder_.errors(), mark, "getTensorShape('%s') returned rank %d",
                        name_of(io_index), dims.nbDims);
    }
    *out = to_shape(dims);
    return Error::Ok;
  }

  Error set_tensor_address(int32_t io_index, void* address, Diagnostic& why) override {
    const Error checked = check_index(io_index, why);
    if (checked != Error::Ok) return checked;
    const uint64_t mark = recorder_.errors().mark();
    if (context_->setTensorAddress(name(io_index), address)) return Error::Ok;
    return fail_since(why, Error::Internal, recorder_.errors(), mark, "setTensorAddress('%s') failed",
                      name_of(io_index));
  }

  Error set_device_memory(void* memory, size_t size, Diagnostic& why) override {
    if (!user_managed_) {
      return fail(why, Error::InvalidState,
                  "set_device_memory on a context TensorRT allocates for itself; create it with "
                  "ContextOptions::user_managed_memory = true to supply its memory");
    }
    const int64_t needed = nv::device_memory_size(*loaded_->engine);
    const int64_t given = size > static_cast<size_t>(std::numeric_limits<int64_t>::max())
                              ? std::numeric_limits<int64_t>::max()
                              : static_cast<int64_t>(size);
    if (given < needed || (memory == nullptr && needed > 0)) {
      const char* where = memory != nullptr ? "a device address" : "nullptr";
      // A streaming engine's figure includes the scratch its streamed weights are staged in; say how much.
      const int64_t streaming = nv::weight_streaming_scratch_memory_size(*loaded_->engine);
      if (streaming > 0) {
        return fail(why, Error::InvalidArgument,
                    "scratch memory of %zu bytes at %s is not enough: the engine needs %lld bytes (%s), of which "
                    "%lld stage its streamed weights (getWeightStreamingScratchMemorySize)",
                    size, where, static_cast<long long>(needed), nv::kDeviceMemorySizeCall,
                    static_cast<long long>(streaming));
      }
      return fail(why, Error::InvalidArgument,
                  "scratch memory of %zu bytes at %s is not enough: the engine needs %lld bytes (%s)", size, where,
                  static_cast<long long>(needed), nv::kDeviceMemorySizeCall);
    }
    const uint64_t mark = recorder_.errors().mark();
    nv::set_device_memory(*context_, memory, given);  // returns nothing; a problem reaches the recorder
    if (recorder_.errors().mark() != mark) {
      return fail_since(why, Error::Internal, recorder_.errors(), mark, "%s(%zu bytes) failed",
                        nv::kSetDeviceMemoryCall, size);
    }
    memory_set_ = true;
    return Error::Ok;
  }

  Error enqueue(StreamHandle stream, Diagnostic& why) override {
    if (user_managed_ && !memory_set_) {
      return fail(why, Error::InvalidState,
                  "enqueue before set_device_memory on a context created with user-managed memory");
    }
    const uint64_t mark = recorder_.errors().mark();
    if (context_->enqueueV3(static_cast<cudaStream_t>(stream))) return Error::Ok;
    // The engine blamed the data (kINVALID_ARGUMENT, e.g. a token id outside the vocabulary): the caller's argument.
    const bool bad_input =
        recorder_.errors().mark() != mark && recorder_.last_code() == nvinfer1::ErrorCode::kINVALID_ARGUMENT;
    return fail_since(why, bad_input ? Error::InvalidArgument : Error::Internal, recorder_.errors(), mark,
                      "enqueueV3 under profile %d failed", context_->getOptimizationProfile());
  }

 private:
  const char* name(int32_t io_index) const { return loaded_->io[static_cast<size_t>(io_index)].name.c_str(); }
  // The name as messages quote it.
  const char* name_of(int32_t io_index) const {
    return loaded_->io[static_cast<size_t>(io_index)].display_name.c_str();
  }

  Error check_index(int32_t io_index, Diagnostic& why) const {
    const int32_t count = static_cast<int32_t>(loaded_->io.size());
    if (io_index >= 0 && io_index < count) return Error::Ok;
    return fail(why, Error::InvalidArgument, "IO index %d is outside 0..%d", io_index, count - 1);
  }
  Error check_input(int32_t io_index, Diagnostic& why) const {
    const Error checked = check_index(io_index, why);
    if (checked != Error::Ok) return checked;
    if (loaded_->io[static_cast<size_t>(io_index)].is_input) return Error::Ok;
    return fail(why, Error::InvalidArgument, "IO tensor %d '%s' is an output, not an input", io_index,
                name_of(io_index));
  }

  // Declaration order is destruction order, reversed: the NvInfer context goes
  // first, then the recorder it holds a reference to, then the engine state.
  std::shared_ptr<Loaded> loaded_;
  ErrorRecorder recorder_;
  std::unique_ptr<nvinfer1::IExecutionContext> context_;
  bool user_managed_ = false;
  bool memory_set_ = false;
};

// ---- Engine -------------------------------------------------------------------

class TensorRTEngine final : public Engine {
 public:
  explicit TensorRTEngine(std::shared_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}

  int32_t num_io_tensors() const override { return static_cast<int32_t>(loaded_->io.size()); }
  const TensorDesc& io_tensor(int32_t io_index) const override { return loaded_->io[static_cast<size_t>(io_index)]; }

  int32_t num_profiles() const override { return loaded_->num_profiles; }

  Error profile_shape(int32_t profile, int32_t io_index, Shape* min, Shape* opt, Shape* max,
                      Diagnostic& why) const override {
    const int32_t count = num_io_tensors();
    if (io_index < 0 || io_index >= count || !loaded_->io[static_cast<size_t>(io_index)].is_input)
      return fail(why, Error::InvalidArgument, "profile_shape: IO index %d is not an input of this engine", io_index);
    const int32_t profiles = num_profiles();
    if (profile < 0 || profile >= profiles) {
      return fail(why, Error::InvalidArgument, "profile_shape: profile %d does not exist; the engine has %d", profile,
                  profiles);
    }
    const TensorDesc& desc = loaded_->io[static_cast<size_t>(io_index)];
    const uint64_t mark = loaded_->logger.errors().mark();
    const nvinfer1::OptProfileSelector selectors[3] = {
        nvinfer1::OptProfileSelector::kMIN, nvinfer1::OptProfileSelector::kOPT, nvinfer1::OptProfileSelector::kMAX};
    Shape* outs[3] = {min, opt, max};
    for (int k = 0; k < 3; ++k) {
      const nvinfer1::Dims dims = loaded_->engine->getProfileShape(desc.name.c_str(), profile, selectors[k]);
      if (dims.nbDims < 0 || dims.nbDims > kMaxRank) {
        return fail_since(why, Error::Internal, loaded_->logger.errors(), mark,
                          "getProfileShape('%s', %d) returned rank %d", desc.display_name.c_str(), profile,
                          dims.nbDims);
      }
      if (outs[k] != nullptr) *outs[k] = to_shape(dims);
    }
    return Error::Ok;
  }

  MemoryKind memory_kind() const override { return loaded_->memory_kind; }

  size_t device_memory_size() const override {
    const int64_t size = nv::device_memory_size(*loaded_->engine);
    return size > 0 ? static_cast<size_t>(size) : 0;
  }

  int64_t streamable_weights_size() const override { return nv::streamable_weights_size(*loaded_->engine); }
  int64_t weight_streaming_automatic_budget() const override {
    return nv::weight_streaming_automatic_budget(*loaded_->engine);
  }
  int64_t weight_streaming_budget() const override { return nv::weight_streaming_budget(*loaded_->engine); }

  Error set_weight_streaming_budget(int64_t bytes, Diagnostic& why) override {
    if (!nv::kHasWeightStreaming) {
      return fail(why, Error::NotSupported,
                  "setWeightStreamingBudget(%lld): TensorRT %d.%d has no weight streaming (it arrived in 10.0); the "
                  "engine keeps all its weights on the device",
                  static_cast<long long>(bytes), NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR);
    }
    const uint64_t mark = loaded_->logger.errors().mark();
    if (nv::set_weight_streaming_budget(*loaded_->engine, bytes)) return Error::Ok;
    return fail_since(why, Error::InvalidArgument, loaded_->logger.errors(), mark,
                      "setWeightStreamingBudgetV2(%lld) failed", static_cast<long long>(bytes));
  }


  bool profiles_shared_across_contexts() override {
    std::call_once(loaded_->sharing_once, [this] { loaded_->shares_profiles = nv::shares_profiles(*loaded_->engine); });
    return loaded_->shares_profiles;
  }

  Error create_context(const ContextOptions& options, std::unique_ptr<ExecutionContext>* out,
                       Diagnostic& why) override {
    const uint64_t mark = loaded_->logger.errors().mark();
    auto context = std::make_unique<TensorRTContext>(loaded_);
    if (!context->create(options.user_managed_memory)) {
      return fail_since(
          why, Error::Internal, loaded_->logger.errors(), mark, "%s on device %lld failed",
          nv::create_context_call(options.user_managed_memory), static_cast<long long>(loaded_->device_id));
    }
    *out = std::move(context);
    return Error::Ok;
  }

 private:
  std::shared_ptr<Loaded> loaded_;
};

// Loads each of the ':'-separated `libraries` into the runtime's plugin registry.
Error load_plugin_libraries(Loaded& loaded, const char* libraries, Diagnostic& why) {
  if (libraries == nullptr) return Error::Ok;
  const std::string all = libraries;
  size_t begin = 0;
  while (begin <= all.size()) {
    size_t end = all.find(':', begin);
    if (end == std::string::npos) end = all.size();
    const std::string path = all.substr(begin, end - begin);
    begin = end + 1;
    if (path.empty()) continue;
    const uint64_t mark = loaded.logger.errors().mark();
    if (loaded.runtime->getPluginRegistry().loadLibrary(path.c_str()) == nullptr) {
      return fail_since(why, Error::InvalidArgument, loaded.logger.errors(), mark,
                        "the plugin library '%s' (load option plugin_libraries) did not load "
                        "(IPluginRegistry::loadLibrary); give the path of a plugin library built for TensorRT %d.%d",
                        path.c_str(), NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR);
    }
  }
  return Error::Ok;
}

}  // namespace

Error deserialize(const void* data, size_t size, int64_t device_id, std::unique_ptr<Engine>* out, Diagnostic& why) {
  return deserialize(data, size, device_id, RuntimeOptions{}, out, why);
}

Error deserialize(const void* data, size_t size, int64_t device_id, const RuntimeOptions& options,
                  std::unique_ptr<Engine>* out, Diagnostic& why) {
  if (data == nullptr || size == 0) {
    return fail(why, Error::InvalidArgument,
                "no TensorRT engine bytes to deserialize (the blob's engine section is empty)");
  }
#if ETRT_WITH_CUDA
  // The backend makes device_id current before calling when deserializes_on_device(); a mismatch here would
  // put the engine on the wrong GPU, so say so instead.
  int current = -1;
  if (deserializes_on_device() && device_id >= 0 && cudaGetDevice(&current) == cudaSuccess && current != device_id) {
    return fail(why, Error::InvalidState,
                "the engine belongs on CUDA device %lld but device %d is current; call cudaSetDevice(%lld) before "
                "deserializing",
                static_cast<long long>(device_id), current, static_cast<long long>(device_id));
  }
#endif

  auto loaded = std::make_shared<Loaded>();
  loaded->device_id = device_id;
  const uint64_t mark = loaded->logger.errors().mark();
  loaded->runtime.reset(nvinfer1::createInferRuntime(loaded->logger));
  if (loaded->runtime == nullptr) {
    return fail_since(why, Error::Internal, loaded->logger.errors(), mark,
                      "createInferRuntime failed (is libnvinfer the version these headers are, %d.%d?)",
                      NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR);
  }
  loaded->runtime->setEngineHostCodeAllowed(options.allow_host_code);
  const Error plugins = load_plugin_libraries(*loaded, options.plugin_libraries, why);
  if (plugins != Error::Ok) return plugins;
  loaded->engine.reset(loaded->runtime->deserializeCudaEngine(data, size));
  if (loaded->engine == nullptr) {
    const Error refused = fail_since(why, Error::InvalidArgument, loaded->logger.errors(), mark,
                                     "TensorRT could not deserialize the engine (%zu bytes)", size);
    why.append(". TensorRT %d.%d loads a plan built by the same version for the same GPU architecture, unless it was "
               "built version- or hardware-compatible; a version-compatible plan that embeds its lean runtime also "
               "needs the load option engine_host_code (it is %s), and a plan with plugin layers needs their "
               "libraries (load option plugin_libraries)",
               NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR, options.allow_host_code ? "on" : "off");
    return refused;
  }
  loaded->num_profiles = loaded->engine->getNbOptimizationProfiles();
  if (loaded->num_profiles < 1) {
    return fail(why, Error::Internal, "the engine reports %d optimization profiles; TensorRT promises at least 1",
                loaded->num_profiles);
  }
  if (nv::runs_on_host(*loaded->engine)) loaded->memory_kind = MemoryKind::kHost;
  Error described = describe_io(*loaded->engine, &loaded->io, why);
  if (described == Error::Ok) described = describe_aliases(*loaded->engine, &loaded->io, why);
  if (described != Error::Ok) return described;
  *out = std::make_unique<TensorRTEngine>(std::move(loaded));
  return Error::Ok;
}

}  // namespace etrt::engine::tensorrt
