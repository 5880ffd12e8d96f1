// The builder: what it accepts comes back unchanged from the bytes; what is
// inconsistent is refused at build time with a message naming the problem.

#include <gtest/gtest.h>

#include "format.h"
#include "gpufree_fixtures.h"
#include "model.h"

namespace etrt::gpufree::testing {
namespace {

std::string build_error(const Builder& b) {
  std::string error;
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(b.build(&bytes, &error)) << "the build was expected to fail";
  return error;
}

TEST(GpufreeBuilder, RoundTripPreservesIoProfilesAndOptions) {
  const std::string label = test_label();
  Builder b = llm_builder(label);
  b.set_switch_cost_ns(1234).set_device_memory_size(1 << 20);
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);

  ASSERT_EQ(engine->num_io_tensors(), 2);
  EXPECT_EQ(engine->io_tensor(0).name, "ids");
  EXPECT_TRUE(engine->io_tensor(0).is_input);
  EXPECT_EQ(engine->io_tensor(0).dtype, engine::DataType::kInt64);
  EXPECT_EQ(engine->io_tensor(0).shape, make_shape({1, -1}));
  EXPECT_EQ(engine->io_tensor(1).name, "logits");
  EXPECT_FALSE(engine->io_tensor(1).is_input);
  EXPECT_EQ(engine->io_tensor(1).dtype, engine::DataType::kFloat32);
  EXPECT_EQ(engine->io_tensor(1).shape, make_shape({1, -1, 3}));

  ASSERT_EQ(engine->num_profiles(), 2);
  Shape min, opt, max;
  Diagnostic why;
  ASSERT_EQ(engine->profile_shape(kPrefill, 0, &min, &opt, &max, why), Error::Ok) << why.c_str();
  EXPECT_EQ(min, make_shape({1, 2}));
  EXPECT_EQ(opt, make_shape({1, 4}));
  EXPECT_EQ(max, make_shape({1, 8}));
  ASSERT_EQ(engine->profile_shape(kDecode, 0, &min, &opt, &max, why), Error::Ok) << why.c_str();
  EXPECT_EQ(max, make_shape({1, 1}));
  EXPECT_EQ(engine->profile_shape(kDecode, 1, &min, &opt, &max, why), Error::InvalidArgument)
      << "outputs have no profile bounds";
  EXPECT_EQ(engine->profile_shape(2, 0, &min, &opt, &max, why), Error::InvalidArgument);

  EXPECT_EQ(engine->device_memory_size(), size_t{1} << 20);
  EXPECT_EQ(engine->memory_kind(), engine::MemoryKind::kHost);

  // The label and the switch cost are not part of the seam: they show in the trace, which is filed under the label.
  std::vector<TraceEvent> loads = events_of(label, TraceKind::kLoadEngine);
  ASSERT_EQ(loads.size(), 1u) << dump(label);
  EXPECT_EQ(loads[0].size, uint64_t{1} << 20);
  std::unique_ptr<ExecutionContext> context = new_context(*engine);
  ASSERT_NE(context, nullptr);
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  std::vector<TraceEvent> switches = events_of(label, TraceKind::kSetOptimizationProfile);
  ASSERT_EQ(switches.size(), 1u) << dump(label);
  EXPECT_EQ(switches[0].switch_cost_ns, 1234);
  EXPECT_EQ(switches[0].engine_id, loads[0].engine_id);
  clear_trace(label);
}

TEST(GpufreeBuilder, RoundTripPreservesTheTracingFlag) {
  const std::string label = test_label();
  Builder b = llm_builder(label);
  b.set_tracing(false);
  std::unique_ptr<Engine> quiet = load(build_or_fail(b));
  ASSERT_NE(quiet, nullptr);
  std::unique_ptr<ExecutionContext> context = new_context(*quiet);
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  ASSERT_EQ(context->set_optimization_profile(kPrefill, nullptr, why), Error::Ok) << why.c_str();
  EXPECT_TRUE(trace_events(label).empty()) << dump(label);

  b.set_tracing(true);
  std::unique_ptr<Engine> loud = load(build_or_fail(b));
  ASSERT_NE(loud, nullptr);
  EXPECT_EQ(events_of(label, TraceKind::kLoadEngine).size(), 1u) << dump(label);
  clear_trace(label);
}

TEST(GpufreeBuilder, BuildIsDeterministic) {
  EXPECT_EQ(build_or_fail(llm_builder("same")), build_or_fail(llm_builder("same")));
}

TEST(GpufreeBuilder, BytesStartWithTheGpufreeMagicAndVersion) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  ASSERT_GE(bytes.size(), kHeaderSize);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "ETRF");
  EXPECT_EQ(bytes[4], kFormatVersion);
  EXPECT_TRUE(is_gpufree_engine(bytes.data(), bytes.size()));
}

