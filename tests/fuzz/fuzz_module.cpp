// libFuzzer harness: the bytes as a .pte, loaded from a buffer by ExecuTorch's Module with libetrt registered as
// "TensorRTBackend", every method loaded and executed. The checksums of engines inside the program's blobs are
// made right first (fuzz_check.h).
//
// The program goes through ExecuTorch's own verification (Program::Verification::InternalConsistency, what a
// runner loading untrusted files should ask for); each TensorRT delegate in it goes through etrt's loader (blob,
// compile specs, engine, bindings, aliases, profiles) under load options picked from a hash of the bytes (both
// profile strategies, auto on or off, both auto policies, weight-streaming budgets; now and then a wrong one).
// Each loaded method then runs with inputs made from its own metadata -- the planned sizes, or every dim cut to 1,
// 2, 33 or 64; zeros, small or arbitrary values -- under no guard, an automatic request and a pin, and every
// output it returns is read to its last byte. Sizes are bounded: methods whose planned memory or inputs exceed
// the bounds below are not run.

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/platform.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "fuzz_check.h"
#include "module_loading.h"

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::BufferDataLoader;
using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;

constexpr size_t kMaxMethods = 4;
constexpr size_t kMaxInputs = 16;
constexpr int64_t kMaxPlannedBytes = int64_t{64} << 20;  // a method's memory-planned buffers, together
constexpr uint64_t kMaxInputBytes = uint64_t{1} << 20;   // a method's inputs, together
// Every dim of an input is cut to one of these (the kernels are not what is fuzzed; big shapes only cost time):
// one token, two, just past a 32-token bound, 64 -- or left as planned when the whole tensor is small.
constexpr int32_t kDimCaps[] = {1, 2, 33, 64};
constexpr uint64_t kSmallTensor = 4096;  // elements

// ExecuTorch logs every refusal (etrt's included) through its PAL; at fuzzing speed that is most of the time
// spent. ETRT_FUZZ_LOG=1 keeps the log.
void quiet_log(et_timestamp_t, et_pal_log_level_t, const char*, const char*, size_t, const char*, size_t) {}

bool init() {
  const char* keep = std::getenv("ETRT_FUZZ_LOG");
  if (keep == nullptr || keep[0] == '\0' || keep[0] == '0') et::register_pal(et::PalImpl::create(quiet_log, __FILE__));
  etrt::fuzz::configure_tracing();
  return true;
}

