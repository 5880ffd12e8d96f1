// A host engine (the GPU-free NvInfer's host mode) given a tensor ExecuTorch placed on CUDA -- every delegate
// argument of a program exported with a CUDA target device -- refuses it before reading a byte: host code must never
// touch device memory. The tensor's data here is host memory tagged CUDA, so a read would not crash; the refusal
// is what is checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <executorch/runtime/core/portable_type/tensor_impl.h>

#include "backend/device/device.h"
#include "backend/device/staging.h"
#include "etrt/tools_c_api.h"

namespace etrt::backend {
namespace {

namespace et = executorch::runtime;
using testing::HasSubstr;

struct TaggedTensor {
  alignas(256) float data[64] = {};
  et::etensor::TensorImpl::SizesType sizes[1] = {64};
  et::etensor::TensorImpl::DimOrderType dim_order[1] = {0};
  et::etensor::TensorImpl impl;
  executorch::aten::Tensor tensor;
  explicit TaggedTensor(et::etensor::DeviceType type)
      : impl(executorch::aten::ScalarType::Float, 1, sizes, data, dim_order, nullptr,
             et::TensorShapeDynamism::STATIC, type, 0),
        tensor(&impl) {}
};

TEST(HostEngineDevicePlacement, ACudaTaggedInputIsRefusedNamingWhatToDo) {
  DeviceState state;  // a host engine's: device == false
  Diagnostic why;
  ASSERT_EQ(prepare_host_staging(&state, {256, 256}, why), Error::Ok) << why.c_str();
  TaggedTensor input(et::etensor::DeviceType::CUDA);
  void* address = nullptr;
  CopiedBytes copied;
  EXPECT_EQ(bind_host(state, why, 0, input.tensor, true, "x", &address, copied), Error::InvalidArgument);
  EXPECT_EQ(address, nullptr);
  EXPECT_THAT(why.c_str(), HasSubstr("input 'x' is in CUDA memory (device 0"));
  EXPECT_THAT(why.c_str(), HasSubstr("engine runs on the host"));
  EXPECT_THAT(why.c_str(), HasSubstr("target_device"));
}

TEST(HostEngineDevicePlacement, ACudaTaggedOutputIsRefusedAndACpuOneBound) {
  DeviceState state;
  Diagnostic why;
  ASSERT_EQ(prepare_host_staging(&state, {256, 256}, why), Error::Ok) << why.c_str();
  TaggedTensor output(et::etensor::DeviceType::CUDA);
  void* address = nullptr;
  CopiedBytes copied;
  EXPECT_EQ(bind_host(state, why, 1, output.tensor, false, "y", &address, copied), Error::InvalidArgument);
  EXPECT_THAT(why.c_str(), HasSubstr("output 'y' is in CUDA memory"));
  TaggedTensor host(et::etensor::DeviceType::CPU);
  ASSERT_EQ(bind_host(state, why, 1, host.tensor, false, "y", &address, copied), Error::Ok) << why.c_str();
  EXPECT_EQ(address, host.data);
  EXPECT_EQ(copied.realigned, 0) << "bound in place: nothing copied";
}

// etrt validate asks libetrt_tools' C ABI whether a host engine takes an argument placed on a device: the answer is
// the call's own refusal, word for word, and an acceptance where the call binds.
TEST(HostEngineDevicePlacement, TheToolsGetTheCallsRefusalThroughTheCAbi) {
  DeviceState state;
  Diagnostic why;
  ASSERT_EQ(prepare_host_staging(&state, {256, 256}, why), Error::Ok) << why.c_str();
  for (bool is_input : {true, false}) {
    TaggedTensor tagged(et::etensor::DeviceType::CUDA);
    void* address = nullptr;
    CopiedBytes copied;
    ASSERT_EQ(bind_host(state, why, is_input ? 0 : 1, tagged.tensor, is_input, "kv", &address, copied),
              Error::InvalidArgument);
    etrt_text* text = nullptr;
    ASSERT_EQ(etrt_host_engine_binds(1, 0, is_input ? 1 : 0, "kv", &text), ETRT_E_FAILED);
    ASSERT_NE(text, nullptr);
    EXPECT_STREQ(etrt_text_data(text), why.c_str());
    etrt_text_free(text);
  }
  etrt_text* text = nullptr;
  EXPECT_EQ(etrt_host_engine_binds(0, 0, 1, "x", &text), ETRT_OK);
  EXPECT_EQ(text, nullptr);
  EXPECT_EQ(etrt_host_engine_binds(2, 0, 1, "x", &text), ETRT_E_INVALID_ARGUMENT) << "not an ExecuTorch device type";
  EXPECT_EQ(etrt_host_engine_binds(-1, 0, 1, "x", &text), ETRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(etrt_host_engine_binds(1, 0, 1, nullptr, &text), ETRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(etrt_host_engine_binds(1, 0, 1, "x", nullptr), ETRT_E_INVALID_ARGUMENT);
}

TEST(HostEngineDevicePlacement, ARepeatedCallNeverTakesACudaTaggedTensorAsBoundInPlace) {
  DeviceState state;
  Diagnostic why;
  DeviceCall call(state, "test", why);
  TaggedTensor cuda(et::etensor::DeviceType::CUDA);
  TaggedTensor host(et::etensor::DeviceType::CPU);
  EXPECT_FALSE(call.binds_in_place(cuda.tensor));
  EXPECT_TRUE(call.binds_in_place(host.tensor));
}

}  // namespace
}  // namespace etrt::backend
