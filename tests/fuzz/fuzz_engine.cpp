// libFuzzer harness: engine bytes through the TensorRT adapter (etrt::engine::tensorrt::deserialize), which hands
// them to NvInfer's deserializeCudaEngine -- by default the GPU-free implementation (nvinfer/), whose format
// reader is the code under test.
//
// Each input runs twice: as it is, and with its header's payload size and checksum made right (fuzz_check.h),
// without which mutated payloads would never get past the checksum.
//
// Whatever the bytes: deserialize refuses with a message or returns an engine whose description is sane. An
// engine that loads and runs on the host is then driven the way the backend drives one, within bounded sizes:
// contexts (the library's scratch, or user-managed scratch shared by one context per profile), profile switches,
// input shapes at the profile's min/opt/max, inferred output shapes, aligned buffers, enqueues with inputs that
// are zero, small or arbitrary. Every refusal must come with a message; nothing may crash or touch memory outside
// the buffers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensorrt/tensorrt_engine.h"
#include "fuzz_check.h"

namespace {

using etrt::Diagnostic;
using etrt::Error;
using etrt::Shape;
using etrt::engine::ContextOptions;
using etrt::engine::Engine;
using etrt::engine::ExecutionContext;
using etrt::engine::kIoAddressAlignment;
using etrt::engine::MemoryKind;
using etrt::engine::TensorDesc;

constexpr int32_t kMaxProfilesRun = 4;
constexpr uint64_t kMaxBytes = uint64_t{1} << 20;     // all IO buffers of one context, together
constexpr int64_t kMaxElements = 4096;                // an input shape past this runs at the profile's min instead
constexpr uint64_t kMaxScratch = uint64_t{64} << 20;  // scratch of the contexts we run

// A 256-byte aligned, zeroed buffer.
struct Buffer {
  struct Free {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{kIoAddressAlignment}); }
  };
  std::unique_ptr<uint8_t[], Free> bytes;
  size_t size = 0;
  explicit Buffer(size_t n) : size(n) {
    bytes.reset(static_cast<uint8_t*>(::operator new[](std::max<size_t>(n, 1), std::align_val_t{kIoAddressAlignment})));
    std::memset(bytes.get(), 0, std::max<size_t>(n, 1));
  }
};

void expect_message(const Diagnostic& why, const char* call) {
  ETRT_FUZZ_CHECK(!why.empty(), std::string(call) + " failed without a message");
}

bool sane_shape(const Shape& s) { return s.rank >= 0 && s.rank <= etrt::kMaxRank; }

// Bytes of a tensor of `shape` and `dtype`; false when a dim is unknown or the size is over the bound.
bool tensor_bytes(const Shape& shape, etrt::DataType dtype, uint64_t* bytes) {
  uint64_t n = etrt::element_size(dtype);
  for (int32_t i = 0; i < shape.rank; ++i) {
    if (shape.d[i] < 0) return false;
    if (shape.d[i] > 0 && n > kMaxBytes / static_cast<uint64_t>(shape.d[i])) return false;
    n *= static_cast<uint64_t>(shape.d[i]);
  }
  *bytes = n;
  return n <= kMaxBytes;
}

void fill(Buffer& buffer, etrt::DataType dtype, int mode, etrt::fuzz::Stream& stream) {
  if (mode == 0) return;  // zeros: every index valid
  const size_t element = etrt::element_size(dtype);
  for (size_t at = 0; at + element <= buffer.size; at += element) {
    uint64_t v = stream.next();
    if (mode == 1) {  // small values: in range for small vocabularies and caches
      if (dtype == etrt::DataType::kFloat32) {
        const float f = static_cast<float>(static_cast<int64_t>(v % 17) - 8) * 0.25f;
        std::memcpy(&v, &f, sizeof(f));
      } else if (dtype == etrt::DataType::kBool) {
        v &= 1;
      } else {
        v %= 4;
      }
    }
    std::memcpy(buffer.bytes.get() + at, &v, element);  // mode 2: arbitrary bits
  }
}

