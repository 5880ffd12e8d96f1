#pragma once
// Packaging helpers: wrap serialized engine bytes (a GPU-free NvInfer engine, or a TensorRT plan when built against
// NVIDIA's TensorRT) into a TR01 blob whose IO bindings and profile signature are read back from the engine itself,
// through the adapter, exactly as an exporter would describe a TensorRT plan. Used by the test fixtures, the demo,
// the benchmarks and the NVIDIA contract programs to produce .pte inputs; never part of libetrt.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "blob/metadata.h"

namespace etrt::blobkit {

// A TR01 blob around `engine_bytes`. IO bindings list the
// engine's inputs, then its outputs, with dtype and declared shape; with
// `with_signature`, the blob also carries the canonical profile signature.
// Empty with the reason in `error` when the bytes are not a valid engine.
// `edit`, when given, may change the metadata before it is written (tests use
// it to make blobs that disagree with their engines).
std::vector<uint8_t> blob_for_engine(const std::vector<uint8_t>& engine_bytes, bool with_signature,
                                     std::string* error,
                                     const std::function<void(blob::Metadata&)>& edit = nullptr);

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes, std::string* error);
bool write_text(const std::string& path, const std::string& text, std::string* error);

}  // namespace etrt::blobkit
