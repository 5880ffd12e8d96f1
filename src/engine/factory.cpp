#include "engine/factory.h"

#include <cctype>

#include "engine/reference/format.h"
#include "engine/reference/reference_engine.h"

#if ETRT_WITH_TENSORRT
#include "engine/tensorrt/tensorrt_engine.h"
#endif

namespace etrt::engine {

#if !ETRT_WITH_TENSORRT
namespace {

// The first bytes, printable ones as characters, others as hex: "'ftrt'" or "00 1f 8b 08".
std::string describe_magic(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t n = size < 4 ? size : 4;
  if (n == 0) return "none: the engine is empty";
  bool printable = true;
  for (size_t i = 0; i < n; ++i) printable = printable && std::isprint(p[i]) != 0;
  std::string s;
  if (printable) return "'" + std::string(reinterpret_cast<const char*>(p), n) + "'";
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += ' ';
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

}  // namespace
#endif

bool deserializes_on_device(const void* data, size_t size) {
#if ETRT_WITH_TENSORRT
  return !reference::is_reference_engine(data, size);
#else
  // Without the adapter nothing is deserialized on a device: deserialize_engine refuses a plan with the rebuild hint.
  (void)data;
  (void)size;
  return false;
#endif
}

std::unique_ptr<Engine> deserialize_engine(const void* data, size_t size, const EngineOptions& options,
                                           std::string* error) {
  if (data == nullptr && size > 0) {
    if (error != nullptr) *error = "deserialize_engine: null engine bytes with size " + std::to_string(size);
    return nullptr;
  }
  if (reference::is_reference_engine(data, size)) return reference::deserialize(data, size, error);
#if ETRT_WITH_TENSORRT
  return tensorrt::deserialize(data, size, options.device_id, error);
#else
  (void)options;
  if (error != nullptr)
    *error = "engine bytes are not a reference engine (magic 'ETRF' expected, found " + describe_magic(data, size) +
             "); this looks like a TensorRT plan, and this build of etrt has no TensorRT adapter: rebuild with "
             "-DETRT_WITH_TENSORRT=ON -DTENSORRT_ROOT=<path>";
  return nullptr;
#endif
}

}  // namespace etrt::engine
