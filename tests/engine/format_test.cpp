// Malformed engine bytes: refused with a clear error, never a crash or an
// out-of-bounds read (run under AddressSanitizer to hold the second half).
// Loaded through etrt's TensorRT adapter, which passes the GPU-free NvInfer
// implementation's reason on in its own message.

#include "format.h"

#include <gtest/gtest.h>

#include <cstring>

#include "reference_fixtures.h"

namespace etrt::gpufree::testing {
namespace {

std::unique_ptr<Engine> deserialize(const void* data, size_t size, std::string* error) {
  return engine::tensorrt::deserialize(data, size, 0, error);
}

void put_u32(std::vector<uint8_t>& bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

// Recomputes the header checksum, so a mutation reaches the payload decoder instead of stopping at the checksum.
void reseal(std::vector<uint8_t>& bytes) {
  put_u32(bytes, 16, checksum(bytes.data() + kHeaderSize, bytes.size() - kHeaderSize));
}

// An engine that loaded from mutated bytes is still a valid engine: run it at its profile-0 minimum shapes with
// buffers sized from the shapes it reports, so AddressSanitizer sees any mismatch between what it validated and
// what it touches.
// Engines that (validly) ask for more than kExerciseLimit bytes of scratch or IO are only loaded, not run.
constexpr size_t kExerciseLimit = size_t{64} << 20;

void exercise(Engine& engine) {
  if (engine.device_memory_size() > kExerciseLimit) return;
  // A CUDA-mode engine's contexts need a GPU (and a CUDA build).
  if (engine.memory_kind() != engine::MemoryKind::kHost) return;
  std::unique_ptr<ExecutionContext> context = engine.create_context({});
  ASSERT_NE(context, nullptr) << engine.last_error();
  std::vector<std::unique_ptr<AlignedBuffer>> buffers(static_cast<size_t>(engine.num_io_tensors()));
  for (int32_t i = 0; i < engine.num_io_tensors(); ++i) {
    if (!engine.io_tensor(i).is_input) continue;
    Shape min;
    ASSERT_TRUE(engine.profile_shape(0, i, &min, nullptr, nullptr));
    ASSERT_TRUE(context->set_input_shape(i, min)) << context->last_error();
  }
  for (int32_t i = 0; i < engine.num_io_tensors(); ++i) {
    Shape shape;
    if (!context->tensor_shape(i, &shape)) return;  // inconsistent at these shapes: a clean refusal
    const size_t bytes = static_cast<size_t>(shape.numel()) * element_size(engine.io_tensor(i).dtype);
    if (bytes > kExerciseLimit) return;
    auto& buffer = buffers[static_cast<size_t>(i)];
    buffer = std::make_unique<AlignedBuffer>(bytes + 8);
    std::memset(buffer->data, 0, buffer->size);  // zeros are valid ids
    ASSERT_TRUE(context->set_tensor_address(i, buffer->data)) << context->last_error();
  }
  context->enqueue(nullptr);
}

TEST(ReferenceFormat, TruncationAtEveryLengthIsRefused) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A fresh allocation of exactly n bytes, so reading past it is an ASan error rather than a read of the rest.
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    std::string error;
    EXPECT_EQ(deserialize(cut.data(), cut.size(), &error), nullptr) << "length " << n;
    EXPECT_FALSE(error.empty()) << "length " << n;
  }
}

TEST(ReferenceFormat, TruncatedPayloadWithAResealedHeaderIsRefusedByTheDecoder) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  for (size_t n = kHeaderSize; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    for (int i = 0; i < 8; ++i) cut[8 + static_cast<size_t>(i)] = static_cast<uint8_t>((n - kHeaderSize) >> (8 * i));
    reseal(cut);
    std::string error;
    EXPECT_EQ(deserialize(cut.data(), cut.size(), &error), nullptr) << "length " << n;
    EXPECT_FALSE(error.empty());
  }
}

TEST(ReferenceFormat, EveryFlippedByteIsCaughtByTheChecksumOrTheHeaderChecks) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> damaged = bytes;
    damaged[i] ^= 0xFF;
    EXPECT_FALSE(load_error(damaged).empty()) << "byte " << i;
  }
}

