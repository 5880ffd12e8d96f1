#pragma once
// What the harnesses share: an invariant check that fails loudly (libFuzzer and the replay test both treat an
// abort as a finding); a deterministic hash of the input, which the harnesses use to vary what they do with one
// input without changing its format; making engine headers consistent so that mutated engines get past the
// checksum; turning the GPU-free NvInfer's trace off.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(ETRT_FUZZ_GPUFREE)
#include "etrt_gpufree/trace.h"
#endif

namespace etrt::fuzz {

// The GPU-free NvInfer records every call in a process-wide trace (test tooling, not a product path): at fuzzing
// speed that is time and memory, and allocations that outlive each input, for which libFuzzer's leak check runs
// every input twice. The harnesses turn tracing off unless ETRT_FUZZ_TRACE=1.
inline void configure_tracing() {
#if defined(ETRT_FUZZ_GPUFREE)
  const char* keep = std::getenv("ETRT_FUZZ_TRACE");
  if (keep == nullptr || keep[0] == '\0' || keep[0] == '0') etrt::gpufree::set_tracing_enabled(false);
#endif
}

[[noreturn]] inline void fail(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n  %s\n", file, line, condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// FNV-1a, 64-bit.
inline uint64_t hash(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

// splitmix64: a reproducible stream of values from one seed.
struct Stream {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// The GPU-free NvInfer's engine header (nvinfer/README.md, "Format"): "ETRF", u32 version, u64 payload size,
// u32 FNV-1a checksum of the payload, u32 reserved. A mutation of the payload almost never keeps the checksum, so
// without help the fuzzer would only ever meet the checksum check; the harnesses also run each input with the
// checksum (and, for `fix_size`, the payload size) made right, so mutated payloads reach the decoder.
// fix_engine_header also caps the engine's switch cost (below).
inline constexpr size_t kEngineHeaderSize = 24;

inline uint32_t engine_checksum(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

inline void put_le(uint8_t* at, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) at[i] = static_cast<uint8_t>(value >> (8 * i));
}
inline uint64_t get_le(const uint8_t* at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(at[i]) << (8 * i);
  return v;
}

// Makes the engine header at `at` (with `available` bytes from there on) consistent: the payload size (when
// `fix_size`, to everything available) and the checksum of the payload it declares. False if there is no header
// there, or the declared payload runs past what is available.
inline bool fix_engine_header(uint8_t* at, size_t available, bool fix_size) {
  if (available < kEngineHeaderSize || std::memcmp(at, "ETRF", 4) != 0) return false;
  if (fix_size) put_le(at + 8, available - kEngineHeaderSize, 8);
  const uint64_t payload = get_le(at + 8, 8);
  if (payload > available - kEngineHeaderSize) return false;
  // The payload opens with the label (u32 length + bytes), the flags (u8) and the switch cost (i64, ns), which
  // every successful profile switch busy-waits (up to 10 s is valid). Cap it at 0.1 ms, or one input could spend
  // minutes switching.
  constexpr int64_t kMaxSwitchCostNs = 100000;
  const uint64_t label = payload >= 4 ? get_le(at + kEngineHeaderSize, 4) : payload;
  if (label <= payload && payload - label >= 4 + 1 + 8) {
    uint8_t* cost = at + kEngineHeaderSize + 4 + label + 1;
    if (static_cast<int64_t>(get_le(cost, 8)) > kMaxSwitchCostNs) put_le(cost, kMaxSwitchCostNs, 8);
  }
  put_le(at + 16, engine_checksum(at + kEngineHeaderSize, static_cast<size_t>(payload)), 4);
  return true;
}

// fix_engine_header on every engine header inside `bytes` (engines inside blobs inside a .pte); true if any.
inline bool fix_embedded_engine_headers(std::vector<uint8_t>& bytes) {
  bool any = false;
  for (size_t at = 0; at + kEngineHeaderSize <= bytes.size(); ++at)
    if (bytes[at] == 'E' && fix_engine_header(bytes.data() + at, bytes.size() - at, false)) any = true;
  return any;
}

}  // namespace etrt::fuzz

#define ETRT_FUZZ_CHECK(condition, detail)                                          \
  do {                                                                              \
    if (!(condition)) ::etrt::fuzz::fail(__FILE__, __LINE__, #condition, (detail)); \
  } while (0)
