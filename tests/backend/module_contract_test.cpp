// The runtime contract programs exported for LLMs rely on, through ExecuTorch's Module and the GPU-free NvInfer
// implementation: in-place aliased IO (a KV cache the engine updates where the caller keeps it), weight streaming,
// 0-d outputs, blobs without io_bindings, and an error message a runner can trust.

#include <gtest/gtest.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt_gpufree/faults.h"
#include "etrt_gpufree/trace.h"
#include "module_loading.h"
#include "module_test_util.h"

namespace {

namespace et = ::executorch::runtime;
namespace gpufree = etrt::gpufree;
using etrt::module_test::events_of;
using etrt::module_test::fixture;
using etrt::module_test::FreeDeleter;
using etrt::module_test::has;
using etrt::module_test::trace_text;
using etrt::testing::load_module;
using etrt::testing::LoadOptions;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr int32_t kRows = 8;  // the cache's capacity
constexpr int32_t kWidth = 2;
constexpr size_t kCacheFloats = kRows * kWidth;

// The load error of fixture `name` (empty if it loaded), with the options in `options`.
struct Loaded {
  std::unique_ptr<Module> module;
  et::Error error = et::Error::Ok;
  std::string message;
};
Loaded load(const std::string& name, const LoadOptions& options = {}) {
  Loaded l;
  l.module = load_module(fixture(name), options, &l.error);
  l.message = etrt::last_error_message();
  return l;
}

// A cache the caller owns, `offset` bytes past a 256-byte boundary (0: TensorRT's alignment rule holds). 1 KiB
// holds the 64-byte cache at any offset used here; aligned_alloc wants a multiple of the alignment.
class CallerCache {
 public:
  explicit CallerCache(size_t offset = 0)
      : memory_(static_cast<unsigned char*>(std::aligned_alloc(256, 1024))),
        data_(reinterpret_cast<float*>(memory_.get() + offset)) {
    for (size_t i = 0; i < kCacheFloats; ++i) data_[i] = -1.0f - static_cast<float>(i);
  }
  float* data() const { return data_; }
  std::vector<float> values() const { return std::vector<float>(data_, data_ + kCacheFloats); }

 private:
  std::unique_ptr<unsigned char, FreeDeleter> memory_;
  float* data_;
};

// What the cache holds after rows pos.. were replaced by `rows` ([n, kWidth] row-major).
std::vector<float> updated(std::vector<float> cache, int64_t pos, const std::vector<float>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) cache[static_cast<size_t>(pos) * kWidth + i] = rows[i];
  return cache;
}

std::vector<float> values_of(const et::EValue& v) {
  const auto& t = v.toTensor();
  const float* p = t.const_data_ptr<float>();
  return std::vector<float>(p, p + t.numel());
}

// One forward of the KV fixtures: x = `rows` ([n, 2]) written at `pos` into `cache`.
et::Result<std::vector<et::EValue>> step(Module& module, std::vector<float>& rows, int64_t& pos, CallerCache& cache) {
  const auto n = static_cast<int32_t>(rows.size() / kWidth);
  return module.forward({from_blob(rows.data(), {1, n, kWidth}, ScalarType::Float),
                         from_blob(&pos, {1}, ScalarType::Long),
                         from_blob(cache.data(), {1, kRows, kWidth}, ScalarType::Float)});
}

// The address the engine `label` was last given for IO tensor `io_index`.
const void* bound_address(const std::string& label, int32_t io_index) {
  const void* address = nullptr;
  for (const auto& e : events_of(label, gpufree::TraceKind::kSetTensorAddress, true))
    if (e.io_index == io_index) address = e.address;
  return address;
}

// kv_engine's IO order (tests/backend/make_fixtures.cpp): x, pos, cache, y, cache_out.
constexpr int32_t kCacheIo = 2;
constexpr int32_t kCacheOutIo = 4;

// ---- in-place KV caches ----

