// Where an engine gets each argument's memory (src/backend/policy/binding_policy.h): pure, no GPU. The integrated-GPU
// path is decided here from the device's traits, so these cases are the spec the CUDA mechanism (device_place_cuda.cpp,
// asked on an H200 made to report itself integrated: tests/gpu/integrated_cuda_test.cpp) and the host engines' glue
// (staging.cpp, through Module: module_bytes_test.cpp) follow.
#include <gtest/gtest.h>

#include "backend/policy/binding_policy.h"

namespace etrt::backend {
namespace {

using B = Binding;
using P = MemoryPlace;

constexpr DeviceTraits kDiscrete{false, true, false};  // an H200 on x86: maps pinned memory, but is not integrated
constexpr DeviceTraits kDiscreteWithHmm{false, true, true};   // ... with HMM, which reaches pageable memory too
constexpr DeviceTraits kJetson{true, true, false};            // Orin: integrated, pinned memory by its host address
constexpr DeviceTraits kUnifiedIntegrated{true, true, true};  // GB10-like: integrated, pageable memory too

constexpr EngineReach discrete = EngineReach::device_engine(kDiscrete);
constexpr EngineReach jetson = EngineReach::device_engine(kJetson);
constexpr EngineReach unified = EngineReach::device_engine(kUnifiedIntegrated);
constexpr EngineReach host = EngineReach::host_engine();

TEST(BindingPolicy, ADiscreteGpuBindsItsOwnAlignedMemoryAndStagesAllHostMemory) {
  EXPECT_EQ(choose_binding(P::kDevice, true, discrete), B::kInPlace);
  EXPECT_EQ(choose_binding(P::kManaged, true, discrete), B::kInPlace);
  EXPECT_EQ(choose_binding(P::kPinnedHost, true, discrete), B::kStageFromHost);
  EXPECT_EQ(choose_binding(P::kPageableHost, true, discrete), B::kStageFromHost);
  EXPECT_EQ(choose_binding(P::kOtherDevice, true, discrete), B::kRefuseOtherDevice);
}

TEST(BindingPolicy, ADiscreteGpuStagesHostMemoryEvenWhenItCouldReachIt) {
  // Reaching host memory over the bus on every read costs more than one copy: only integrated devices bind it.
  const EngineReach hmm = EngineReach::device_engine(kDiscreteWithHmm);
  EXPECT_FALSE(hmm.pinned_host);
  EXPECT_FALSE(hmm.pageable_host);
  EXPECT_EQ(choose_binding(P::kPageableHost, true, hmm), B::kStageFromHost);
}

TEST(BindingPolicy, MisalignedDeviceMemoryIsRealignedOnTheDevice) {
  EXPECT_EQ(choose_binding(P::kDevice, false, discrete), B::kStageRealigned);
  EXPECT_EQ(choose_binding(P::kManaged, false, jetson), B::kStageRealigned);
}

TEST(BindingPolicy, AnIntegratedGpuBindsAlignedPinnedHostMemoryInPlace) {
  EXPECT_TRUE(jetson.pinned_host);
  EXPECT_EQ(choose_binding(P::kPinnedHost, true, jetson), B::kInPlace);
  EXPECT_EQ(choose_binding(P::kDevice, true, jetson), B::kInPlace);
}

TEST(BindingPolicy, AnIntegratedGpuWithoutPageableAccessStagesPageableHostMemory) {
  EXPECT_FALSE(jetson.pageable_host);
  EXPECT_EQ(choose_binding(P::kPageableHost, true, jetson), B::kStageFromHost);
}

TEST(BindingPolicy, AnIntegratedGpuWithPageableAccessBindsAnyAlignedHostMemoryInPlace) {
  EXPECT_EQ(choose_binding(P::kPageableHost, true, unified), B::kInPlace);
  EXPECT_EQ(choose_binding(P::kPinnedHost, true, unified), B::kInPlace);
}

TEST(BindingPolicy, MisalignedHostMemoryIsStillStagedOnAnIntegratedGpu) {
  // TensorRT's 256-byte rule holds whatever memory the address is in; the staging buffer is device memory.
  EXPECT_EQ(choose_binding(P::kPinnedHost, false, jetson), B::kStageFromHost);
  EXPECT_EQ(choose_binding(P::kPageableHost, false, unified), B::kStageFromHost);
}

TEST(BindingPolicy, AnIntegratedGpuWhoseHostAddressesDifferFromItsOwnStagesPinnedMemory) {
  const EngineReach no_same_address = EngineReach::device_engine({true, false, false});
  EXPECT_EQ(choose_binding(P::kPinnedHost, true, no_same_address), B::kStageFromHost);
}

TEST(BindingPolicy, AHostEngineBindsAlignedHostMemoryRealignsTheRestAndRefusesDeviceMemory) {
  EXPECT_EQ(choose_binding(P::kPageableHost, true, host), B::kInPlace);
  EXPECT_EQ(choose_binding(P::kPageableHost, false, host), B::kStageRealigned);
  EXPECT_EQ(choose_binding(P::kDevice, true, host), B::kRefuseOtherDevice);
  EXPECT_EQ(choose_binding(P::kOtherDevice, true, host), B::kRefuseOtherDevice);
}

TEST(BindingPolicy, AnIntegratedGpuWithPageableAccessBindsAlignedHostMemoryAsAHostEngineDoes) {
  for (const P place : {P::kPinnedHost, P::kPageableHost})
    EXPECT_EQ(choose_binding(place, true, unified), choose_binding(place, true, host)) << static_cast<int>(place);
}

TEST(BindingPolicy, AKvCacheInHostMemoryIsRefusedOnlyWhereTheDeviceDoesNotReachIt) {
  EXPECT_TRUE(refuses_in_place_update(P::kPageableHost, discrete));
  EXPECT_TRUE(refuses_in_place_update(P::kPinnedHost, discrete));
  EXPECT_FALSE(refuses_in_place_update(P::kPinnedHost, jetson));
  EXPECT_TRUE(refuses_in_place_update(P::kPageableHost, jetson));
  EXPECT_FALSE(refuses_in_place_update(P::kPageableHost, unified));
  EXPECT_FALSE(refuses_in_place_update(P::kPageableHost, host));
  EXPECT_FALSE(refuses_in_place_update(P::kDevice, discrete));
  EXPECT_FALSE(refuses_in_place_update(P::kOtherDevice, discrete)) << "the binding refuses it, naming the device";
}

static_assert(choose_binding(P::kPinnedHost, true, EngineReach::device_engine(kJetson)) == B::kInPlace,
              "the policy is usable at compile time: no allocation, no CUDA");

}  // namespace
}  // namespace etrt::backend
