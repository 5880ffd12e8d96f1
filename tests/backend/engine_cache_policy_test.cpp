// The engine cache's pure part (src/backend/policy/engine_cache_policy.h): which loads are one engine, and when a load
// may share one.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend/policy/engine_cache_policy.h"

namespace etrt::backend {
namespace {

std::vector<uint8_t> bytes(size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 131 + 7);
  return b;
}

TEST(EngineCachePolicy, EveryByteAndTheSizeChangeTheFingerprint) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{31}, size_t{32}, size_t{33}, size_t{100}, size_t{4096}}) {
    const std::vector<uint8_t> base = bytes(n);
    const Fingerprint f = fingerprint(base.data(), base.size());
    EXPECT_TRUE(f == fingerprint(base.data(), base.size())) << n;
    for (size_t i = 0; i < n; ++i) {
      std::vector<uint8_t> changed = base;
      changed[i] ^= 1;
      EXPECT_FALSE(f == fingerprint(changed.data(), changed.size())) << "size " << n << ", byte " << i;
    }
    std::vector<uint8_t> longer = base;
    longer.push_back(0);
    EXPECT_FALSE(f == fingerprint(longer.data(), longer.size())) << "a trailing zero byte, size " << n;
  }
}

TEST(EngineCachePolicy, TheKeyHoldsWhatMakesTheEngineAndNothingElse) {
  const std::vector<uint8_t> plan = bytes(1000);
  const EngineKey key = engine_key(plan.data(), plan.size(), 0, -1, false, "");
  EXPECT_TRUE(key == engine_key(plan.data(), plan.size(), 0, -1, false, nullptr)) << "no plugins, however written";
  EXPECT_FALSE(key == engine_key(plan.data(), plan.size() - 1, 0, -1, false, ""));
  EXPECT_FALSE(key == engine_key(plan.data(), plan.size(), 1, -1, false, "")) << "another device";
  EXPECT_FALSE(key == engine_key(plan.data(), plan.size(), 0, 0, false, "")) << "a weight-streaming budget";
  EXPECT_FALSE(key == engine_key(plan.data(), plan.size(), 0, -1, true, "")) << "engine host code";
  EXPECT_FALSE(key == engine_key(plan.data(), plan.size(), 0, -1, false, "libplugin.so")) << "plugin libraries";
}

TEST(EngineCachePolicy, ALoadSharesOnlyWhenAskedAndTheEnginesContextsCanShareProfiles) {
  EXPECT_TRUE(shares_engine(true, true));
  EXPECT_FALSE(shares_engine(true, false)) << "TensorRT 8.6 without kPROFILE_SHARING_0806";
  EXPECT_FALSE(shares_engine(false, true)) << "share_engine off";
  EXPECT_FALSE(shares_engine(false, false));
}

}  // namespace
}  // namespace etrt::backend