// Prefill two rows, then decode one: each step lands in the caller's cache, where the next one finds it.
void expect_updates_in_place(const std::string& fixture_name, const std::string& label, bool write_back,
                             size_t offset = 0) {
  Loaded l = load(fixture_name);
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  CallerCache cache(offset);
  std::vector<float> expected = cache.values();
  gpufree::clear_trace(label);

  std::vector<float> prefill = {1.0f, 2.0f, 3.0f, 4.0f};
  int64_t pos = 3;
  auto result = step(*l.module, prefill, pos, cache);
  ASSERT_TRUE(result.ok()) << etrt::last_error_message();
  expected = updated(expected, 3, prefill);
  EXPECT_EQ(cache.values(), expected) << "the engine updated the caller's cache in place\n" << trace_text(label);
  EXPECT_EQ(values_of(result.get()[0]), (std::vector<float>{2.0f, 4.0f, 6.0f, 8.0f}));
  ASSERT_EQ(result.get().size(), write_back ? 2u : 1u);
  if (write_back) {
    EXPECT_EQ(values_of(result.get()[1]), expected) << "the write-back output holds the updated cache";
    EXPECT_EQ(result.get()[1].toTensor().dim(), 3);
  }
  // The output is bound exactly where the cache input is: the caller's memory when TensorRT can take it in place,
  // else the cache's staging buffer (copied back into the caller's memory after the enqueue).
  const void* cache_address = bound_address(label, kCacheIo);
  EXPECT_EQ(bound_address(label, kCacheOutIo), cache_address) << trace_text(label);
  if (offset == 0) {
    EXPECT_EQ(cache_address, cache.data()) << trace_text(label);
  } else {
    EXPECT_NE(cache_address, cache.data()) << "misaligned memory is staged\n" << trace_text(label);
  }

  std::vector<float> decode = {5.0f, 6.0f};
  pos = 5;
  auto decoded = step(*l.module, decode, pos, cache);
  ASSERT_TRUE(decoded.ok()) << etrt::last_error_message();
  expected = updated(expected, 5, decode);
  EXPECT_EQ(cache.values(), expected) << "the decode step kept what the prefill wrote";
  if (write_back) {
    EXPECT_EQ(values_of(decoded.get()[1]), expected);
  }
}

TEST(ModuleKvCache, WriteBackProgramUpdatesTheCallersCacheInPlaceAndCopiesItToTheWriteBackOutput) {
  expect_updates_in_place("kv_write_back", "kv", /*write_back=*/true);
}

TEST(ModuleKvCache, DelegateOwnedBufferPassesNoWriteBackTensorAndIsAccepted) {
  expect_updates_in_place("kv_owned", "kv", /*write_back=*/false);
}

TEST(ModuleKvCache, MisalignedCacheIsUpdatedThroughItsStagingBufferAndCopiedBack) {
  expect_updates_in_place("kv_write_back", "kv", /*write_back=*/true, /*offset=*/16);
  expect_updates_in_place("kv_owned", "kv", /*write_back=*/false, /*offset=*/16);
}

TEST(ModuleKvCache, AliasTheEngineReportsButTheBlobDoesNotListIsAppliedAllTheSame) {
  expect_updates_in_place("kv_unlisted", "kv_unlisted", /*write_back=*/true);
}

TEST(ModuleBindings, InterleavedIoBindingsAreSplitByIsInput) {
  expect_updates_in_place("kv_interleaved", "kv_interleaved", /*write_back=*/true);
}

TEST(ModuleKvCache, ContextPerProfileStrategyUpdatesInPlaceToo) {
  Loaded l = load("kv_owned", {{etrt::kOptionProfileStrategy, etrt::kStrategyContextPerProfile}});
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  CallerCache cache;
  std::vector<float> rows = {7.0f, 8.0f};
  int64_t pos = 0;
  ASSERT_TRUE(step(*l.module, rows, pos, cache).ok()) << etrt::last_error_message();
  EXPECT_EQ(cache.values(), updated(CallerCache().values(), 0, rows));
}