TEST(GpufreeBuilder, FullyStaticEngineGetsOneImplicitProfile) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2, 3}))
      .add_output("y", DataType::kFloat32, make_shape({2, 3}))
      .identity("x", "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->num_profiles(), 1);
  Shape min, opt, max;
  Diagnostic why;
  ASSERT_EQ(engine->profile_shape(0, 0, &min, &opt, &max, why), Error::Ok) << why.c_str();
  EXPECT_EQ(min, make_shape({2, 3}));
  EXPECT_EQ(opt, make_shape({2, 3}));
  EXPECT_EQ(max, make_shape({2, 3}));
}

TEST(GpufreeBuilder, RefusesDynamicInputWithoutProfile) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1})).add_output("y", DataType::kFloat32, make_shape({-1}));
  b.identity("x", "y");
  EXPECT_NE(build_error(b).find("input 'x' [-1] has dynamic dims"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesProfileWithoutBoundsForADynamicInput) {
  Builder b = llm_builder(test_label());
  b.add_profile();
  EXPECT_NE(build_error(b).find("profile 2 has no bounds for input 'ids'"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesBoundsForAProfileNotAdded) {
  Builder b = llm_builder(test_label());
  b.set_profile_shape(5, "ids", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}));
  EXPECT_NE(build_error(b).find("set_profile_shape(5, 'ids'): no such profile"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesProfileThatContradictsAStaticDim) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2, -1})).add_output("y", DataType::kFloat32, make_shape({2, -1}));
  b.set_profile_shape(b.add_profile(), "x", make_shape({3, 1}), make_shape({3, 1}), make_shape({3, 4}));
  b.identity("x", "y");
  const std::string error = build_error(b);
  EXPECT_NE(error.find("input 'x' dim 0: declared static 2 but the profile says min 3"), std::string::npos) << error;
}

