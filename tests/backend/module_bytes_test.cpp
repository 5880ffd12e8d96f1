// The bytes etrt copies (etrt/options.h kCounter*Bytes, etrt::ExecutionRecord), through ExecuTorch's Module and the
// GPU-free NvInfer's host engines: a host engine moves nothing between host and device, stages only what breaks
// TensorRT's 256-byte alignment rule (realigned_bytes, in and back), and copies an updated cache or state to where it
// is kept (write_back_bytes). Each execution's record and the process-wide counters say the same.

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "etrt/c_api.h"
#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt_gpufree/faults.h"
#include "fixtures.h"
#include "module_suite.h"

namespace etrt::module_test {
namespace {

// The four byte counters, as the C ABI gives them (64-bit) and as get_option gives them (int).
struct Bytes {
  int64_t host_to_device = 0;
  int64_t device_to_host = 0;
  int64_t realigned = 0;
  int64_t write_back = 0;
  bool operator==(const Bytes& o) const {
    return host_to_device == o.host_to_device && device_to_host == o.device_to_host && realigned == o.realigned &&
           write_back == o.write_back;
  }
  Bytes operator-(const Bytes& o) const {
    return {host_to_device - o.host_to_device, device_to_host - o.device_to_host, realigned - o.realigned,
            write_back - o.write_back};
  }
};
std::ostream& operator<<(std::ostream& os, const Bytes& b) {
  return os << "{host_to_device " << b.host_to_device << ", device_to_host " << b.device_to_host << ", realigned "
            << b.realigned << ", write_back " << b.write_back << "}";
}

constexpr const char* kNames[] = {kCounterHostToDeviceBytes, kCounterDeviceToHostBytes, kCounterRealignedBytes,
                                  kCounterWriteBackBytes};

Bytes from_c_abi() {
  int64_t v[4] = {};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(etrt_counter(kNames[i], &v[i]), ETRT_OK) << kNames[i];
  return {v[0], v[1], v[2], v[3]};
}

Bytes from_get_option() {
  et::BackendOption options[4];
  for (int i = 0; i < 4; ++i) std::snprintf(options[i].key, sizeof(options[i].key), "%s", kNames[i]);
  EXPECT_EQ(et::get_option(kBackendId, et::Span<et::BackendOption>(options, 4)), et::Error::Ok);
  return {std::get<int>(options[0].value), std::get<int>(options[1].value), std::get<int>(options[2].value),
          std::get<int>(options[3].value)};
}

Bytes of(const ExecutionRecord& r) {
  return {r.host_to_device_bytes, r.device_to_host_bytes, r.realigned_bytes, r.write_back_bytes};
}

// ---- unplanned_io: input_ids [1, n] (int64) -> logits [1, n, H], in the runner's own buffers ----

class CopiedBytesTest : public ::testing::Test {
 protected:
  static constexpr size_t kMaxTokens = 2048;
  static constexpr size_t kH = static_cast<size_t>(fixtures::kHidden);

  void SetUp() override {
    module_ = load_module(module_test::fixture("unplanned_io"), Strategy::kSwitch);
    ids_ = aligned_buffer<int64_t>(kMaxTokens + 64);
    out_ = aligned_buffer<float>(kMaxTokens * kH + 64);
  }

  // One forward of `ids`, the input `in_offset` and the output `out_offset` bytes past a 256-byte boundary; returns
  // the execution's record.
  ExecutionRecord run(const std::vector<int64_t>& ids, size_t in_offset, size_t out_offset) {
    auto* in = reinterpret_cast<int64_t*>(reinterpret_cast<char*>(ids_.get()) + in_offset);
    auto* out = reinterpret_cast<float*>(reinterpret_cast<char*>(out_.get()) + out_offset);
    for (size_t i = 0; i < ids.size(); ++i) in[i] = ids[i];
    EXPECT_EQ(module_->set_output(
                  from_blob(out, {1, static_cast<int32_t>(kMaxTokens), static_cast<int32_t>(kH)}, ScalarType::Float)),
              et::Error::Ok);
    ExecutionReport report;
    expect_logits(read_output(module_->forward(from_blob(in, {1, static_cast<int32_t>(ids.size())}, ScalarType::Long))),
                  ids);
    EXPECT_EQ(report.entries().size(), 1u);
    return report.entries().size() == 1 ? report.entries()[0] : ExecutionRecord{};
  }