// One context's run on `profile`: switch, set every input shape, read the outputs', bind, enqueue twice.
void run_context(const Engine& engine, ExecutionContext& context, int32_t profile, etrt::fuzz::Stream& stream) {
  Diagnostic why;
  if (profile != context.optimization_profile() || stream.next() % 4 == 0) {
    if (context.set_optimization_profile(profile, nullptr, why) != Error::Ok) return expect_message(why, "switch");
    ETRT_FUZZ_CHECK(context.optimization_profile() == profile, "a successful switch left another profile active");
  }
  const int32_t n = engine.num_io_tensors();
  for (int32_t i = 0; i < n; ++i) {
    const TensorDesc& desc = engine.io_tensor(i);
    if (!desc.is_input) continue;
    Shape min, opt, max, shape = desc.shape;
    if (engine.profile_shape(profile, i, &min, &opt, &max, why) == Error::Ok) {
      ETRT_FUZZ_CHECK(sane_shape(min) && sane_shape(opt) && sane_shape(max), "profile bounds of an impossible rank");
      const uint64_t pick = stream.next() % 3;
      shape = pick == 0 ? min : pick == 1 ? opt : max;
      // The kernels are not what is fuzzed here: big shapes only cost time.
      if (shape.numel() > kMaxElements) shape = min;
    }
    if (context.set_input_shape(i, shape, why) != Error::Ok) return expect_message(why, "set_input_shape");
  }
  std::vector<Buffer> buffers;
  buffers.reserve(static_cast<size_t>(n));
  uint64_t total = 0;
  for (int32_t i = 0; i < n; ++i) {
    const TensorDesc& desc = engine.io_tensor(i);
    Shape shape;
    if (context.tensor_shape(i, &shape, why) != Error::Ok) return expect_message(why, "tensor_shape");
    ETRT_FUZZ_CHECK(sane_shape(shape), "tensor_shape returned rank " + std::to_string(shape.rank));
    uint64_t bytes = 0;
    if (!tensor_bytes(shape, desc.dtype, &bytes) || (total += bytes) > kMaxBytes) return;  // unknown dims or too big
    buffers.emplace_back(static_cast<size_t>(bytes));
    if (desc.is_input) fill(buffers.back(), desc.dtype, static_cast<int>(stream.next() % 3), stream);
  }
  for (int32_t i = 0; i < n; ++i) {
    const TensorDesc& desc = engine.io_tensor(i);
    // An output the engine writes into an input must be bound to the input's memory (TensorRT's rule).
    const int32_t at = !desc.is_input && desc.aliased_input >= 0 && desc.aliased_input < n ? desc.aliased_input : i;
    if (context.set_tensor_address(i, buffers[static_cast<size_t>(at)].bytes.get(), why) != Error::Ok)
      return expect_message(why, "set_tensor_address");
  }
  for (int round = 0; round < 2; ++round)
    if (context.enqueue(nullptr, why) != Error::Ok) return expect_message(why, "enqueue");
}

