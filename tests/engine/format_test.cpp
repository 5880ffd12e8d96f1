// Malformed engine bytes: refused with a clear error, never a crash or an
// out-of-bounds read (run under AddressSanitizer to hold the second half).
// Loaded through etrt's TensorRT adapter, which passes the GPU-free NvInfer
// implementation's reason on in its own message.

#include "format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "gpufree_fixtures.h"
#include "model.h"

namespace etrt::gpufree::testing {
namespace {

// Loads through the adapter: the engine, or nullptr with the adapter's reason in *error (and its code in *code).
std::unique_ptr<Engine> deserialize(const void* data, size_t size, std::string* error, Error* code = nullptr) {
  Diagnostic why;
  std::unique_ptr<Engine> engine;
  const Error loaded = engine::tensorrt::deserialize(data, size, 0, &engine, why);
  if (loaded != Error::Ok) *error = why.c_str();
  if (code != nullptr) *code = loaded;
  return engine;
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
  std::unique_ptr<ExecutionContext> context = new_context(engine);
  ASSERT_NE(context, nullptr);
  Diagnostic why;
  std::vector<std::unique_ptr<AlignedBuffer>> buffers(static_cast<size_t>(engine.num_io_tensors()));
  for (int32_t i = 0; i < engine.num_io_tensors(); ++i) {
    if (!engine.io_tensor(i).is_input) continue;
    Shape min;
    ASSERT_EQ(engine.profile_shape(0, i, &min, nullptr, nullptr, why), Error::Ok) << why.c_str();
    ASSERT_EQ(context->set_input_shape(i, min, why), Error::Ok) << why.c_str();
  }
  for (int32_t i = 0; i < engine.num_io_tensors(); ++i) {
    Shape shape;
    if (context->tensor_shape(i, &shape, why) != Error::Ok) return;  // inconsistent at these shapes: a clean refusal
    const size_t bytes = static_cast<size_t>(shape.numel()) * element_size(engine.io_tensor(i).dtype);
    if (bytes > kExerciseLimit) return;
    auto& buffer = buffers[static_cast<size_t>(i)];
    buffer = std::make_unique<AlignedBuffer>(bytes + 8);
    std::memset(buffer->data, 0, buffer->size);  // zeros are valid ids
    ASSERT_EQ(context->set_tensor_address(i, buffer->data, why), Error::Ok) << why.c_str();
  }
  (void)context->enqueue(nullptr, why);  // a refusal is fine; a crash or an out-of-bounds access is not
}

TEST(GpufreeFormat, TruncationAtEveryLengthIsRefused) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A fresh allocation of exactly n bytes, so reading past it is an ASan error rather than a read of the rest.
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    std::string error;
    EXPECT_EQ(deserialize(cut.data(), cut.size(), &error), nullptr) << "length " << n;
    EXPECT_FALSE(error.empty()) << "length " << n;
  }
}

TEST(GpufreeFormat, TruncatedPayloadWithAResealedHeaderIsRefusedByTheDecoder) {
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

TEST(GpufreeFormat, EveryFlippedByteIsCaughtByTheChecksumOrTheHeaderChecks) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> damaged = bytes;
    damaged[i] ^= 0xFF;
    EXPECT_FALSE(load_error(damaged, Error::InvalidArgument).empty()) << "byte " << i;
  }
}