  std::unique_ptr<Module> module_;
  AlignedBuffer<int64_t> ids_;
  AlignedBuffer<float> out_;
};

// A host engine reaches host memory as an integrated GPU does (binding_policy.h): aligned host memory is bound where
// it is, no byte moves.
TEST_F(CopiedBytesTest, AHostEngineBindsAlignedHostMemoryInPlaceAndCopiesNothing) {
  const Bytes before = from_c_abi();
  const ExecutionRecord first = run({3}, 0, 0);
  const void* bound_ids = nullptr;
  for (const auto& e : events_of("unplanned_io", gpufree::TraceKind::kSetTensorAddress, true))
    if (e.io_index == 0) bound_ids = e.address;
  EXPECT_EQ(bound_ids, ids_.get()) << trace_text("unplanned_io");
  const ExecutionRecord repeated = run({4}, 0, 0);  // the repeat fast path
  EXPECT_EQ(of(first), Bytes{});
  EXPECT_EQ(of(repeated), Bytes{});
  EXPECT_EQ(from_c_abi() - before, Bytes{});
}

TEST_F(CopiedBytesTest, AHostEngineMovesNoByteBetweenHostAndDeviceAndRealignsAnUnalignedInput) {
  const Bytes before = from_c_abi();
  const Bytes before_option = from_get_option();
  const ExecutionRecord r = run(token_ids(40), /*in_offset=*/8, /*out_offset=*/0);
  // ExecuTorch plans 16-byte alignment; TensorRT wants 256: the 40 ids go through the input's staging buffer.
  const Bytes want{0, 0, 40 * 8, 0};
  EXPECT_EQ(of(r), want);
  EXPECT_EQ(from_c_abi() - before, want);
  EXPECT_EQ(from_get_option() - before_option, want);
}

TEST_F(CopiedBytesTest, AnUnalignedOutputIsCopiedBackAndCounted) {
  const Bytes before = from_c_abi();
  const ExecutionRecord r = run({5}, 0, /*out_offset=*/16);
  const Bytes want{0, 0, static_cast<int64_t>(kH * sizeof(float)), 0};
  EXPECT_EQ(of(r), want);
  EXPECT_EQ(from_c_abi() - before, want);
}

TEST_F(CopiedBytesTest, AFailedExecutionCountsWhatItCopiedAndNoExecution) {
  run({1}, 8, 0);
  const Bytes before = from_c_abi();
  ExecutionReport report;
  auto* in = reinterpret_cast<int64_t*>(reinterpret_cast<char*>(ids_.get()) + 8);
  in[0] = 2;
  gpufree::inject_fault(gpufree::Call::kEnqueueV3);
  EXPECT_NE(module_->forward(from_blob(in, {1, 1}, ScalarType::Long)).error(), et::Error::Ok);
  gpufree::clear_faults();
  ASSERT_EQ(report.entries().size(), 1u);
  EXPECT_FALSE(report.entries()[0].ok);
  EXPECT_EQ(of(report.entries()[0]), (Bytes{0, 0, 8, 0})) << "the input was staged before the enqueue failed";
  EXPECT_EQ(from_c_abi() - before, (Bytes{0, 0, 8, 0}));
}

// ---- write-backs: kv fixtures (x [1, n, 2], pos [1], cache [1, 8, 2] -> y, cache_out in place) and state_acc ----

constexpr int64_t kCacheBytes = 8 * 2 * sizeof(float);

// One kv step (`rows` written at `pos`) into a 256-byte-aligned cache of the caller's `offset` bytes on; its record.
ExecutionRecord kv_step(Module& module, size_t offset) {
  AlignedBuffer<char> memory = aligned_buffer<char>(1024);
  auto* cache = reinterpret_cast<float*>(memory.get() + offset);
  for (size_t i = 0; i < 16; ++i) cache[i] = 0.0f;
  // x and pos aligned too, so that only the cache decides what is staged.
  AlignedBuffer<float> rows = aligned_buffer<float>(2);
  rows[0] = 1.0f;
  rows[1] = 2.0f;
  AlignedBuffer<int64_t> pos = aligned_buffer<int64_t>(1);
  pos[0] = 3;
  ExecutionReport report;
  auto result =
      module.forward({from_blob(rows.get(), {1, 1, 2}, ScalarType::Float), from_blob(pos.get(), {1}, ScalarType::Long),
                      from_blob(cache, {1, 8, 2}, ScalarType::Float)});
  EXPECT_TRUE(result.ok()) << last_error_message();
  EXPECT_EQ(cache[6], 1.0f) << "the cache was updated in place";
  EXPECT_EQ(report.entries().size(), 1u);
  return report.entries().size() == 1 ? report.entries()[0] : ExecutionRecord{};
}

TEST(CopiedBytes, ACacheUpdatedInPlaceIsCopiedWholeIntoTheWriteBackOutputAndNowhereWithout) {
  auto write_back = load_module(module_test::fixture("kv_write_back"), Strategy::kSwitch);
  auto owned = load_module(module_test::fixture("kv_owned"), Strategy::kSwitch);
  const ExecutionRecord passed = kv_step(*write_back, 0);
  EXPECT_EQ(passed.write_back_bytes, kCacheBytes);
  EXPECT_EQ(passed.host_to_device_bytes + passed.device_to_host_bytes, 0);
  EXPECT_EQ(kv_step(*owned, 0).write_back_bytes, 0) << "no write-back output, nothing to copy";
}

TEST(CopiedBytes, AnUnalignedCacheIsRealignedInAndBackBesideItsWriteBack) {
  auto module = load_module(module_test::fixture("kv_owned"), Strategy::kSwitch);
  const ExecutionRecord aligned = kv_step(*module, 0);
  const ExecutionRecord unaligned = kv_step(*module, 16);
  EXPECT_EQ(unaligned.realigned_bytes - aligned.realigned_bytes, 2 * kCacheBytes) << "staged in, copied back";
  EXPECT_EQ(unaligned.write_back_bytes, 0);
}

TEST(CopiedBytes, AStateTheEngineWritesToAnOutputOfItsOwnIsCopiedIntoTheStateEachExecution) {
  Module module(module_test::fixture("state_acc"));
  ASSERT_EQ(module.load_forward(), et::Error::Ok) << last_error_message();
  std::vector<float> x = {1.0f, 2.0f};
  const Bytes before = from_c_abi();
  for (int step = 0; step < 3; ++step) {
    ExecutionReport report;
    ASSERT_TRUE(module.forward(std::vector<et::EValue>{from_blob(x.data(), {1, 2}, ScalarType::Float)}).ok())
        << last_error_message();
    ASSERT_EQ(report.entries().size(), 1u);
    EXPECT_EQ(report.entries()[0].write_back_bytes, 2 * static_cast<int64_t>(sizeof(float)));
  }
  EXPECT_EQ((from_c_abi() - before).write_back, 3 * 2 * static_cast<int64_t>(sizeof(float)));
}

}  // namespace
}  // namespace etrt::module_test
