// libFuzzer harness: the TR01/TR02 blob parser (src/blob) on arbitrary bytes.
//
// parse_blob must refuse with a "TensorRT blob: " message or accept; what it accepts must point inside the
// buffer, pass validate_metadata, and survive write_blob -> parse_blob unchanged (bytes of the engine included),
// and its metadata JSON must read back alone (parse_metadata_json) as the same metadata.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace etrt::blob;
  ParsedBlob parsed;
  etrt::Diagnostic error;
  const etrt::Error status = parse_blob(data, size, &parsed, error);
  if (status != etrt::Error::Ok) {
    ETRT_FUZZ_CHECK(std::strncmp(error.c_str(), "TensorRT blob: ", 15) == 0,
                    std::string("refusal without the prefix: ") + error.c_str());
    ETRT_FUZZ_CHECK(status == etrt::Error::InvalidArgument || status == etrt::Error::MemoryAllocationFailed,
                    std::string("refusal with an unexpected code: ") + error.c_str());
    return 0;
  }
  ETRT_FUZZ_CHECK(parsed.magic == "TR01" || parsed.magic == "TR02", "accepted magic '" + parsed.magic + "'");
  ETRT_FUZZ_CHECK(parsed.engine != nullptr && parsed.engine >= data + kHeaderSize && parsed.engine <= data + size,
                  "the engine does not start inside the blob, after its header");
  ETRT_FUZZ_CHECK(parsed.engine_size > 0 && parsed.engine_size <= static_cast<uint64_t>(data + size - parsed.engine),
                  "engine_size " + std::to_string(parsed.engine_size) + " runs past the blob");

  etrt::Diagnostic why;
  ETRT_FUZZ_CHECK(validate_metadata(parsed.metadata, why) == etrt::Error::Ok,
                  std::string("accepted metadata fails validate_metadata: ") + why.c_str());

  const std::vector<uint8_t> rewritten = write_blob(parsed.metadata, parsed.engine, parsed.engine_size);
  ETRT_FUZZ_CHECK(!rewritten.empty(), "write_blob refused metadata parse_blob accepted");
  ParsedBlob again;
  ETRT_FUZZ_CHECK(parse_blob(rewritten.data(), rewritten.size(), &again, why) == etrt::Error::Ok,
                  std::string("rewritten blob refused: ") + why.c_str());
  ETRT_FUZZ_CHECK(again.metadata == parsed.metadata, "metadata changed through write_blob -> parse_blob");
  ETRT_FUZZ_CHECK(again.magic == (parsed.metadata.aliased_io.empty() ? "TR01" : "TR02"),
                  "write_blob wrote magic " + again.magic);
  ETRT_FUZZ_CHECK(again.engine_size == parsed.engine_size &&
                      std::memcmp(again.engine, parsed.engine, static_cast<size_t>(parsed.engine_size)) == 0,
                  "engine bytes changed through write_blob -> parse_blob");

  const std::string json = metadata_to_json(parsed.metadata);
  Metadata alone;
  ETRT_FUZZ_CHECK(parse_metadata_json(json.data(), json.size(), &alone, why) == etrt::Error::Ok,
                  std::string("metadata_to_json's text refused by parse_metadata_json: ") + why.c_str());
  ETRT_FUZZ_CHECK(alone == parsed.metadata, "metadata changed through metadata_to_json -> parse_metadata_json");
  return 0;
}
