// Proves that .pte files written by etrt's packer (python/etrt/pte/, run at
// build time through cmake/pte.cmake) load and run in ExecuTorch's real
// runtime through executorch::extension::Module, against a tiny backend
// registered in ExecuTorch's real backend registry.
//
// EtrtTestAddOne: blob must start with "ETRT_TEST_ADD_ONE"; args are
// [in, out] (out = in + 1) or [in, Int n, out] (out = in + n). The output is
// resized to the input's shape with executorch::runtime::resize_tensor.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>
#include <executorch/runtime/platform/runtime.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#ifndef ETRT_TEST_PTE_DIR
#error "ETRT_TEST_PTE_DIR must name the directory holding the generated .pte files"
#endif

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::aten::SizesType;
using ::executorch::aten::Tensor;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr char kBackendName[] = "EtrtTestAddOne";
constexpr char kBlobMagic[] = "ETRT_TEST_ADD_ONE";

// What init() saw, for the tests to check that blobs and compile specs made
// it through the file.
struct InitRecord {
  std::string method;
  std::string blob;
  std::vector<std::pair<std::string, std::string>> specs;
};
std::mutex g_mu;
std::vector<InitRecord> g_inits;
int g_destroyed = 0;

struct Handle {
  float unused = 0.0f;
};

class AddOneBackend final : public et::BackendInterface {
 public:
  bool is_available() const override { return true; }

  et::Result<et::DelegateHandle*> init(et::BackendInitContext& context, et::FreeableBuffer* processed,
                                       et::ArrayRef<et::CompileSpec> compile_specs) const override {
    const auto* data = static_cast<const char*>(processed->data());
    std::string blob(data, data + processed->size());
    if (blob.compare(0, sizeof(kBlobMagic) - 1, kBlobMagic) != 0) {
      ET_LOG(Error, "EtrtTestAddOne: blob does not start with %s", kBlobMagic);
      return et::Error::InvalidProgram;
    }
    InitRecord rec;
    rec.method = context.get_method_name() ? context.get_method_name() : "";
    rec.blob = std::move(blob);
    for (const auto& spec : compile_specs) {
      const auto* v = static_cast<const char*>(spec.value.buffer);
      rec.specs.emplace_back(spec.key, std::string(v, v + spec.value.nbytes));
    }
    {
      std::lock_guard<std::mutex> lock(g_mu);
      g_inits.push_back(std::move(rec));
    }
    processed->Free();  // everything needed is copied out
    auto* handle = context.get_runtime_allocator()->allocateInstance<Handle>();
    if (handle == nullptr) {
      return et::Error::MemoryAllocationFailed;
    }
    new (handle) Handle();
    return handle;
  }

  et::Error execute(et::BackendExecutionContext& /*context*/, et::DelegateHandle* handle,
                    et::Span<et::EValue*> args) const override {
    if (handle == nullptr || (args.size() != 2 && args.size() != 3)) {
      return et::Error::InvalidArgument;
    }
    float increment = 1.0f;
    if (args.size() == 3) {
      if (!args[1]->isInt()) {
        return et::Error::InvalidArgument;
      }
      increment = static_cast<float>(args[1]->toInt());
    }
    if (!args[0]->isTensor() || !args[args.size() - 1]->isTensor()) {
      return et::Error::InvalidArgument;
    }
    const Tensor& in = args[0]->toTensor();
    Tensor& out = args[args.size() - 1]->toTensor();
    if (in.scalar_type() != ScalarType::Float || out.scalar_type() != ScalarType::Float) {
      return et::Error::InvalidArgument;
    }
    const et::Error resized = et::resize_tensor(out, in.sizes());
    if (resized != et::Error::Ok) {
      return resized;
    }
    const float* src = in.const_data_ptr<float>();
    float* dst = out.mutable_data_ptr<float>();
    if (src == nullptr || dst == nullptr) {
      return et::Error::InvalidState;
    }
    for (ssize_t i = 0; i < in.numel(); ++i) {
      dst[i] = src[i] + increment;
    }
    return et::Error::Ok;
  }

  void destroy(et::DelegateHandle* handle) const override {
    if (handle != nullptr) {
      static_cast<Handle*>(handle)->~Handle();
      std::lock_guard<std::mutex> lock(g_mu);
      ++g_destroyed;
    }
  }
};

AddOneBackend g_backend;
const et::Error g_registered = et::register_backend(et::Backend{kBackendName, &g_backend});

std::string pte_path(const char* name) { return std::string(ETRT_TEST_PTE_DIR) + "/" + name; }

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = start + static_cast<float>(i);
  }
  return v;
}