// ---- what ExecuTorch 1.5 does not check ----
//
// Malformed programs that pass ExecuTorch's verification (even InternalConsistency) and then crash the process
// inside libexecutorch.so, found by this harness. They are ExecuTorch's to fix, not etrt's, so the harness steps
// around them (docs/testing.md lists them, tests/fuzz/regressions/module/ keeps them):
//
//  1. Method::init leaves the execution plan's `inputs` and `outputs` value indices unchecked; set_input and
//     get_outputs then abort (Method::get_value's ET_CHECK, "assert failed (i < n_value_)") on an index past the
//     plan's values.
//  2. Module::method_names() aborts (Result::CheckOk) on a plan without a name, where Program::get_method_name
//     returns an error.
//  3. BackendDelegate::Init dereferences a delegate's compile spec `key` and `value` without checking that they
//     are present: a null read (SEGV). The walk also requires every delegate's `id` and `processed`, defensively.
//
// For 1 and 3 the harness reads the program's flatbuffer itself and skips programs that would crash there; for 2
// it takes the method names from the Program. The reader is minimal and bounds-checked (a crash in it would be
// the harness's); the field ids are program.fbs's: Program.execution_plan 1; ExecutionPlan.values 2, .inputs 3,
// .outputs 4, .delegates 7; BackendDelegate.id 0, .processed 1, .compile_specs 2; CompileSpec.key 0, .value 1.
class Flatbuffer {
 public:
  Flatbuffer(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool u32(size_t at, uint32_t* out) const {
    if (at > size_ || size_ - at < 4) return false;
    *out = static_cast<uint32_t>(etrt::fuzz::get_le(data_ + at, 4));
    return true;
  }
  // Follows the uoffset at `at`.
  bool deref(size_t at, size_t* out) const {
    uint32_t offset = 0;
    if (!u32(at, &offset) || offset >= size_ - at) return false;
    *out = at + offset;
    return true;
  }
  // The root table.
  bool root(size_t* out) const { return deref(0, out); }
  // Where field `id` of the table at `table` points (a table, string or vector), or 0 when it is absent.
  bool field(size_t table, int id, size_t* out) const {
    uint32_t soffset = 0;
    if (!u32(table, &soffset)) return false;
    const int64_t vtable = static_cast<int64_t>(table) - static_cast<int32_t>(soffset);
    if (vtable < 0 || static_cast<size_t>(vtable) + 4 > size_) return false;
    const size_t vt = static_cast<size_t>(vtable);
    const size_t slot = 4 + 2 * static_cast<size_t>(id);
    *out = 0;
    if (slot + 2 > static_cast<size_t>(etrt::fuzz::get_le(data_ + vt, 2))) return true;  // past the vtable: absent
    if (vt + slot + 2 > size_) return false;
    const size_t offset = static_cast<size_t>(etrt::fuzz::get_le(data_ + vt + slot, 2));
    return offset == 0 || deref(table + offset, out);
  }
  // A vector field: its element count and where the elements start (count 0 when absent).
  bool vector(size_t table, int id, uint32_t* count, size_t* elements) const {
    size_t at = 0;
    *count = 0;
    if (!field(table, id, &at)) return false;
    if (at == 0) return true;
    *elements = at + 4;
    return u32(at, count) && *count <= (size_ - *elements) / 4;
  }
  // Element `i` of a vector of tables.
  bool element(size_t elements, uint32_t i, size_t* out) const { return deref(elements + 4 * size_t{i}, out); }

 private:
  const uint8_t* data_;
  size_t size_;
};

// False when the program would crash ExecuTorch in one of the ways above 1 and 3 (or the walk cannot read it).
bool executorch_can_take(const uint8_t* data, size_t size) {
  const Flatbuffer fb(data, size);
  size_t program = 0, plans = 0;
  uint32_t plan_count = 0;
  if (!fb.root(&program) || !fb.vector(program, 1, &plan_count, &plans)) return false;
  for (uint32_t p = 0; p < plan_count; ++p) {
    size_t plan = 0, values = 0, indices = 0, delegates = 0;
    uint32_t value_count = 0, index_count = 0, delegate_count = 0;
    if (!fb.element(plans, p, &plan) || !fb.vector(plan, 2, &value_count, &values)) return false;
    for (const int id : {3, 4}) {  // inputs, outputs
      if (!fb.vector(plan, id, &index_count, &indices)) return false;
      for (uint32_t i = 0; i < index_count; ++i) {
        uint32_t index = 0;
        if (!fb.u32(indices + 4 * size_t{i}, &index) || index >= value_count) return false;
      }
    }
    if (!fb.vector(plan, 7, &delegate_count, &delegates)) return false;
    for (uint32_t d = 0; d < delegate_count; ++d) {
      size_t delegate = 0, id = 0, processed = 0, specs = 0;
      uint32_t spec_count = 0;
      if (!fb.element(delegates, d, &delegate) || !fb.field(delegate, 0, &id) || !fb.field(delegate, 1, &processed) ||
          id == 0 || processed == 0 || !fb.vector(delegate, 2, &spec_count, &specs))
        return false;
      for (uint32_t c = 0; c < spec_count; ++c) {
        size_t spec = 0, key = 0, value = 0;
        if (!fb.element(specs, c, &spec) || !fb.field(spec, 0, &key) || !fb.field(spec, 1, &value) || key == 0 ||
            value == 0)
          return false;
      }
    }
  }
  return true;
}

// libFuzzer's own mutator; weak, since the replay build links no libFuzzer (and never mutates).
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) __attribute__((weak));

// Bytes per element of the types a runner can make from metadata; 0 for anything else (the method is skipped).
size_t element_size(ScalarType type) {
  switch (type) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Bool:
      return 1;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16:
      return 2;
    case ScalarType::Int:
    case ScalarType::Float:
      return 4;
    case ScalarType::Long:
    case ScalarType::Double:
      return 8;
    default:
      return 0;
  }
}

struct Inputs {
  std::vector<std::vector<uint8_t>> storage;
  std::vector<TensorPtr> tensors;
  std::vector<et::EValue> values;
};