TEST(GpufreeFormat, FlippedPayloadBytesNeverCrashTheDecoderOrTheEngine) {
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

TEST(GpufreeFormat, HugeCountsAreRefusedBeforeAnyAllocation) {
  const std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  // The IO count follows the label (u32 length + text), the flags byte, the cost and the memory size.
  const size_t label_size = test_label().size();
  const size_t io_count_at = kHeaderSize + 4 + label_size + 1 + 8 + 8;
  std::vector<uint8_t> damaged = bytes;
  put_u32(damaged, io_count_at, 0xFFFFFFFFu);
  reseal(damaged);
  std::string error = load_error(damaged, Error::InvalidArgument);
  EXPECT_NE(error.find("the IO tensor count 4294967295 is above the limit of 16384"), std::string::npos) << error;
  // At the limit, the count is checked against the bytes present.
  put_u32(damaged, io_count_at, static_cast<uint32_t>(kMaxIoTensors));
  reseal(damaged);
  error = load_error(damaged, Error::InvalidArgument);
  EXPECT_NE(error.find("the IO tensor count 16384 needs at least 131072 more bytes"), std::string::npos) << error;
}

// ---- limits a small file cannot reach; the builder and the decoder hold engines to them alike ----

// x [1] -> `n_ops` scales -> y, over `n_profiles` identical profiles.
Model chain_model(size_t n_profiles, size_t n_ops, size_t n_static_inputs = 0) {
  Model m;
  m.label = "chain";
  m.io.push_back({"x", true, DataType::kFloat32, make_shape({1})});
  for (size_t i = 0; i < n_static_inputs; ++i)
    m.io.push_back({"s" + std::to_string(i), true, DataType::kFloat32, make_shape({1})});
  m.io.push_back({"y", false, DataType::kFloat32, make_shape({1})});
  const size_t n_inputs = 1 + n_static_inputs;
  const int32_t y = static_cast<int32_t>(n_inputs);
  m.profiles.assign(n_profiles,
                    std::vector<InputRange>(n_inputs, InputRange{make_shape({1}), make_shape({1}), make_shape({1})}));
  for (size_t k = 0; k + 1 < n_ops; ++k) m.intermediates.push_back({"t" + std::to_string(k), DataType::kFloat32});
  int32_t previous = 0;
  for (size_t k = 0; k < n_ops; ++k) {
    Op op;
    op.kind = OpKind::kScale;
    op.a = previous;
    op.out = k + 1 == n_ops ? y : m.intermediate_id(k);
    m.ops.push_back(op);
    previous = op.out;
  }
  return m;
}

TEST(GpufreeFormatLimits, ProfilesTimesOpsAboveTheShapeInferenceLimitAreRefused) {
  const size_t ops = kMaxShapeInferenceWork / kMaxProfiles + 1;
  Model m = chain_model(kMaxProfiles, ops);
  std::string why;
  EXPECT_FALSE(validate(m, &why));
  const std::string expected = "256 profiles x " + std::to_string(ops) + " ops = " + std::to_string(256 * ops) +
                               " shape inferences per bound, above the limit of " +
                               std::to_string(kMaxShapeInferenceWork);
  EXPECT_EQ(why, expected);
  // The decoder refuses the same count before it reads a single op.
  const std::vector<uint8_t> bytes = serialize(m);
  Model decoded;
  EXPECT_FALSE(deserialize_model(bytes.data(), bytes.size(), &decoded, &why));
  EXPECT_EQ(why, "GPU-free NvInfer engine: " + expected);
  // One op fewer is within the limit, and validates quickly (shape inference runs 3 x the limit times).
  Model within = chain_model(kMaxProfiles, ops - 1);
  EXPECT_TRUE(validate(within, &why)) << why;
}

TEST(GpufreeFormatLimits, ProfilesTimesInputsAboveTheProfileTableLimitAreRefused) {
  Model m = chain_model(kMaxProfiles, 1, kMaxProfileEntries / kMaxProfiles);  // 257 inputs
  std::string why;
  EXPECT_FALSE(validate(m, &why));
  EXPECT_EQ(why, "256 profiles x 257 inputs = 65792 profile bounds, above the limit of 65536");
  const std::vector<uint8_t> bytes = serialize(m);
  Model decoded;
  EXPECT_FALSE(deserialize_model(bytes.data(), bytes.size(), &decoded, &why));
  EXPECT_EQ(why, "GPU-free NvInfer engine: 256 profiles x 257 inputs = 65792 profile bounds, above the limit of 65536");
}

TEST(GpufreeFormatLimits, CountsAboveTheLimitsAreRefusedByValidate) {
  std::string why;
  Model m = chain_model(1, 1);
  m.intermediates.resize(kMaxIntermediates + 1);
  EXPECT_FALSE(validate(m, &why));
  EXPECT_EQ(why, "the engine has 65537 intermediates, above the limit of 65536");
  m = chain_model(kMaxProfiles + 1, 1);
  EXPECT_FALSE(validate(m, &why));
  EXPECT_EQ(why, "the engine has 257 optimization profiles, above the limit of 256");
  m = chain_model(1, 1);
  m.label = std::string(kMaxNameLength + 1, 'l');
  EXPECT_FALSE(validate(m, &why));
  EXPECT_EQ(why, "the label is 4097 bytes long, above the limit of 4096");
}

TEST(GpufreeFormatLimits, AnEngineWithTenThousandsOfTensorsLoadsAndLooksNamesUpQuickly) {
  // 16384 IO tensors (the limit): 8192 inputs, each copied to its own output. Loading is linear (hashed
  // duplicate checks) and name lookups use the sorted index.
  Model m;
  m.label = "wide";
  const size_t n = kMaxIoTensors / 2;
  for (size_t i = 0; i < n; ++i) m.io.push_back({"in_" + std::to_string(i), true, DataType::kFloat32, make_shape({2})});
  for (size_t i = 0; i < n; ++i)
    m.io.push_back({"out_" + std::to_string(i), false, DataType::kFloat32, make_shape({2})});
  m.profiles.assign(1, std::vector<InputRange>(n, InputRange{make_shape({2}), make_shape({2}), make_shape({2})}));
  for (size_t i = 0; i < n; ++i) {
    Op op;
    op.kind = OpKind::kIdentity;
    op.a = static_cast<int32_t>(i);
    op.out = static_cast<int32_t>(n + i);
    m.ops.push_back(op);
  }
  const std::vector<uint8_t> bytes = serialize(m);
  Model decoded;
  std::string why;
  ASSERT_TRUE(deserialize_model(bytes.data(), bytes.size(), &decoded, &why)) << why;
  for (size_t i = 0; i < 2 * n; i += 997)
    EXPECT_EQ(decoded.find_io(decoded.io[i].name.c_str()), static_cast<int32_t>(i));
  EXPECT_EQ(decoded.find_io("in_"), -1);
  EXPECT_EQ(decoded.find_io("zzz"), -1);
  EXPECT_EQ(decoded.find_io(nullptr), -1);
  // A copy keeps working: the index holds positions, not pointers.
  const Model copy = decoded;
  EXPECT_EQ(copy.find_io("out_17"), static_cast<int32_t>(n + 17));
  // A duplicate among them is found without comparing every pair.
  m.io[n + 5].name = "in_3";
  const std::vector<uint8_t> duplicated = serialize(m);
  EXPECT_FALSE(deserialize_model(duplicated.data(), duplicated.size(), &decoded, &why));
  EXPECT_EQ(why, "GPU-free NvInfer engine: invalid engine: tensor name 'in_3' is used twice; names must be unique");
}

TEST(GpufreeFormatLimits, MessagesEscapeControlCharactersInNames) {
  EXPECT_EQ(escape_name("plain name"), "plain name");
  EXPECT_EQ(escape_name(std::string("a\0b\n\x7f", 5)), "a\\x00b\\x0a\\x7f");
  EXPECT_EQ(escape_name("back\\slash"), "back\\\\slash");
  EXPECT_EQ(escape_name("entr\xc3\xa9"
                        "e"),
            "entr\xc3\xa9"
            "e")
      << "valid UTF-8 stays as is";
  EXPECT_EQ(escape_name("bad\xff\xc3"), "bad\\xff\\xc3");
  Model m = chain_model(1, 1);
  m.io.back().name = std::string("y\0z", 3);
  std::string why;
  EXPECT_FALSE(validate(m, &why));
  EXPECT_EQ(why,
            "tensor #1 name 'y\\x00z' contains a NUL byte; NvInfer names are C strings, so no caller could "
            "name it");
  EXPECT_EQ(why.find('\0'), std::string::npos);
}

// ---- the shared vectors (tests/vectors/engine, python/etrt/gpufree.py reads them too) ----

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kVectorDir = fs::path(__FILE__).parent_path().parent_path() / "vectors" / "engine";

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Json read_json(const fs::path& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

gpufree::Shape shape_of(const Json& dims) {
  gpufree::Shape s;
  for (const Json& d : dims) s.d[s.rank++] = d.get<int64_t>();
  return s;
}

TEST(GpufreeFormatVectors, EveryValidVectorDecodesToItsDescriptionAndReencodesByteForByte) {
  int cases = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(kVectorDir)) {
    if (entry.path().extension() != ".engine") continue;
    ++cases;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = read_bytes(entry.path());
    const Json d = read_json(kVectorDir / (name + ".json"));
    Model m;
    std::string error;
    ASSERT_TRUE(deserialize_model(bytes.data(), bytes.size(), &m, &error)) << error;
    EXPECT_EQ(m.label, d.at("label").get<std::string>());
    EXPECT_EQ(m.tracing, d.at("tracing").get<bool>());
    EXPECT_EQ(m.memory_kind == MemoryKind::kDevice, d.at("cuda_mode").get<bool>());
    EXPECT_EQ(m.streamable_weights, d.at("streamable_weights").get<bool>());
    EXPECT_EQ(m.switch_cost_ns, d.at("switch_cost_ns").get<int64_t>());
    EXPECT_EQ(m.requested_device_memory, d.at("requested_device_memory").get<uint64_t>());
    ASSERT_EQ(m.io.size(), d.at("io").size());
    for (size_t i = 0; i < m.io.size(); ++i) {
      const Json& t = d.at("io")[i];
      EXPECT_EQ(m.io[i].name, t.at("name").get<std::string>());
      EXPECT_EQ(m.io[i].is_input, t.at("is_input").get<bool>());
      EXPECT_EQ(std::string(to_string(m.io[i].dtype)), t.at("dtype").get<std::string>());
      EXPECT_EQ(m.io[i].shape, shape_of(t.at("shape")));
      EXPECT_EQ(m.io[i].is_shape_tensor, t.at("shape_tensor").get<bool>());
      EXPECT_EQ(m.io[i].on_host, t.at("on_host").get<bool>());
      EXPECT_EQ(m.io[i].data_dependent, t.at("data_dependent").get<bool>());
    }
    ASSERT_EQ(m.constants.size(), d.at("constants").size());
    for (size_t i = 0; i < m.constants.size(); ++i) {
      EXPECT_EQ(m.constants[i].name, d.at("constants")[i].at("name").get<std::string>());
      EXPECT_EQ(m.constants[i].shape, shape_of(d.at("constants")[i].at("shape")));
    }
    ASSERT_EQ(m.intermediates.size(), d.at("intermediates").size());
    for (size_t i = 0; i < m.intermediates.size(); ++i) {
      EXPECT_EQ(m.intermediates[i].name, d.at("intermediates")[i].at("name").get<std::string>());
      EXPECT_EQ(std::string(to_string(m.intermediates[i].dtype)),
                d.at("intermediates")[i].at("dtype").get<std::string>());
    }
    ASSERT_EQ(m.profiles.size(), d.at("profiles").size());
    for (size_t p = 0; p < m.profiles.size(); ++p) {
      ASSERT_EQ(m.profiles[p].size(), d.at("profiles")[p].size());
      for (size_t k = 0; k < m.profiles[p].size(); ++k) {
        const Json& b = d.at("profiles")[p][k];
        EXPECT_EQ(m.profiles[p][k].min, shape_of(b.at("min")));
        EXPECT_EQ(m.profiles[p][k].opt, shape_of(b.at("opt")));
        EXPECT_EQ(m.profiles[p][k].max, shape_of(b.at("max")));
      }
    }
    ASSERT_EQ(m.ops.size(), d.at("ops").size());
    for (size_t k = 0; k < m.ops.size(); ++k) {
      const Json& o = d.at("ops")[k];
      EXPECT_EQ(static_cast<int>(m.ops[k].kind), o.at("kind").get<int>());
      EXPECT_EQ(m.ops[k].a, o.at("a").get<int32_t>());
      EXPECT_EQ(m.ops[k].b, o.at("b").get<int32_t>());
      EXPECT_EQ(m.ops[k].c, o.at("c").get<int32_t>());
      EXPECT_EQ(m.ops[k].d, o.at("d").get<int32_t>());
      EXPECT_EQ(m.ops[k].out, o.at("out").get<int32_t>());
      EXPECT_EQ(m.ops[k].factor, o.at("factor").get<float>());
    }
    MemoryPlan plan;
    ASSERT_TRUE(plan_memory(m, &plan, &error)) << error;
    EXPECT_EQ(plan.device_memory_size, d.at("device_memory_size").get<uint64_t>());
    EXPECT_EQ(serialize(m), bytes);
    // And etrt's adapter loads it (loading allocates no scratch; only contexts do), unless it refuses host-placed
    // or data-dependent IO, which the engine itself accepts.
    bool flagged = false;
    for (const TensorDesc& t : m.io) flagged = flagged || t.on_host || t.data_dependent || t.is_shape_tensor;
    if (!flagged) {
      EXPECT_NE(deserialize(bytes.data(), bytes.size(), &error), nullptr) << error;
    }
  }
  EXPECT_GE(cases, 7);
}

TEST(GpufreeFormatVectors, EveryInvalidVectorIsRefusedWithTheSharedMessage) {
  const Json manifest = read_json(kVectorDir / "invalid" / "invalid.json");
  size_t files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(kVectorDir / "invalid"))
    files += entry.path().extension() == ".engine" ? 1 : 0;
  EXPECT_EQ(files, manifest.size()) << "every invalid vector is listed in invalid.json";
  for (const Json& c : manifest) {
    const std::string name = c.at("case").get<std::string>();
    const std::string expected = c.at("error").get<std::string>();
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = read_bytes(kVectorDir / "invalid" / (name + ".engine"));
    Model m;
    std::string error;
    EXPECT_FALSE(deserialize_model(bytes.data(), bytes.size(), &m, &error));
    EXPECT_EQ(error, expected);
    // The runtime refuses it with the same reason, before allocating anything.
    std::string load;
    Error code = Error::Ok;
    EXPECT_EQ(deserialize(bytes.data(), bytes.size(), &load, &code), nullptr);
    EXPECT_EQ(code, Error::InvalidArgument) << load;
    EXPECT_NE(load.find(expected), std::string::npos) << load;
  }
  EXPECT_GE(manifest.size(), 80u);
}