TEST(ReferenceFormat, FlippedPayloadBytesNeverCrashTheDecoderOrTheEngine) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  int loaded = 0, refused = 0;
  for (size_t i = kHeaderSize; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::vector<uint8_t> damaged = bytes;
      damaged[i] ^= mask;
      reseal(damaged);
      std::string error;
      std::unique_ptr<Engine> engine = deserialize(damaged.data(), damaged.size(), &error);
      if (engine == nullptr) {
        EXPECT_FALSE(error.empty()) << "byte " << i;
        ++refused;
        continue;
      }
      ++loaded;  // e.g. a weight value or a name letter changed: still a valid engine
      exercise(*engine);
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(loaded, 0);
}

TEST(ReferenceFormat, HugeCountsAreRefusedBeforeAnyAllocation) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  // The IO count follows the label (u32 length + text), the flags byte, the cost and the memory size.
  const size_t label_size = test_label().size();
  const size_t io_count_at = kHeaderSize + 4 + label_size + 1 + 8 + 8;
  std::vector<uint8_t> damaged = bytes;
  put_u32(damaged, io_count_at, 0xFFFFFFFFu);
  reseal(damaged);
  const std::string error = load_error(damaged);
  EXPECT_NE(error.find("the IO tensor count 4294967295 needs at least"), std::string::npos) << error;
}

TEST(ReferenceFormat, NewerFormatVersionIsRefusedNamingBoth) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  put_u32(bytes, 4, kFormatVersion + 1);
  const std::string error = load_error(bytes);
  const std::string expected = "format version " + std::to_string(kFormatVersion + 1) +
                               " is not the version this etrt reads (" + std::to_string(kFormatVersion) + ")";
  EXPECT_NE(error.find(expected), std::string::npos) << error;
}

TEST(ReferenceFormat, DamagedPayloadIsRefusedAsAChecksumMismatch) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  bytes[bytes.size() - 1] ^= 0x10;
  EXPECT_NE(load_error(bytes).find("checksum mismatch"), std::string::npos);
}

TEST(ReferenceFormat, TrailingBytesAreRefused) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  bytes.push_back(0);
  EXPECT_NE(load_error(bytes).find("the header promises a"), std::string::npos);
}

TEST(ReferenceFormat, StructurallyInvalidPayloadIsRefusedByValidation) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  // The last op's output id (bytes -8..-5 of the payload: out, then factor): point it at the input.
  put_u32(bytes, bytes.size() - 8, 0);
  reseal(bytes);
  const std::string error = load_error(bytes);
  EXPECT_NE(error.find("invalid engine: op #3 (scale) writes 'ids', which is not an output or intermediate"),
            std::string::npos)
      << error;
}

TEST(ReferenceFormat, NonReferenceBytesAndNullAreRefused) {
  std::string error;
  EXPECT_EQ(deserialize(nullptr, 0, &error), nullptr);
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_EQ(deserialize(nullptr, 16, &error), nullptr);
  EXPECT_FALSE(error.empty());
  const uint8_t plan[] = {'f', 't', 'r', 't', 0, 0, 0, 0};
  EXPECT_EQ(deserialize(plan, sizeof(plan), &error), nullptr);
  EXPECT_NE(error.find("magic 'ETRF'"), std::string::npos) << error;
  EXPECT_EQ(deserialize(plan, sizeof(plan), nullptr), nullptr) << "error may be null";
  const uint8_t short_magic[] = {'E', 'T', 'R'};
  EXPECT_EQ(deserialize(short_magic, sizeof(short_magic), &error), nullptr);
  EXPECT_NE(error.find("magic 'ETRF'"), std::string::npos) << error;
}

TEST(ReferenceFormat, TheAdapterPassesTheDecodersReasonOn) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  bytes[bytes.size() - 1] ^= 0x10;
  const std::string error = load_error(bytes);
  const std::string prefix = "TensorRT could not deserialize the engine (" + std::to_string(bytes.size()) + " bytes)";
  EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
  EXPECT_NE(error.find(": deserializeCudaEngine: reference engine: checksum mismatch"), std::string::npos) << error;
}

}  // namespace
}  // namespace etrt::gpufree::testing