// Inputs for `meta`, or false when its inputs are of a kind we do not make or over the bounds. Every dim is cut to
// at most `cap` (0: as planned); `mode` 0 zeros, 1 small values, 2 arbitrary bits.
bool make_inputs(const et::MethodMeta& meta, int32_t cap, int mode, etrt::fuzz::Stream& stream, Inputs* out) {
  if (meta.num_inputs() > kMaxInputs) return false;
  uint64_t total = 0;
  out->storage.reserve(meta.num_inputs());
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    const auto tag = meta.input_tag(i);
    if (!tag.ok()) return false;
    switch (tag.get()) {
      case et::Tag::None:
        out->values.emplace_back();
        continue;
      case et::Tag::Int:
        out->values.emplace_back(static_cast<int64_t>(stream.next() % 4));
        continue;
      case et::Tag::Double:
        out->values.emplace_back(0.5);
        continue;
      case et::Tag::Bool:
        out->values.emplace_back(stream.next() % 2 == 0);
        continue;
      case et::Tag::Tensor:
        break;
      default:
        return false;
    }
    const auto info = meta.input_tensor_meta(i);
    if (!info.ok()) return false;
    const size_t element = element_size(info->scalar_type());
    if (element == 0 || info->sizes().size() > 8) return false;
    std::vector<executorch::aten::SizesType> sizes;
    uint64_t bytes = element;
    for (const int32_t d : info->sizes()) {
      if (d < 0) return false;
      const int32_t dim = cap > 0 ? std::min(d, cap) : d;
      sizes.push_back(dim);
      if (dim > 0 && bytes > kMaxInputBytes / static_cast<uint64_t>(dim)) return false;
      bytes *= static_cast<uint64_t>(dim);
    }
    if ((total += bytes) > kMaxInputBytes) return false;
    std::vector<uint8_t>& data = out->storage.emplace_back(std::max<size_t>(static_cast<size_t>(bytes), 1));
    if (mode != 0) {
      for (size_t at = 0; at + element <= bytes; at += element) {
        uint64_t v = stream.next();
        if (mode == 1) v = info->scalar_type() == ScalarType::Float ? 0x3F000000u /* 0.5f */ : v % 4;
        std::memcpy(data.data() + at, &v, element);
      }
    }
    out->tensors.push_back(executorch::extension::from_blob(data.data(), std::move(sizes), info->scalar_type()));
    out->values.emplace_back(*out->tensors.back());
  }
  return true;
}

// Reads every byte of every tensor output: an output whose sizes run past its memory is an ASan report here.
void touch_outputs(const std::vector<et::EValue>& outputs) {
  volatile uint8_t sink = 0;
  for (const et::EValue& value : outputs) {
    if (!value.isTensor()) continue;
    const executorch::aten::Tensor& t = value.toTensor();
    const auto* p = static_cast<const uint8_t*>(t.const_data_ptr());
    if (p == nullptr) continue;
    for (size_t i = 0; i < t.nbytes(); ++i) sink = static_cast<uint8_t>(sink ^ p[i]);
  }
  (void)sink;
}

void check_report(const etrt::ExecutionReport& report) {
  for (const etrt::ExecutionRecord& e : report.entries()) {
    ETRT_FUZZ_CHECK(e.num_profiles >= 1,
                    std::string(e.delegate) + " reports " + std::to_string(e.num_profiles) + " profiles");
    ETRT_FUZZ_CHECK(!e.ok || (e.profile >= 0 && e.profile < e.num_profiles),
                    std::string(e.delegate) + " ran on profile " + std::to_string(e.profile) + " of " +
                        std::to_string(e.num_profiles));
  }
}

void execute(Module& module, const std::string& method, const std::vector<et::EValue>& inputs) {
  const auto result = module.execute(method, inputs);
  if (result.ok()) touch_outputs(result.get());
}

// The elements of the method's largest tensor input, as planned.
uint64_t planned_elements(const et::MethodMeta& meta) {
  uint64_t largest = 0;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    const auto info = meta.input_tensor_meta(i);
    if (!info.ok()) continue;
    uint64_t n = 1;
    for (const int32_t d : info->sizes()) {
      if (d <= 0) {
        n = 0;
        break;
      }
      n = std::min<uint64_t>(n, uint64_t{1} << 32) * static_cast<uint64_t>(d);
    }
    largest = std::max(largest, n);
  }
  return largest;
}