std::vector<SizesType> sizes_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

std::vector<float> values_of(const Tensor& t) {
  const float* p = t.const_data_ptr<float>();
  return {p, p + t.numel()};
}

std::vector<float> plus(const std::vector<float>& v, float d) {
  std::vector<float> out(v);
  for (auto& x : out) {
    x += d;
  }
  return out;
}

class PteModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    et::runtime_init();
    ASSERT_EQ(g_registered, et::Error::Ok);
    std::lock_guard<std::mutex> lock(g_mu);
    g_inits.clear();
  }
  static std::vector<InitRecord> inits() {
    std::lock_guard<std::mutex> lock(g_mu);
    return g_inits;
  }
  std::string write_temp(const std::string& name, const std::string& bytes) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string path = ::testing::TempDir() + "etrt_pte_" + info->name() + "_" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    temp_files_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : temp_files_) {
      std::remove(p.c_str());
    }
  }

 private:
  std::vector<std::string> temp_files_;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void expect_add_one_runs(Module& module) {
  // [1,3] inside the [1,8] bound: output resized to [1,3].
  auto in_vals = iota_floats(3, 0.5f);
  auto x = from_blob(in_vals.data(), {1, 3});
  auto result = module.forward(x);
  ASSERT_TRUE(result.ok()) << "forward failed: 0x" << std::hex << static_cast<int>(result.error());
  ASSERT_EQ(result->size(), 1u);
  ASSERT_TRUE(result->at(0).isTensor());
  const Tensor& y = result->at(0).toTensor();
  EXPECT_EQ(y.scalar_type(), ScalarType::Float);
  EXPECT_EQ(sizes_of(y), (std::vector<SizesType>{1, 3}));
  EXPECT_EQ(values_of(y), plus(in_vals, 1.0f));
}

TEST_F(PteModuleTest, DynamicInputBelowBoundRunsAndResizesOutput) {
  Module module(pte_path("add_one.pte"));
  ASSERT_EQ(module.load(), et::Error::Ok);
  expect_add_one_runs(module);

  // Up to the full bound, then back down: the output follows every time.
  for (SizesType n : {8, 1, 5}) {
    auto vals = iota_floats(static_cast<size_t>(n), -2.0f);
    auto x = from_blob(vals.data(), {1, n});
    auto result = module.forward(x);
    ASSERT_TRUE(result.ok()) << "n=" << n;
    const Tensor& y = result->at(0).toTensor();
    EXPECT_EQ(sizes_of(y), (std::vector<SizesType>{1, n}));
    EXPECT_EQ(values_of(y), plus(vals, 1.0f));
  }
}

TEST_F(PteModuleTest, SegmentBlobAndCompileSpecsReachInit) {
  Module module(pte_path("add_one.pte"));
  ASSERT_EQ(module.load_method("forward"), et::Error::Ok);
  auto recs = inits();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].method, "forward");
  EXPECT_EQ(recs[0].blob, read_file(std::string(ETRT_TEST_SPEC_DIR) + "/add_one.blob"));
  ASSERT_EQ(recs[0].specs.size(), 2u);
  EXPECT_EQ(recs[0].specs[0], (std::pair<std::string, std::string>{"note", "hello"}));
  EXPECT_EQ(recs[0].specs[1], (std::pair<std::string, std::string>{"raw", std::string("\x00\xff\x10", 3)}));
}

TEST_F(PteModuleTest, InlineDelegateDataLoadsAndRuns) {
  Module module(pte_path("add_one_inline.pte"));
  ASSERT_EQ(module.load(), et::Error::Ok);
  expect_add_one_runs(module);
  auto recs = inits();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].blob, read_file(std::string(ETRT_TEST_SPEC_DIR) + "/add_one.blob"));
  ASSERT_EQ(recs[0].specs.size(), 2u);
}

TEST_F(PteModuleTest, MethodMetaMatchesThePackedPlan) {
  Module module(pte_path("add_one.pte"));
  auto names = module.method_names();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::unordered_set<std::string>{"forward"}));
  auto meta = module.method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->num_inputs(), 1u);
  EXPECT_EQ(meta->num_outputs(), 1u);
  auto in = meta->input_tensor_meta(0);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->scalar_type(), ScalarType::Float);
  EXPECT_EQ(std::vector<SizesType>(in->sizes().begin(), in->sizes().end()), (std::vector<SizesType>{1, 8}));
  EXPECT_TRUE(in->is_memory_planned());
  EXPECT_EQ(in->nbytes(), 32u);
  auto out = meta->output_tensor_meta(0);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->is_memory_planned());
  // One planned buffer (memory_id 1): x at 0 and y at 32, 32 bytes each.
  ASSERT_EQ(meta->num_memory_planned_buffers(), 1u);
  auto size = meta->memory_planned_buffer_size(0);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 64);
  EXPECT_EQ(meta->num_backends(), 1u);
  auto backend = meta->get_backend_name(0);
  ASSERT_TRUE(backend.ok());
  EXPECT_STREQ(*backend, kBackendName);
}