TEST(GpufreeFormat, NewerFormatVersionIsRefusedNamingBoth) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  put_u32(bytes, 4, kFormatVersion + 1);
  const std::string error = load_error(bytes, Error::InvalidArgument);
  const std::string expected = "format version " + std::to_string(kFormatVersion + 1) +
                               " is not the version this etrt reads (" + std::to_string(kFormatVersion) + ")";
  EXPECT_NE(error.find(expected), std::string::npos) << error;
}

TEST(GpufreeFormat, DamagedPayloadIsRefusedAsAChecksumMismatch) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  bytes[bytes.size() - 1] ^= 0x10;
  EXPECT_NE(load_error(bytes, Error::InvalidArgument).find("checksum mismatch"), std::string::npos);
}

TEST(GpufreeFormat, TrailingBytesAreRefused) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  bytes.push_back(0);
  EXPECT_NE(load_error(bytes, Error::InvalidArgument).find("the header promises a"), std::string::npos);
}

TEST(GpufreeFormat, StructurallyInvalidPayloadIsRefusedByValidation) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  // The last op's output id (bytes -8..-5 of the payload: out, then factor): point it at the input.
  put_u32(bytes, bytes.size() - 8, 0);
  reseal(bytes);
  const std::string error = load_error(bytes, Error::InvalidArgument);
  EXPECT_NE(error.find("invalid engine: op #3 (scale) writes 'ids', which is not an output or intermediate"),
            std::string::npos)
      << error;
}

