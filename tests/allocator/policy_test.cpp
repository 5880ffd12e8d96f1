// The registration policy of etrt's CUDA device allocator (src/backend/policy/cuda_allocator_policy.h): pure, no GPU.
#include <gtest/gtest.h>

#include "backend/policy/cuda_allocator_policy.h"

namespace etrt::backend {
namespace {

using R = CudaAllocatorRegistration;

R decide(bool cuda_build, bool present, const char* variable) {
  return decide_cuda_allocator_registration(cuda_build, present, variable).registration;
}

TEST(CudaAllocatorPolicy, ACudaBuildRegistersWhenNobodyHas) {
  EXPECT_EQ(decide(true, false, nullptr), R::kRegister);
  EXPECT_EQ(decide(true, false, ""), R::kRegister);
  EXPECT_EQ(decide(true, false, "1"), R::kRegister);
  EXPECT_EQ(decide(true, false, "YES"), R::kRegister);
}

TEST(CudaAllocatorPolicy, AnAllocatorRegisteredBeforeEtrtLoadsIsKept) {
  // ExecuTorch aborts on a second registration for the same device type: etrt must never attempt one.
  EXPECT_EQ(decide(true, true, nullptr), R::kAlreadyRegistered);
  EXPECT_EQ(decide(true, true, "on"), R::kAlreadyRegistered);
}

TEST(CudaAllocatorPolicy, TheVariableTurnsRegistrationOff) {
  for (const char* no : {"0", "false", "FALSE", "Off", "no"}) {
    EXPECT_EQ(decide(true, false, no), R::kOptedOut) << no;
    EXPECT_EQ(decide(true, true, no), R::kOptedOut) << no;
  }
}

TEST(CudaAllocatorPolicy, ABuildWithoutCudaRegistersItsRefusingAllocatorUnderTheSameRules) {
  EXPECT_EQ(decide(false, false, nullptr), R::kNoCudaInThisBuild);
  EXPECT_EQ(decide(false, false, "1"), R::kNoCudaInThisBuild);
  // Another library's allocator is kept, and the variable turns etrt's off, as in the CUDA build.
  EXPECT_EQ(decide(false, true, nullptr), R::kAlreadyRegistered);
  EXPECT_EQ(decide(false, false, "0"), R::kOptedOut);
  EXPECT_EQ(decide(false, true, "off"), R::kOptedOut);
  EXPECT_TRUE(decide_cuda_allocator_registration(false, false, "maybe").variable_unrecognized);
}

TEST(CudaAllocatorPolicy, AnUnrecognizedValueIsReportedAndIgnored) {
  const CudaAllocatorDecision d = decide_cuda_allocator_registration(true, false, "maybe");
  EXPECT_EQ(d.registration, R::kRegister);
  EXPECT_TRUE(d.variable_unrecognized);
  EXPECT_FALSE(decide_cuda_allocator_registration(true, false, "0").variable_unrecognized);
  EXPECT_FALSE(decide_cuda_allocator_registration(true, false, nullptr).variable_unrecognized);
  // "00" and "1 " are not the words: no prefix matching.
  EXPECT_TRUE(decide_cuda_allocator_registration(true, false, "00").variable_unrecognized);
  EXPECT_TRUE(decide_cuda_allocator_registration(true, false, "1 ").variable_unrecognized);
}

TEST(CudaAllocatorPolicy, EveryDecisionIsDescribed) {
  for (R r : {R::kRegister, R::kNoCudaInThisBuild, R::kAlreadyRegistered, R::kOptedOut})
    EXPECT_STRNE(describe(r), "unknown");
}

static_assert(decide_cuda_allocator_registration(true, false, nullptr).registration == R::kRegister,
              "the policy is usable at compile time");

}  // namespace
}  // namespace etrt::backend