TEST(ModuleKvCache, WriteIndexPastTheCacheFailsTheExecutionAndTheNextOneSucceeds) {
  Loaded l = load("kv_owned");
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  CallerCache cache;
  std::vector<float> rows = {1.0f, 2.0f, 3.0f, 4.0f};
  int64_t pos = 7;  // rows 7 and 8 of an 8-row cache
  etrt::clear_last_error();
  EXPECT_FALSE(step(*l.module, rows, pos, cache).ok());
  EXPECT_TRUE(has(etrt::last_error_message(), "write index 7 of batch 0 in 'pos' puts 2 rows outside the cache's 8"))
      << etrt::last_error_message();
  EXPECT_EQ(cache.values(), CallerCache().values()) << "a refused update writes nothing";
  pos = 6;
  ASSERT_TRUE(step(*l.module, rows, pos, cache).ok()) << etrt::last_error_message();
  EXPECT_EQ(cache.values(), updated(CallerCache().values(), 6, rows));
}

TEST(ModuleKvCache, UserAliasWritesTheOutputIntoItsInputAndTheWriteBackGetsACopy) {
  Loaded l = load("alias_user");
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  CallerCache cache;
  gpufree::clear_trace("alias_user");
  std::vector<float> rows = {1.0f, 2.0f};
  int64_t pos = 1;
  auto result = step(*l.module, rows, pos, cache);
  ASSERT_TRUE(result.ok()) << etrt::last_error_message();
  // y = 2x runs first, in x's memory; the cache update then reads the doubled x.
  EXPECT_EQ(values_of(result.get()[0]), (std::vector<float>{2.0f, 4.0f}));
  EXPECT_EQ(cache.values(), updated(CallerCache().values(), 1, {2.0f, 4.0f}));
  EXPECT_EQ(bound_address("alias_user", 3), bound_address("alias_user", 0)) << trace_text("alias_user");
}

// ---- refusals at load ----

void expect_refused(const std::string& name, et::Error code, const std::string& part) {
  Loaded l = load(name);
  EXPECT_EQ(l.error, code) << l.message;
  EXPECT_TRUE(has(l.message, part)) << l.message;
}

TEST(ModuleAliasRefusal, UnknownKindIsRefusedNamingTheEntry) {
  expect_refused("alias_unknown_kind", et::Error::InvalidProgram,
                 "aliased_io[0] (output 'cache_out', input 'cache', kind 'mirror') has an unknown kind; etrt knows "
                 "'kv_cache_update' and 'user'");
}

TEST(ModuleAliasRefusal, KvCacheUpdatePairTheEngineDisagreesWithIsRefused) {
  expect_refused("alias_kv_disagrees", et::Error::InvalidProgram,
                 "aliased_io[0] (output 'cache_out', input 'x', kind 'kv_cache_update') disagrees with the engine, "
                 "whose alias for output 'cache_out' is 'cache' (getAliasedInputTensor)");
}

TEST(ModuleAliasRefusal, UserAliasOfAnotherShapeIsRefused) {
  expect_refused("alias_user_shapes", et::Error::InvalidProgram,
                 "aliased_io[1] (output 'y', input 'pos', kind 'user'): the output is float32 [1, -1, 2] but the "
                 "input is int64 [1]");
}

TEST(ModuleAliasRefusal, AFailedLoadLeavesTheRuntimeUsable) {
  expect_refused("alias_unknown_kind", et::Error::InvalidProgram, "unknown kind");
  expect_updates_in_place("kv_owned", "kv", /*write_back=*/false);
}

// ---- weight streaming ----

// The budgets the engine `label` was given (successful calls), in order.
std::vector<uint64_t> budgets(const std::string& label) {
  std::vector<uint64_t> out;
  for (const auto& e : events_of(label, gpufree::TraceKind::kSetWeightStreamingBudget, true)) out.push_back(e.size);
  return out;
}

// The load option weight_streaming_budget = `value` (an int or a string).
template <typename T>
LoadOptions budget(T value) {
  return {{etrt::kOptionWeightStreamingBudget, value}};
}

