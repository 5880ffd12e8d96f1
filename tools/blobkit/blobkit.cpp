#include "blobkit/blobkit.h"

#include <fstream>

#include "blob/blob.h"
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::blobkit {
namespace {

std::vector<int64_t> dims_of(const Shape& s) { return std::vector<int64_t>(s.d, s.d + s.rank); }

}  // namespace

std::vector<uint8_t> blob_for_engine(const std::vector<uint8_t>& engine_bytes, bool with_signature,
                                     std::string* error, const std::function<void(blob::Metadata&)>& edit) {
  Diagnostic why;
  std::unique_ptr<engine::Engine> engine;
  if (engine::tensorrt::deserialize(engine_bytes.data(), engine_bytes.size(), /*device_id=*/0, &engine, why) !=
      Error::Ok) {
    if (error != nullptr) *error = why.c_str();
    return {};
  }
  blob::Metadata metadata;
  blob::ProfileSignature signature;
  signature.num_profiles = engine->num_profiles();
  // Inputs first, then outputs: the delegate's argument order.
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t i = 0; i < engine->num_io_tensors(); ++i) {
      const engine::TensorDesc& desc = engine->io_tensor(i);
      if (desc.is_input != (pass == 0)) continue;
      metadata.io_bindings.push_back({desc.name, engine::to_string(desc.dtype), dims_of(desc.shape), desc.is_input});
      if (!desc.is_input) continue;
      blob::SignatureInput input{desc.name, {}};
      for (int32_t p = 0; p < engine->num_profiles(); ++p) {
        Shape mn, opt, mx;
        if (engine->profile_shape(p, i, &mn, &opt, &mx, why) != Error::Ok) {
          if (error != nullptr) *error = why.c_str();
          return {};
        }
        input.profiles.push_back({dims_of(mn), dims_of(opt), dims_of(mx)});
      }
      signature.inputs.push_back(std::move(input));
    }
  }
  if (with_signature) metadata.profile_signature = std::move(signature);
  if (edit) edit(metadata);
  if (blob::validate_metadata(metadata, why) != Error::Ok) {
    if (error != nullptr) *error = why.c_str();
    return {};
  }
  return blob::write_blob(metadata, engine_bytes.data(), engine_bytes.size());
}

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    *error = "could not write " + path;
    return false;
  }
  return true;
}

bool write_text(const std::string& path, const std::string& text, std::string* error) {
  return write_file(path, std::vector<uint8_t>(text.begin(), text.end()), error);
}

}  // namespace etrt::blobkit