TEST(GpufreeFormat, NonGpufreeBytesAndNullAreRefused) {
  std::string error;
  Error code = Error::Ok;
  EXPECT_EQ(deserialize(nullptr, 0, &error, &code), nullptr);
  EXPECT_EQ(code, Error::InvalidArgument);
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_EQ(deserialize(nullptr, 16, &error, &code), nullptr);
  EXPECT_EQ(code, Error::InvalidArgument);
  EXPECT_FALSE(error.empty());
  const uint8_t plan[] = {'f', 't', 'r', 't', 0, 0, 0, 0};
  EXPECT_EQ(deserialize(plan, sizeof(plan), &error, &code), nullptr);
  EXPECT_EQ(code, Error::InvalidArgument);
  EXPECT_NE(error.find("magic 'ETRF'"), std::string::npos) << error;
  const uint8_t short_magic[] = {'E', 'T', 'R'};
  EXPECT_EQ(deserialize(short_magic, sizeof(short_magic), &error, &code), nullptr);
  EXPECT_EQ(code, Error::InvalidArgument);
  EXPECT_NE(error.find("magic 'ETRF'"), std::string::npos) << error;
}

TEST(GpufreeFormat, TheAdapterPassesTheDecodersReasonOn) {
  std::vector<uint8_t> bytes = build_or_fail(llm_builder(test_label()));
  bytes[bytes.size() - 1] ^= 0x10;
  const std::string error = load_error(bytes, Error::InvalidArgument);
  const std::string prefix = "TensorRT could not deserialize the engine (" + std::to_string(bytes.size()) + " bytes)";
  EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
  EXPECT_NE(error.find(": deserializeCudaEngine: GPU-free NvInfer engine: checksum mismatch"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace etrt::gpufree::testing