// Loads `name` and returns the budgets its engine ("ws") was given during the load.
std::vector<uint64_t> load_budgets(const std::string& name, const LoadOptions& options = {},
                                   const std::string& label = "ws") {
  gpufree::clear_trace(label);
  Loaded l = load(name, options);
  EXPECT_EQ(l.error, et::Error::Ok) << l.message;
  return budgets(label);
}

TEST(ModuleWeightStreaming, WithoutABudgetTheEngineGetsTheAutomaticOne) {
  // 64 streamable bytes (a [4, 4] float32 weight); the GPU-free implementation's automatic budget is half.
  EXPECT_EQ(load_budgets("ws_auto"), (std::vector<uint64_t>{32}));
}

TEST(ModuleWeightStreaming, CompileSpecSetsTheBudgetClampedToTheStreamableSize) {
  EXPECT_EQ(load_budgets("ws_spec"), (std::vector<uint64_t>{40}));
  EXPECT_EQ(load_budgets("ws_spec_above"), (std::vector<uint64_t>{64}));
}

TEST(ModuleWeightStreaming, LoadOptionOverridesTheCompileSpec) {
  EXPECT_EQ(load_budgets("ws_spec", budget("7")), (std::vector<uint64_t>{7}));
  EXPECT_EQ(load_budgets("ws_spec", budget(9)), (std::vector<uint64_t>{9}));
  EXPECT_EQ(load_budgets("ws_spec", budget("")), (std::vector<uint64_t>{40})) << "an empty option is ignored";
}

TEST(ModuleWeightStreaming, MalformedValuesAreRefusedNamingThem) {
  expect_refused("ws_spec_malformed", et::Error::InvalidProgram,
                 "the 'weight_streaming_budget' compile spec '12abc' is not a byte count: it must be one or more "
                 "decimal digits");
  expect_refused("ws_spec_negative", et::Error::InvalidProgram, "compile spec '-1' is not a byte count");
  expect_refused("ws_spec_twice", et::Error::InvalidProgram,
                 "carries the 'weight_streaming_budget' compile spec twice");
  Loaded l = load("ws_auto", budget("12 MB"));
  EXPECT_EQ(l.error, et::Error::InvalidArgument) << l.message;
  EXPECT_TRUE(has(l.message, "load option 'weight_streaming_budget' must be a non-negative int or a string of "
                             "decimal digits (bytes), got '12 MB'"))
      << l.message;
  l = load("ws_auto", budget(-5));
  EXPECT_EQ(l.error, et::Error::InvalidArgument) << l.message;
  EXPECT_TRUE(has(l.message, "got -5")) << l.message;
}

TEST(ModuleWeightStreaming, EngineWithoutStreamableWeightsIgnoresTheBudgetAndRuns) {
  gpufree::clear_trace("ws_resident");
  Loaded l = load("ws_resident");
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  EXPECT_TRUE(budgets("ws_resident").empty()) << trace_text("ws_resident");
  std::array<float, 4> x = {1.0f, 2.0f, 3.0f, 4.0f};
  auto result = l.module->forward(from_blob(x.data(), {1, 4}, ScalarType::Float));
  ASSERT_TRUE(result.ok()) << etrt::last_error_message();
  EXPECT_EQ(values_of(result.get()[0]), (std::vector<float>{3.0f, 6.0f, 9.0f, 12.0f}));
}

TEST(ModuleWeightStreaming, RefusedAutomaticBudgetFallsBackToStreamingEverything) {
  gpufree::inject_fault(gpufree::Call::kSetWeightStreamingBudgetV2, 1, "ws");
  EXPECT_EQ(load_budgets("ws_auto"), (std::vector<uint64_t>{0}));
  gpufree::clear_faults();
}

TEST(ModuleWeightStreaming, RefusedExplicitBudgetFailsTheLoadWithTheEnginesReason) {
  gpufree::inject_fault(gpufree::Call::kSetWeightStreamingBudgetV2, 1, "ws");
  expect_refused("ws_spec", et::Error::InvalidProgram,
                 "could not apply the weight-streaming budget: setWeightStreamingBudgetV2(40) failed: "
                 "setWeightStreamingBudgetV2: injected fault");
  gpufree::clear_faults();
}