TEST(GpufreeBuilder, RefusesProfileWithMinAboveMax) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1})).add_output("y", DataType::kFloat32, make_shape({-1}));
  b.set_profile_shape(b.add_profile(), "x", make_shape({8}), make_shape({8}), make_shape({4}));
  b.identity("x", "y");
  EXPECT_NE(build_error(b).find("needs min <= opt <= max, got 8 <= 8 <= 4"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesProfileBoundsOfTheWrongRank) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1})).add_output("y", DataType::kFloat32, make_shape({-1}));
  b.set_profile_shape(b.add_profile(), "x", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}));
  b.identity("x", "y");
  EXPECT_NE(build_error(b).find("declared rank 1"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesOpReadingAnUnknownTensor) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  b.identity("nope", "y");
  EXPECT_NE(build_error(b).find("reads 'nope', which is not a tensor"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesOpWritingAnInput) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  b.scale("x", 2.0f, "x").identity("x", "y");
  EXPECT_NE(build_error(b).find("writes 'x', which is not an output or intermediate"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesTensorWrittenTwice) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  b.identity("x", "y").scale("x", 2.0f, "y");
  EXPECT_NE(build_error(b).find("writes 'y', which another op already wrote"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesOutputNoOpWrites) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  EXPECT_NE(build_error(b).find("output 'y' is never written"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesFloatOpOnIntegerTensor) {
  Builder b(test_label());
  b.add_input("x", DataType::kInt64, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  b.scale("x", 2.0f, "y");
  EXPECT_NE(build_error(b).find("input 'x' must be float32"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesOutputWhoseDtypeDiffersFromWhatTheOpProduces) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kInt32, make_shape({2}));
  b.scale("x", 2.0f, "y");
  EXPECT_NE(build_error(b).find("produces float32 but 'y' is int32"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesMatMulWhoseInnerDimsDisagree) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({-1, 3})).add_output("y", DataType::kFloat32, make_shape({-1, 2}));
  b.set_profile_shape(b.add_profile(), "x", make_shape({1, 3}), make_shape({2, 3}), make_shape({4, 3}));
  b.add_constant("w", make_shape({4, 2}), std::vector<float>(8, 1.0f)).matmul("x", "w", "y");
  const std::string error = build_error(b);
  EXPECT_NE(error.find("profile 0 (min shapes)"), std::string::npos) << error;
  EXPECT_NE(error.find("must end in K = 4"), std::string::npos) << error;
}

TEST(GpufreeBuilder, RefusesDeclaredOutputShapeTheOpsDoNotProduce) {
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2, 3})).add_output("y", DataType::kFloat32, make_shape({2, 5}));
  b.add_constant("w", make_shape({3, 4}), std::vector<float>(12, 1.0f)).matmul("x", "w", "y");
  EXPECT_NE(build_error(b).find("produces [2, 4] but output 'y' is declared [2, 5]"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesAddOfInputsWhoseProfilesDisagree) {
  Builder b(test_label());
  b.add_input("a", DataType::kFloat32, make_shape({-1}))
      .add_input("b", DataType::kFloat32, make_shape({-1}))
      .add_output("y", DataType::kFloat32, make_shape({-1}));
  const int32_t p = b.add_profile();
  b.set_profile_shape(p, "a", make_shape({1}), make_shape({2}), make_shape({4}))
      .set_profile_shape(p, "b", make_shape({1}), make_shape({2}), make_shape({8}))
      .add("a", "b", "y");
  EXPECT_NE(build_error(b).find("profile 0 (max shapes)"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesConstantWithTheWrongNumberOfValues) {
  Builder b = llm_builder(test_label());
  b.add_constant("extra", make_shape({2, 2}), {1.0f, 2.0f, 3.0f});
  EXPECT_NE(build_error(b).find("constant 'extra' of shape [2, 2] needs 4 values, got 3"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesEmbeddingTableThatIsNotAConstant) {
  Builder b(test_label());
  b.add_input("ids", DataType::kInt64, make_shape({2}))
      .add_input("t", DataType::kFloat32, make_shape({4, 2}))
      .add_output("y", DataType::kFloat32, make_shape({2, 2}))
      .embedding("ids", "t", "y");
  EXPECT_NE(build_error(b).find("table 't' must be a constant of shape [V, H]"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesDuplicateNames) {
  Builder b = llm_builder(test_label());
  b.add_constant("ids", make_shape({1}), {1.0f});
  EXPECT_NE(build_error(b).find("tensor name 'ids' is used twice"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesEmptyLabel) {
  Builder b = llm_builder("");
  EXPECT_NE(build_error(b).find("no label"), std::string::npos);
}

TEST(GpufreeBuilder, RefusesNegativeSwitchCost) {
  Builder b = llm_builder(test_label());
  b.set_switch_cost_ns(-1);
  EXPECT_NE(build_error(b).find("switch cost -1 ns"), std::string::npos);
}

// ---- the limits of docs/limits.md hold for built engines as for loaded ones ----

TEST(GpufreeBuilder, ScratchIsCappedAt64GiBAtBuildTimeNotWhenAContextAllocatesIt) {
  Builder b = llm_builder(test_label());
  b.set_device_memory_size(uint64_t{1} << 40);
  EXPECT_NE(build_error(b).find("device memory size 1099511627776 is above the limit 68719476736"), std::string::npos);
  b.set_device_memory_size(uint64_t{64} << 30);
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr) << "exactly the limit loads (a context would then ask for all of it)";
  EXPECT_EQ(engine->device_memory_size(), size_t{64} << 30);
}

TEST(GpufreeBuilder, RefusesNamesNoCallerCouldUse) {
  Builder nul(test_label());
  nul.add_input(std::string("x\0y", 3), DataType::kFloat32, make_shape({2}))
      .add_output("y", DataType::kFloat32, make_shape({2}))
      .identity(std::string("x\0y", 3), "y");
  const std::string error = build_error(nul);
  EXPECT_NE(error.find("tensor #0 name 'x\\x00y' contains a NUL byte"), std::string::npos) << error;
  EXPECT_EQ(error.find('\0'), std::string::npos) << "the message is whole";
  Builder long_name(test_label());
  long_name.add_input(std::string(kMaxNameLength + 1, 'x'), DataType::kFloat32, make_shape({2}))
      .add_output("y", DataType::kFloat32, make_shape({2}))
      .identity(std::string(kMaxNameLength + 1, 'x'), "y");
  EXPECT_NE(build_error(long_name).find("tensor #0 name is 4097 bytes long, above the limit of 4096"),
            std::string::npos);
  Builder bad_utf8("lab\xff");
  bad_utf8.add_input("x", DataType::kFloat32, make_shape({2}))
      .add_output("y", DataType::kFloat32, make_shape({2}))
      .identity("x", "y");
  EXPECT_NE(build_error(bad_utf8).find("the label 'lab\\xff' is not valid UTF-8"), std::string::npos);
}

TEST(GpufreeBuilder, BuildsTenThousandsOfOpsInLinearTime) {
  // 16384 chained ops, each resolving its operands by name: a hash map, not a scan of every tensor per operand.
  Builder b(test_label());
  b.add_input("x", DataType::kFloat32, make_shape({2})).add_output("y", DataType::kFloat32, make_shape({2}));
  std::string previous = "x";
  for (int k = 0; k < 16383; ++k) {
    const std::string next = "t" + std::to_string(k);
    b.scale(previous, 0.5f, next);
    previous = next;
  }
  b.scale(previous, 0.5f, "y");
  std::unique_ptr<Engine> engine = load(build_or_fail(b));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->num_io_tensors(), 2);
}

}  // namespace
}  // namespace etrt::gpufree::testing