TEST_F(PteModuleTest, TwoDelegateCallsInSequenceWithIntArgument) {
  Module module(pte_path("chain.pte"));
  ASSERT_EQ(module.load(), et::Error::Ok);
  // forward: x -> +1 -> t -> +5 (Int value n) -> y
  auto vals = iota_floats(6, 1.0f);
  auto x = from_blob(vals.data(), {2, 3});
  auto result = module.forward(x);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->size(), 1u);
  const Tensor& y = result->at(0).toTensor();
  EXPECT_EQ(sizes_of(y), (std::vector<SizesType>{2, 3}));
  EXPECT_EQ(values_of(y), plus(vals, 6.0f));
  EXPECT_EQ(inits().size(), 2u);
}

TEST_F(PteModuleTest, SecondMethodRunsPlusOneTwiceAndReturnsTheIntermediate) {
  Module module(pte_path("chain.pte"));
  auto names = module.method_names();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::unordered_set<std::string>{"forward", "twice"}));
  auto vals = iota_floats(4, 10.0f);
  auto x = from_blob(vals.data(), {1, 4});
  auto result = module.execute("twice", x);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->size(), 2u);
  EXPECT_EQ(sizes_of(result->at(0).toTensor()), (std::vector<SizesType>{1, 4}));
  EXPECT_EQ(values_of(result->at(0).toTensor()), plus(vals, 1.0f));
  EXPECT_EQ(values_of(result->at(1).toTensor()), plus(vals, 2.0f));
}

TEST_F(PteModuleTest, StaticShapeRunsAndRefusesOtherShapes) {
  Module module(pte_path("static.pte"));
  auto meta = module.method_meta("forward");
  ASSERT_TRUE(meta.ok());
  auto vals = iota_floats(8, 0.0f);
  auto x = from_blob(vals.data(), {2, 4});
  auto result = module.forward(x);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(sizes_of(result->at(0).toTensor()), (std::vector<SizesType>{2, 4}));
  EXPECT_EQ(values_of(result->at(0).toTensor()), plus(vals, 1.0f));

  // Same numel, different shape: a STATIC input cannot be resized.
  auto y = from_blob(vals.data(), {4, 2});
  EXPECT_FALSE(module.forward(y).ok());
  auto small = from_blob(vals.data(), {1, 3});
  EXPECT_FALSE(module.forward(small).ok());
  // And the method still works afterwards.
  EXPECT_TRUE(module.forward(x).ok());
}

TEST_F(PteModuleTest, InputAboveUpperBoundFailsCleanly) {
  Module module(pte_path("add_one.pte"));
  ASSERT_EQ(module.load_method("forward"), et::Error::Ok);
  auto vals = iota_floats(18, 0.0f);
  auto too_long = from_blob(vals.data(), {1, 9});
  auto r1 = module.forward(too_long);
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.error(), et::Error::Ok);
  auto too_many_rows = from_blob(vals.data(), {2, 9});
  EXPECT_FALSE(module.forward(too_many_rows).ok());
  auto wrong_rank = from_blob(vals.data(), {1, 1, 9});
  EXPECT_FALSE(module.forward(wrong_rank).ok());
  // The method is still usable.
  expect_add_one_runs(module);
}

TEST_F(PteModuleTest, RuntimeChecksOnlyTheNumelBoundNotEachDimension) {
  // A fact the backend must live with (executorch issue #20546): an input of
  // [2,4] passes a [1,8] DYNAMIC_BOUND input because 8 <= 8 elements.
  // Per-dimension checks are the delegate's job.
  Module module(pte_path("add_one.pte"));
  auto vals = iota_floats(8, 0.0f);
  auto x = from_blob(vals.data(), {2, 4});
  auto result = module.forward(x);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(sizes_of(result->at(0).toTensor()), (std::vector<SizesType>{2, 4}));
  EXPECT_EQ(values_of(result->at(0).toTensor()), plus(vals, 1.0f));
}

