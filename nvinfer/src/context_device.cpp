// CUDA mode's rules for an execution context (context_device.h) and the
// device-side order check's resources (DeviceOrder, engine_state.h).

#include "context_device.h"

#include <cstdint>

#include "device_runtime.h"

namespace etrt::gpufree {

namespace {

constexpr char kOrderViolation[] =
    "an enqueue of this context ran on the device before the profile switch issued ahead of it: they were on "
    "different streams and nothing ordered them; switch and enqueue on the same stream, or make the enqueue's "
    "stream wait for the switch's (cudaStreamWaitEvent)";

}  // namespace

bool on_weights_device(const EngineImpl::State& state, std::string* error) {
  int current = -1;
  if (!device::current_device(&current, error)) return false;
  if (current == state.device) return true;
  *error = "engine '" + state.model.label + "' holds its weights on CUDA device " + std::to_string(state.device) +
           ", but device " + std::to_string(current) + " is current; make device " + std::to_string(state.device) +
           " current (cudaSetDevice) first";
  return false;
}

bool check_device_binding(const EngineImpl::State& state, const std::vector<Shape>& shapes,
                          const std::vector<void*>& data, std::string* error) {
  const Model& m = state.model;
  std::string why;
  if (!on_weights_device(state, &why)) {
    *error = "enqueue: " + why;
    return false;
  }
  for (size_t i = 0; i < m.io.size(); ++i) {
    if (is_empty(shapes[i])) continue;
    device::PointerInfo info;
    if (!device::pointer_info(data[i], &info, &why)) {
      *error = "enqueue: '" + m.io[i].name + "': " + why;
      return false;
    }
    if (info.kind == device::PointerKind::kHost) {
      *error = "enqueue: '" + m.io[i].name +
               "' is bound to host memory, but this is a CUDA-mode engine: "
               "bind device memory (stage host tensors through a device buffer)";
      return false;
    }
    if (info.kind == device::PointerKind::kDevice && info.device != state.device) {
      *error = "enqueue: '" + m.io[i].name + "' is bound to memory of CUDA device " + std::to_string(info.device) +
               ", but the engine runs on device " + std::to_string(state.device) + "; bind memory of device " +
               std::to_string(state.device);
      return false;
    }
  }
  return true;
}

bool check_device_order(const DeviceOrder& order, std::string* error) {
  if (*static_cast<volatile int*>(order.flag) == 0) return true;
  *static_cast<volatile int*>(order.flag) = 0;
  *error = std::string("enqueue: ") + kOrderViolation;
  return false;
}

std::string release_device_order(DeviceOrder& order) {
  std::string error;
  if (order.last_work != nullptr && !device::event_complete(order.last_work)) {
    error =
        "destroyed while its work was still running on the device; wait for it (synchronize the stream of its "
        "last enqueue) before destroying the context";
    device::synchronize_event(order.last_work);
  }
  if (order.flag != nullptr && *static_cast<volatile int*>(order.flag) != 0)
    error += std::string(error.empty() ? "" : "; and ") + kOrderViolation;
  order.release();
  return error;
}

bool DeviceOrder::make(std::string* error) {
  void* memory = nullptr;
  const int32_t profile_zero = 0;
  if (!device::allocate(sizeof(int32_t), &memory, error)) return false;
  word = static_cast<int32_t*>(memory);
  if (device::upload(word, &profile_zero, sizeof(profile_zero), error) && device::allocate_mapped_flag(&flag, error) &&
      device::create_event(&last_work, error))
    return true;
  release();
  return false;
}

void DeviceOrder::release() {
  device::destroy_event(last_work);
  device::release_mapped_flag(flag);
  device::release(word);
  *this = DeviceOrder{};
}

}  // namespace etrt::gpufree