// The budget is applied right after the arguments are bound, before the profile table and the signature check:
// which refusal a load reports when both a budget and a signature are wrong.
TEST(ModuleWeightStreaming, ARefusedBudgetIsReportedBeforeASignatureThatDisagrees) {
  expect_refused("ws_spec_signature_mismatch", et::Error::InvalidProgram, "profile 0 max");
  gpufree::inject_fault(gpufree::Call::kSetWeightStreamingBudgetV2, 1, "ws_signature");
  expect_refused("ws_spec_signature_mismatch", et::Error::InvalidProgram,
                 "could not apply the weight-streaming budget: setWeightStreamingBudgetV2(40) failed: "
                 "setWeightStreamingBudgetV2: injected fault");
  gpufree::clear_faults();
}

// ---- outputs and bindings ----

TEST(ModuleScalarOutput, EngineShapeOneFillsAZeroDimensionalTensor) {
  Loaded l = load("scalar_output");
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  float x = 2.0f;
  for (int i = 0; i < 2; ++i) {
    auto result = l.module->forward(from_blob(&x, {1}, ScalarType::Float));
    ASSERT_TRUE(result.ok()) << etrt::last_error_message();
    const auto& y = result.get()[0].toTensor();
    EXPECT_EQ(y.dim(), 0);
    EXPECT_EQ(y.const_data_ptr<float>()[0], 3.0f * x);
    x = 5.0f;
  }
}

TEST(ModuleBindings, EmptyIoBindingsTakeTheEnginesNamesInSuffixOrder) {
  Loaded l = load("no_bindings");
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  std::array<float, 4> a = {1.0f, 2.0f, 3.0f, 4.0f};
  std::array<float, 4> b = {10.0f, 20.0f, 30.0f, 40.0f};
  auto result = l.module->forward(
      {from_blob(a.data(), {1, 4}, ScalarType::Float), from_blob(b.data(), {1, 4}, ScalarType::Float)});
  ASSERT_TRUE(result.ok()) << etrt::last_error_message();
  // Arguments: input_0, input_1, output_0 = input_0, output_1 = 2 * input_1.
  EXPECT_EQ(values_of(result.get()[0]), (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}));
  EXPECT_EQ(values_of(result.get()[1]), (std::vector<float>{20.0f, 40.0f, 60.0f, 80.0f}));
}

// ---- errors a runner can trust ----

// A name from the engine or the blob reaches a message escaped, never as the raw bytes: an escape sequence or a
// newline in a tensor name cannot forge or corrupt a log line.
TEST(ModuleLastError, ControlCharactersInTensorNamesAreEscapedInMessages) {
  Loaded l = load("control_names");
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  std::array<float, 4> too_long = {};
  ASSERT_FALSE(l.module->forward(from_blob(too_long.data(), {1, 4}, ScalarType::Float)).ok());
  const std::string message = etrt::last_error_message();
  EXPECT_NE(message.find("ids\\x1b[2J\\x0a"), std::string::npos) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  std::array<float, 2> x = {1.0f, 2.0f};
  auto result = l.module->forward(from_blob(x.data(), {1, 2}, ScalarType::Float));
  ASSERT_TRUE(result.ok()) << etrt::last_error_message();
  EXPECT_EQ(values_of(result.get()[0]), (std::vector<float>{2.0f, 4.0f}));
}

TEST(ModuleLastError, ARefusalByExecuTorchLeavesNoStaleEtrtMessageOnceCleared) {
  Loaded l = load("kv_owned");
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  CallerCache cache;
  std::vector<float> rows = {1.0f, 2.0f};
  int64_t pos = 8;
  EXPECT_FALSE(step(*l.module, rows, pos, cache).ok());
  EXPECT_TRUE(etrt::has_last_error());

  etrt::clear_last_error();
  EXPECT_FALSE(etrt::has_last_error());
  EXPECT_STREQ(etrt::last_error_message(), "");
  // ExecuTorch refuses an input of the wrong type before the delegate runs: etrt says nothing.
  std::array<int32_t, 2> wrong = {1, 2};
  EXPECT_FALSE(l.module
                   ->forward({from_blob(wrong.data(), {1, 1, kWidth}, ScalarType::Int),
                              from_blob(&pos, {1}, ScalarType::Long),
                              from_blob(cache.data(), {1, kRows, kWidth}, ScalarType::Float)})
                   .ok());
  EXPECT_FALSE(etrt::has_last_error()) << etrt::last_error_message();
}

}  // namespace