void run(Module& module, const std::string& method, const et::MethodMeta& meta, etrt::fuzz::Stream& stream) {
  // Two rounds: a small tensor as planned, else every dim cut to a cap; then a dim cut to a cap.
  for (int round = 0; round < 2; ++round) {
    int32_t cap = kDimCaps[stream.next() % std::size(kDimCaps)];
    if (round == 0 && planned_elements(meta) <= kSmallTensor) cap = 0;
    Inputs inputs;
    if (!make_inputs(meta, cap, static_cast<int>(stream.next() % 3), stream, &inputs)) return;
    for (int request = 0; request < 3; ++request) {
      etrt::ExecutionReport report;
      if (request == 0) {
        execute(module, method, inputs.values);
      } else if (request == 1) {
        auto automatic = etrt::OptimizationProfileGuard::automatic(
            stream.next() % 2 == 0 ? etrt::AutoPolicy::kStickyFirstFit : etrt::AutoPolicy::kFirstFit);
        execute(module, method, inputs.values);
      } else {
        etrt::OptimizationProfileGuard pin(static_cast<int32_t>(stream.next() % 3));
        execute(module, method, inputs.values);
      }
      check_report(report);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool initialized = init();
  (void)initialized;
  etrt::fuzz::Stream stream{etrt::fuzz::hash(data, size)};
  const uint64_t choice = stream.next();

  // Load options: mostly valid (both strategies, auto on or off, both policies, a weight-streaming budget as an
  // int or a string), now and then of the wrong type or value, which the load must refuse cleanly.
  etrt::testing::LoadOptions options;
  const uint64_t strategy = choice & 7;
  options.emplace_back(etrt::kOptionProfileStrategy, strategy < 4   ? etrt::kStrategySwitch
                                                     : strategy < 7 ? etrt::kStrategyContextPerProfile
                                                                    : "no_such_strategy");
  if (choice & 8) options.emplace_back(etrt::kOptionAutoSelect, true);
  if (choice & 16) options.emplace_back(etrt::kOptionAutoPolicy, etrt::kPolicyFirstFit);
  switch ((choice >> 5) & 7) {
    case 1:
      options.emplace_back(etrt::kOptionWeightStreamingBudget, static_cast<int>((choice >> 8) % 4096));
      break;
    case 2:
      options.emplace_back(etrt::kOptionWeightStreamingBudget, "64");
      break;
    case 3:
      options.emplace_back(etrt::kOptionWeightStreamingBudget, "");
      break;
    case 4:
      options.emplace_back(etrt::kOptionWeightStreamingBudget, "12abc");
      break;
    case 5:  // an int where a bool belongs
      options.emplace_back(etrt::kOptionAutoSelect, 1);
      break;
    default:
      break;
  }
  const etrt::testing::LoadOptionsMap map(options);

  // Engines inside the program's blobs get consistent checksums (fuzz_check.h), so mutated engine bytes reach
  // etrt's loader instead of stopping at the checksum.
  std::vector<uint8_t> program(data, data + size);
  etrt::fuzz::fix_embedded_engine_headers(program);
  if (!executorch_can_take(program.data(), program.size())) return 0;
  Module module(std::make_unique<BufferDataLoader>(program.data(), program.size()));
  if (module.load(map.map(), et::Program::Verification::InternalConsistency) != et::Error::Ok) return 0;
  // Not Module::method_names(), which aborts on a plan without a name (see above): the program's own, checked.
  const std::shared_ptr<et::Program> loaded = module.program();
  if (loaded == nullptr) return 0;
  std::vector<std::string> methods;
  for (size_t i = 0; i < loaded->num_methods(); ++i) {
    const auto name = loaded->get_method_name(i);
    if (!name.ok() || name.get() == nullptr) return 0;  // Module::method_meta and load_method walk every name too
    methods.emplace_back(name.get());
  }
  std::sort(methods.begin(), methods.end());
  if (methods.size() > kMaxMethods) methods.resize(kMaxMethods);

  for (const std::string& method : methods) {
    const auto meta = module.method_meta(method);
    if (!meta.ok()) continue;
    // Module allocates the planned buffers the program asks for before anything runs; a hostile program asking for
    // terabytes is ExecuTorch's concern, not the delegate's.
    int64_t planned = 0;
    bool bounded = true;
    for (size_t i = 0; i < meta->num_memory_planned_buffers() && bounded; ++i) {
      const auto bytes = meta->memory_planned_buffer_size(i);
      bounded = bytes.ok() && bytes.get() >= 0 && (planned += bytes.get()) <= kMaxPlannedBytes;
    }
    if (!bounded) continue;
    if (module.load_method(method) != et::Error::Ok) continue;
    run(module, method, meta.get(), stream);
  }
  return 0;
}

// Three mutations in four change only what follows the program's flatbuffer -- the segments, where the delegates'
// blobs are (the extended header "eh00" at offset 8 gives where they start) -- so most inputs keep a program
// ExecuTorch accepts and reach etrt's loader; the fourth mutates the whole file.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  size_t base = 0;
  if (seed % 4 != 0 && size >= 32 && std::memcmp(data + 8, "eh00", 4) == 0) {
    const uint64_t segments = etrt::fuzz::get_le(data + 24, 8);
    if (segments > 0 && segments < size) base = static_cast<size_t>(segments);
  }
  return base + LLVMFuzzerMutate(data + base, size - base, max_size - base);
}