TEST_F(PteModuleTest, WrongDtypeFailsCleanly) {
  Module module(pte_path("add_one.pte"));
  std::vector<int32_t> ints{1, 2, 3};
  auto x = from_blob(ints.data(), {1, 3}, ScalarType::Int);
  EXPECT_FALSE(module.forward(x).ok());
}

TEST_F(PteModuleTest, UnplannedInputIsSharedAndUnplannedOutputNeedsSetOutput) {
  Module module(pte_path("unplanned.pte"));
  auto meta = module.method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_FALSE(meta->input_tensor_meta(0)->is_memory_planned());
  EXPECT_FALSE(meta->output_tensor_meta(0)->is_memory_planned());
  EXPECT_EQ(meta->num_memory_planned_buffers(), 0u);

  auto vals = iota_floats(3, 1.0f);
  auto x = from_blob(vals.data(), {1, 3});
  // No output memory bound: the delegate sees a null output and refuses.
  EXPECT_FALSE(module.forward(x).ok());

  std::vector<float> out_storage(8, -1.0f);
  auto out = from_blob(out_storage.data(), {1, 8});
  ASSERT_EQ(module.set_output(out), et::Error::Ok);
  auto result = module.forward(x);
  ASSERT_TRUE(result.ok());
  const Tensor& y = result->at(0).toTensor();
  EXPECT_EQ(y.const_data_ptr<float>(), out_storage.data());
  EXPECT_EQ(sizes_of(y), (std::vector<SizesType>{1, 3}));
  EXPECT_EQ(values_of(y), plus(vals, 1.0f));
}

TEST_F(PteModuleTest, UnregisteredBackendFailsAtMethodLoad) {
  Module module(pte_path("unknown_backend.pte"));
  ASSERT_EQ(module.load(), et::Error::Ok);
  EXPECT_EQ(module.load_method("forward"), et::Error::NotFound);
  std::vector<float> vals{1, 2};
  auto x = from_blob(vals.data(), {2});
  EXPECT_FALSE(module.forward(x).ok());
}

TEST_F(PteModuleTest, GarbageFileFailsToLoad) {
  std::string garbage(4096, '\0');
  uint32_t state = 12345;
  for (auto& c : garbage) {
    state = state * 1664525u + 1013904223u;
    c = static_cast<char>(state >> 24);
  }
  Module module(write_temp("garbage.pte", garbage));
  EXPECT_NE(module.load(), et::Error::Ok);
  EXPECT_FALSE(module.is_loaded());
  std::vector<float> vals{1};
  EXPECT_FALSE(module.forward(from_blob(vals.data(), {1, 1})).ok());

  Module missing(write_temp("unused", "") + ".does-not-exist");
  EXPECT_NE(missing.load(), et::Error::Ok);

  Module text(write_temp("text.pte", "this is not a program, just some text that is long enough "
                                     "to hold a header and then some more bytes"));
  EXPECT_NE(text.load(), et::Error::Ok);
}

TEST_F(PteModuleTest, TruncatedSegmentFileFailsToLoad) {
  // The extended header records the file size; the runtime checks it.
  const std::string full = read_file(pte_path("add_one.pte"));
  ASSERT_GT(full.size(), 128u);
  ASSERT_EQ(full.compare(8, 4, "eh00"), 0);
  Module module(write_temp("truncated.pte", full.substr(0, full.size() - 1)));
  EXPECT_NE(module.load(), et::Error::Ok);
}

TEST_F(PteModuleTest, TruncatedInlineFileFailsVerification) {
  // Without segments there is no recorded size; the flatbuffer verifier
  // (Verification::InternalConsistency) catches the truncation.
  const std::string full = read_file(pte_path("add_one_inline.pte"));
  ASSERT_NE(full.compare(8, 4, "eh00"), 0);
  for (size_t cut : {full.size() / 2, full.size() - 16}) {
    Module module(write_temp("truncated_inline.pte", full.substr(0, cut)));
    EXPECT_NE(module.load(et::Program::Verification::InternalConsistency), et::Error::Ok) << cut;
  }
  Module intact(pte_path("add_one_inline.pte"));
  EXPECT_EQ(intact.load(et::Program::Verification::InternalConsistency), et::Error::Ok);
}

TEST_F(PteModuleTest, DelegatesAreDestroyedWithTheModule) {
  int before = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    before = g_destroyed;
  }
  {
    Module module(pte_path("chain.pte"));
    ASSERT_EQ(module.load_method("forward"), et::Error::Ok);
    ASSERT_EQ(module.load_method("twice"), et::Error::Ok);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  EXPECT_EQ(g_destroyed - before, 4);
}

}  // namespace
