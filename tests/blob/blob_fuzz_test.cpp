// Mutation fuzzing with a fixed seed: whatever the bytes, parse_blob returns
// (true or false), never crashes, never reads outside the buffer (run under
// -DETRT_SANITIZE=address,undefined), and whatever it accepts is metadata the
// writer can write back and read again unchanged.

#include <gtest/gtest.h>

#include <random>

#include "blob/blob.h"
#include "blob_test_util.h"

namespace etrt::blob {
namespace {

constexpr int kIterations = 20000;
// Characters that steer mutations into JSON structure rather than noise.
constexpr char kJsonAlphabet[] = "{}[]\",:-0123456789eE.tfnul\\ \x00\x7f\xc3\xa9\xf0";

struct Outcome {
  int accepted = 0;
  int refused = 0;
};

void check_one(const std::vector<uint8_t>& bytes, Outcome* outcome) {
  // An exactly sized heap copy, so any overread is an ASan report.
  const std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.empty() ? 1 : bytes.size()]);
  std::copy(bytes.begin(), bytes.end(), copy.get());
  ParsedBlob parsed;
  Diagnostic error;
  if (parse_blob(copy.get(), bytes.size(), &parsed, error) != Error::Ok) {
    ++outcome->refused;
    ASSERT_EQ(std::string(error.c_str()).rfind("TensorRT blob: ", 0), 0u) << error.c_str();
    return;
  }
  ++outcome->accepted;
  ASSERT_GE(parsed.engine, copy.get() + kHeaderSize);
  ASSERT_LE(parsed.engine + parsed.engine_size, copy.get() + bytes.size());
  ASSERT_GT(parsed.engine_size, 0u);
  Diagnostic why;
  ASSERT_EQ(validate_metadata(parsed.metadata, why), Error::Ok) << why.c_str();
  const std::vector<uint8_t> rewritten = write_blob(parsed.metadata, parsed.engine, parsed.engine_size);
  ParsedBlob again;
  ASSERT_EQ(parse_blob(rewritten.data(), rewritten.size(), &again, why), Error::Ok) << why.c_str();
  ASSERT_EQ(again.metadata, parsed.metadata);
}

std::vector<uint8_t> mutate(std::vector<uint8_t> bytes, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 99);
  const int kind = pick(rng);
  const auto position = [&](size_t limit) { return std::uniform_int_distribution<size_t>(0, limit - 1)(rng); };
  if (kind < 20) {  // flip bytes in the header, where the offsets live
    for (int i = 0, n = 1 + pick(rng) % 4; i < n; ++i) bytes[position(kHeaderSize)] = static_cast<uint8_t>(rng());
  } else if (kind < 60) {  // JSON-shaped noise in the metadata
    for (int i = 0, n = 1 + pick(rng) % 4; i < n; ++i)
      bytes[kHeaderSize + position(bytes.size() - kHeaderSize)] =
          static_cast<uint8_t>(kJsonAlphabet[position(sizeof(kJsonAlphabet) - 1)]);
  } else if (kind < 80) {  // any byte anywhere
    for (int i = 0, n = 1 + pick(rng) % 8; i < n; ++i) bytes[position(bytes.size())] = static_cast<uint8_t>(rng());
  } else if (kind < 90) {  // truncation
    bytes.resize(position(bytes.size()));
  } else {  // an extreme value in one header field
    static const uint64_t kExtremes[] = {0,
                                         1,
                                         15,
                                         16,
                                         31,
                                         32,
                                         0x7FFFFFFF,
                                         0xFFFFFFFF,
                                         0xFFFFFFFFFFFFFFFF,
                                         0x8000000000000000,
                                         bytes.size(),
                                         bytes.size() - 1,
                                         bytes.size() + 1};
    static const size_t kFields[][2] = {{4, 4}, {8, 4}, {12, 4}, {16, 8}};
    const auto& field = kFields[position(4)];
    testing::put_le(bytes, field[0], kExtremes[position(sizeof(kExtremes) / sizeof(kExtremes[0]))], field[1]);
  }
  return bytes;
}

TEST(BlobFuzz, MutatedBlobsAreRefusedCleanlyOrReadConsistently) {
  const std::vector<std::vector<uint8_t>> seeds = {testing::write(testing::llm_metadata(), 40),
                                                   testing::write(testing::simple_metadata(), 16)};
  std::mt19937 rng(20240601);
  Outcome outcome;
  for (int i = 0; i < kIterations; ++i) {
    const std::vector<uint8_t>& seed = seeds[static_cast<size_t>(i) % seeds.size()];
    std::vector<uint8_t> bytes = mutate(seed, rng);
    // Stack a second mutation now and then to get past the first check.
    if (i % 3 == 0 && bytes.size() > kHeaderSize) bytes = mutate(bytes, rng);
    check_one(bytes, &outcome);
    if (::testing::Test::HasFatalFailure()) FAIL() << "iteration " << i;
  }
  // Both outcomes must occur, or the mutations are not exercising the reader.
  RecordProperty("accepted", outcome.accepted);
  RecordProperty("refused", outcome.refused);
  EXPECT_GT(outcome.accepted, 100);
  EXPECT_GT(outcome.refused, 1000);
}

}  // namespace
}  // namespace etrt::blob
