#pragma once
// The demo decoder's weight generator (decoder_model.h), in a header of its own that needs nothing else, so that the
// NvInfer contract suite's decoder (tests/contract/models.h) draws its weights the same way.

#include <cstdint>

namespace etrt::demo {

// splitmix64: a fixed, portable stream; the values are float32-exact multiples of 2^-24 times the bound.
class WeightRng {
 public:
  explicit WeightRng(uint64_t seed) : state_(seed) {}
  float uniform(float bound) {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const float unit = static_cast<float>(z >> 40) / 16777216.0f;  // [0, 1), 24 bits
    return (2.0f * unit - 1.0f) * bound;
  }

 private:
  uint64_t state_;
};

}  // namespace etrt::demo