void one_engine(const uint8_t* data, size_t size) {
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  if (etrt::engine::tensorrt::deserialize(data, size, 0, &engine, why) != Error::Ok) {
    ETRT_FUZZ_CHECK(!why.empty(), "deserialize refused without a message");
    ETRT_FUZZ_CHECK(engine == nullptr, "deserialize refused yet returned an engine");
    return;
  }
  etrt::fuzz::Stream stream{etrt::fuzz::hash(data, size)};

  const int32_t n = engine->num_io_tensors();
  ETRT_FUZZ_CHECK(n >= 0, "negative IO count");
  bool shape_tensors = false;
  for (int32_t i = 0; i < n; ++i) {
    const TensorDesc& desc = engine->io_tensor(i);
    ETRT_FUZZ_CHECK(!desc.name.empty(), "IO tensor " + std::to_string(i) + " without a name");
    ETRT_FUZZ_CHECK(sane_shape(desc.shape), "IO tensor '" + desc.name + "' of rank " + std::to_string(desc.shape.rank));
    ETRT_FUZZ_CHECK(etrt::element_size(desc.dtype) > 0, "IO tensor '" + desc.name + "' of no known type");
    ETRT_FUZZ_CHECK(desc.aliased_input < n, "IO tensor '" + desc.name + "' aliases a tensor past the IO count");
    ETRT_FUZZ_CHECK(desc.aliased_input < 0 || (!desc.is_input && engine->io_tensor(desc.aliased_input).is_input),
                    "IO tensor '" + desc.name + "' aliases something other than an input");
    shape_tensors |= desc.is_shape_tensor;
  }
  const int32_t profiles = engine->num_profiles();
  ETRT_FUZZ_CHECK(profiles >= 1, "an engine with " + std::to_string(profiles) + " profiles");
  Shape min, opt, max;
  ETRT_FUZZ_CHECK(engine->profile_shape(profiles, 0, &min, &opt, &max, why) == Error::InvalidArgument,
                  "bounds of a profile past the last");
  ETRT_FUZZ_CHECK(engine->profile_shape(-1, 0, &min, &opt, &max, why) == Error::InvalidArgument,
                  "bounds of profile -1");
  ETRT_FUZZ_CHECK(engine->profile_shape(0, n, &min, &opt, &max, why) == Error::InvalidArgument,
                  "bounds of an IO index past the last");

  if (engine->streamable_weights_size() > 0 && stream.next() % 2 == 0) {
    const int64_t budget =
        static_cast<int64_t>(stream.next() % static_cast<uint64_t>(engine->streamable_weights_size() + 2));
    if (engine->set_weight_streaming_budget(budget, why) != Error::Ok)
      expect_message(why, "set_weight_streaming_budget");
  }

  // Device engines cannot run here (no CUDA): context creation must refuse them, saying so.
  if (engine->memory_kind() != MemoryKind::kHost) {
    std::unique_ptr<ExecutionContext> context;
    if (engine->create_context(ContextOptions{}, &context, why) != Error::Ok) expect_message(why, "create_context");
    return;
  }
  // The backend refuses shape tensors at load; it never drives such an engine.
  if (shape_tensors) return;
  // Scratch over the bound: creating a context is all we try (with ASAN_OPTIONS=allocator_may_return_null=1, as
  // run_fuzzers.sh sets, an allocation past max_allocation_size_mb fails as it would on a machine without the
  // memory, and the refusal must say so).
  if (engine->device_memory_size() > kMaxScratch) {
    std::unique_ptr<ExecutionContext> context;
    if (engine->create_context(ContextOptions{}, &context, why) != Error::Ok) expect_message(why, "create_context");
    return;
  }

  const int32_t run = std::min(profiles, kMaxProfilesRun);
  if (profiles > 1 && stream.next() % 2 == 0) {
    // context_per_profile: one user-managed context per profile, bound once, sharing one scratch buffer; they run
    // one at a time.
    Buffer scratch(engine->device_memory_size());
    std::vector<std::unique_ptr<ExecutionContext>> contexts;
    for (int32_t p = 0; p < run; ++p) {
      std::unique_ptr<ExecutionContext> context;
      if (engine->create_context(ContextOptions{true}, &context, why) != Error::Ok) {
        expect_message(why, "create_context");
        return;
      }
      contexts.push_back(std::move(context));
      if (contexts.back()->set_device_memory(scratch.bytes.get(), scratch.size, why) != Error::Ok) {
        expect_message(why, "set_device_memory");
        return;
      }
      if (p > 0 && contexts.back()->set_optimization_profile(p, nullptr, why) != Error::Ok) {
        expect_message(why, "switch");
        return;
      }
    }
    for (int round = 0; round < 2; ++round)
      for (int32_t p = 0; p < run; ++p) run_context(*engine, *contexts[static_cast<size_t>(p)], p, stream);
    return;
  }
  // switch: one context, its own scratch, moved across the profiles.
  std::unique_ptr<ExecutionContext> context;
  if (engine->create_context(ContextOptions{}, &context, why) != Error::Ok) {
    expect_message(why, "create_context");
    return;
  }
  for (int32_t p = 0; p < run; ++p) run_context(*engine, *context, p, stream);
  if (run > 1) run_context(*engine, *context, 0, stream);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool configured = (etrt::fuzz::configure_tracing(), true);
  (void)configured;
  one_engine(data, size);
  // Again with the header made consistent (fuzz_check.h), so that mutated payloads get past the checksum.
  std::vector<uint8_t> fixed(data, data + size);
  if (etrt::fuzz::fix_engine_header(fixed.data(), fixed.size(), true) && std::memcmp(fixed.data(), data, size) != 0)
    one_engine(fixed.data(), fixed.size());
  return 0;
}
