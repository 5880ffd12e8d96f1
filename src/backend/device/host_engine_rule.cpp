// A host engine's rule for arguments ExecuTorch placed on a device (staging.h host_engine_binds), and its refusal:
// bind_host applies it at every call, and the tools ask it through libetrt_tools (etrt_host_engine_binds), so both
// libraries are built from this one source. Pure: no CUDA, no tensor.
#include "backend/device/staging.h"

namespace etrt::backend {

Error refuse_device_tensor_for_host_engine(Diagnostic& why, int index, bool is_input, const char* name) {
  return fail(why, Error::InvalidArgument,
              "%s '%s' is in CUDA memory (device %d: ExecuTorch placed it there, as it does for every delegate "
              "argument of a program exported with a CUDA target device, e.g. by Torch-TensorRT), but this "
              "delegate's engine runs on the host and cannot read device memory; use an engine built for the GPU "
              "with a CUDA build of etrt, or export the program without the target_device compile spec",
              is_input ? "input" : "output", name, index);
}

Error host_engine_binds(Diagnostic& why, executorch::runtime::etensor::DeviceType type, int index, bool is_input,
                        const char* name) {
  // Alignment only decides between binding in place and staging, never whether to refuse.
  if (choose_binding(host_engine_place_of(type), /*aligned=*/true, EngineReach::host_engine()) !=
      Binding::kRefuseOtherDevice)
    return Error::Ok;
  return refuse_device_tensor_for_host_engine(why, index, is_input, name);
}

}  // namespace etrt::backend
