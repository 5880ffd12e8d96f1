#pragma once
// Which loads may share one deserialized engine (engine_cache.h; docs/design.md, "One engine, many sessions"): the
// key that says two loads would deserialize the same engine, and the fingerprint of the engine's bytes it holds.
// Pure C++, allocation-free.
//
// Two loads share an engine when everything that makes the engine is equal: its bytes, the CUDA device it lives on,
// and the load options that change what deserializing makes of them -- the weight-streaming budget asked for (a
// property of the engine, fixed once a context exists), engine_host_code and plugin_libraries (what the runtime may
// run while deserializing). Options that change only what a session does with the engine (profile strategy, CUDA
// graphs, shared scratch, selection) are per session and not in the key.

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace etrt::backend {

// A 128-bit fingerprint of `size` bytes at `data`: four independent lanes over 8-byte words (so it runs at memory
// speed), folded two ways. Not cryptographic: it tells engines apart, it does not defend against bytes made to
// collide (a process that loads such bytes already trusts them with its GPU).
struct Fingerprint {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Fingerprint& o) const { return lo == o.lo && hi == o.hi; }
};

namespace fingerprint_detail {
inline constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
inline constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t step(uint64_t acc, uint64_t word) { return rotl(acc + word * kP2, 31) * kP1; }
// Murmur3's finalizer: every input bit reaches every output bit.
inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  return x ^ (x >> 33);
}
}  // namespace fingerprint_detail

inline Fingerprint fingerprint(const void* data, size_t size) {
  using namespace fingerprint_detail;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t lane[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t word = 0;
      std::memcpy(&word, p + i + 8 * k, 8);
      lane[k] = step(lane[k], word);
    }
  }
  uint64_t tail = size;  // the last < 32 bytes, and the size, into lanes 0 and 1
  for (; i + 8 <= size; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, 8);
    lane[0] = step(lane[0], word);
  }
  for (; i < size; ++i) tail = rotl(tail ^ (p[i] * kP3), 11) * kP1;
  lane[1] = step(lane[1], tail);
  const uint64_t a = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18);
  const uint64_t b = rotl(lane[3], 1) ^ rotl(lane[2], 7) ^ rotl(lane[1], 12) ^ rotl(lane[0], 18);
  return Fingerprint{mix(a ^ size), mix(b + kP3 * size)};
}

// What makes one deserialized engine: equal keys, one engine.
struct EngineKey {
  Fingerprint bytes;
  uint64_t size = 0;
  int64_t device_id = -1;
  int64_t weight_streaming_budget = -1;  // as asked; -1: TensorRT's automatic budget
  bool host_code = false;
  Fingerprint plugin_libraries;  // of the ':'-separated paths, as given

  bool operator==(const EngineKey& o) const {
    return bytes == o.bytes && size == o.size && device_id == o.device_id &&
           weight_streaming_budget == o.weight_streaming_budget && host_code == o.host_code &&
           plugin_libraries == o.plugin_libraries;
  }
};

inline EngineKey engine_key(const void* engine, size_t size, int64_t device_id, int64_t weight_streaming_budget,
                            bool host_code, const char* plugin_libraries) {
  EngineKey key;
  key.bytes = fingerprint(engine, size);
  key.size = size;
  key.device_id = device_id;
  key.weight_streaming_budget = weight_streaming_budget;
  key.host_code = host_code;
  const char* plugins = plugin_libraries != nullptr ? plugin_libraries : "";
  key.plugin_libraries = fingerprint(plugins, std::strlen(plugins));
  return key;
}

// Whether a load joins (or starts) the shared engine of its key: asked for (load option share_engine, on by default)
// and possible -- the engine lets contexts share optimization profiles (engine.h, profiles_shared_across_contexts).
// Without that, a second session over the engine could not take a profile the first holds: sessions would fail or
// wait on each other's profiles, so each gets an engine of its own instead (the weights once per session, as without
// the cache).
inline bool shares_engine(bool asked, bool profiles_shared_across_contexts) {
  return asked && profiles_shared_across_contexts;
}

}  // namespace etrt::backend