namespace {

// ---- CUDA graphs on a host engine ----

TEST(ModuleCudaGraphs, OptionIsAcceptedAndAHostEngineRunsAsBefore) {
  Loaded l = load("kv_owned", {{etrt::kOptionCudaGraphs, true}});
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  CallerCache cache;
  for (int64_t pos = 0; pos < 3; ++pos) {
    std::vector<float> rows = {static_cast<float>(pos), 1.0f};
    ASSERT_TRUE(step(*l.module, rows, pos, cache).ok()) << etrt::last_error_message();
  }
  EXPECT_EQ(cache.values(), updated(updated(updated(CallerCache().values(), 0, {0.0f, 1.0f}), 1, {1.0f, 1.0f}), 2,
                                    {2.0f, 1.0f}));
}

// ---- what the engine's TensorRT runtime is given before deserializing ----

LoadOptions runtime_options(const char* plugin_libraries, bool host_code) {
  return {{etrt::kOptionPluginLibraries, plugin_libraries}, {etrt::kOptionEngineHostCode, host_code}};
}

TEST(ModuleRuntimeOptions, PluginLibrariesThatLoadAreLoadedAndTheProgramRuns) {
  // Any shared library that loads stands for a plugin library here (its plugins would register as it loads).
  Loaded l = load("kv_owned", runtime_options("libm.so.6::libdl.so.2", true));
  ASSERT_EQ(l.error, et::Error::Ok) << l.message;
  CallerCache cache;
  std::vector<float> rows = {1.0f, 2.0f};
  int64_t pos = 0;
  ASSERT_TRUE(step(*l.module, rows, pos, cache).ok()) << etrt::last_error_message();
  EXPECT_EQ(cache.values(), updated(CallerCache().values(), 0, {1.0f, 2.0f}));
}

TEST(ModuleRuntimeOptions, APluginLibraryThatDoesNotLoadRefusesTheProgramNamingIt) {
  Loaded l = load("kv_owned", runtime_options("libm.so.6:/nonexistent/libetrt_no_plugin.so", false));
  EXPECT_EQ(l.error, et::Error::InvalidProgram) << "as for any program refused at load";
  EXPECT_TRUE(has(l.message, "the plugin library '/nonexistent/libetrt_no_plugin.so' (load option plugin_libraries) "
                             "did not load"))
      << l.message;
  EXPECT_TRUE(has(l.message, "could not load plugin library")) << "TensorRT's reason follows: " << l.message;
}

TEST(ModuleRuntimeOptions, OptionsOfTheWrongTypeAreRefused) {
  {
    Loaded l = load("kv_owned", {{etrt::kOptionEngineHostCode, "yes"}});
    EXPECT_EQ(l.error, et::Error::InvalidArgument);
    EXPECT_TRUE(has(l.message, "load option 'engine_host_code' must be a bool, got a string")) << l.message;
  }
  Loaded l = load("kv_owned", {{etrt::kOptionPluginLibraries, true}});
  EXPECT_EQ(l.error, et::Error::InvalidArgument);
  EXPECT_TRUE(has(l.message, "load option 'plugin_libraries' must be a string, got a bool")) << l.message;
}

TEST(ModuleCudaGraphs, OptionOfTheWrongTypeIsRefused) {
  Loaded l = load("kv_owned", {{etrt::kOptionCudaGraphs, "yes"}});
  EXPECT_EQ(l.error, et::Error::InvalidArgument);
  EXPECT_TRUE(has(l.message, "load option 'cuda_graphs' must be a bool, got a string")) << l.message;
}

}  // namespace
