// The shared vectors in tests/vectors/blob, written once by the Python writer
// (make_vectors.py): the C++ writer must reproduce each .blob byte for byte,
// and the reader must give back the described metadata and engine. The
// invalid/ set must be refused with the same message fragment as in Python.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "blob_test_util.h"

#ifndef ETRT_BLOB_VECTOR_DIR
#error "tests/blob/CMakeLists.txt passes ETRT_BLOB_VECTOR_DIR"
#endif

namespace etrt::blob {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kVectorDir = ETRT_BLOB_VECTOR_DIR;

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Json read_json(const fs::path& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Deliberately not parse_metadata_json: the expected metadata is built by a
// separate, naive path, so a reader bug cannot hide behind itself.
Metadata metadata_from_description(const Json& d) {
  Metadata m;
  for (const Json& b : d.at("io_bindings"))
    m.io_bindings.push_back({b.at("name"), b.at("dtype"), b.at("shape").get<std::vector<int64_t>>(), b.at("is_input")});
  for (const Json& a : d.at("aliased_io")) m.aliased_io.push_back({a.at("output"), a.at("input"), a.at("kind")});
  m.hardware_compatible = d.at("hardware_compatible");
  m.device_id = d.at("device_id");
  m.serialized_metadata = d.at("serialized_metadata");
  m.target_platform = d.at("target_platform");
  if (d.contains("profile_signature")) {
    const Json& s = d.at("profile_signature");
    ProfileSignature sig;
    sig.num_profiles = s.at("num_profiles");
    for (const Json& in : s.at("inputs")) {
      SignatureInput input{in.at("name"), {}};
      for (const Json& p : in.at("profiles"))
        input.profiles.push_back({p.at("min").get<std::vector<int64_t>>(), p.at("opt").get<std::vector<int64_t>>(),
                                  p.at("max").get<std::vector<int64_t>>()});
      sig.inputs.push_back(input);
    }
    for (const Json& sd : s.at("symbolic_dims")) {
      SymbolicDim dim{sd.at("name"), sd.at("input"), sd.at("dim"), {}};
      for (const Json& r : sd.at("ranges")) dim.ranges.emplace_back(r.at(0), r.at(1));
      sig.symbolic_dims.push_back(dim);
    }
    m.profile_signature = sig;
  }
  if (d.contains("delegate_state"))
    for (const Json& s : d.at("delegate_state"))
      m.delegate_state.push_back({s.at("name"), s.at("input"), s.at("output"), s.at("initial_value")});
  return m;
}

std::vector<std::string> case_names(const fs::path& dir, const char* extension) {
  std::vector<std::string> names;
  if (fs::is_directory(dir))
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
      if (e.path().extension() == extension) names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(BlobVectors, TheSetCoversTheRequiredCases) {
  const std::vector<std::string> names = case_names(kVectorDir, ".blob");
  for (const char* required :
       {"upstream_minimal", "aliased_io_tr02", "profile_signature_llm", "escaped_strings", "no_padding"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  EXPECT_GE(read_json(kVectorDir / "invalid" / "invalid.json").size(), 10u);
}

class ValidVector : public ::testing::TestWithParam<std::string> {};

TEST_P(ValidVector, CppWriterReproducesThePythonBytes) {
  const Json description = read_json(kVectorDir / (GetParam() + ".json"));
  const Metadata m = metadata_from_description(description.at("metadata"));
  const std::vector<uint8_t> engine = from_hex(description.at("engine_hex"));
  const std::vector<uint8_t> expected = read_bytes(kVectorDir / (GetParam() + ".blob"));
  const std::vector<uint8_t> written = write_blob(m, engine.data(), engine.size());
  ASSERT_EQ(written.size(), expected.size());
  EXPECT_TRUE(written == expected) << "first difference at byte "
                                   << (std::mismatch(written.begin(), written.end(), expected.begin()).first -
                                       written.begin());
}

TEST_P(ValidVector, ReaderReturnsTheDescribedMetadataAndEngine) {
  const Json description = read_json(kVectorDir / (GetParam() + ".json"));
  const std::vector<uint8_t> blob = read_bytes(kVectorDir / (GetParam() + ".blob"));
  const std::vector<uint8_t> engine = from_hex(description.at("engine_hex"));
  ParsedBlob parsed;
  Diagnostic error;
  ASSERT_EQ(parse_blob(blob.data(), blob.size(), &parsed, error), Error::Ok) << error.c_str();
  EXPECT_EQ(parsed.metadata, metadata_from_description(description.at("metadata")));
  EXPECT_EQ(parsed.magic, parsed.metadata.aliased_io.empty() ? "TR01" : "TR02");
  EXPECT_EQ(std::vector<uint8_t>(parsed.engine, parsed.engine + parsed.engine_size), engine);
}

INSTANTIATE_TEST_SUITE_P(Shared, ValidVector, ::testing::ValuesIn(case_names(kVectorDir, ".blob")),
                         [](const ::testing::TestParamInfo<std::string>& case_info) { return case_info.param; });

struct InvalidCase {
  std::string name;
  std::string error;
};

std::vector<InvalidCase> invalid_cases() {
  std::vector<InvalidCase> cases;
  const fs::path manifest = kVectorDir / "invalid" / "invalid.json";
  if (!fs::exists(manifest)) return cases;
  for (const Json& c : read_json(manifest)) cases.push_back({c.at("case"), c.at("error")});
  return cases;
}

class InvalidVector : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidVector, IsRefusedWithTheSharedMessage) {
  const std::vector<uint8_t> blob = read_bytes(kVectorDir / "invalid" / (GetParam().name + ".blob"));
  EXPECT_BLOB_ERROR(testing::parse_error(blob), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(Shared, InvalidVector, ::testing::ValuesIn(invalid_cases()),
                         [](const ::testing::TestParamInfo<InvalidCase>& case_info) { return case_info.param.name; });

}  // namespace
}  // namespace etrt::blob
