// DeviceTimer in a build without CUDA (device_timer.h): every engine runs on the host, so there is no device time.
#include "backend/device/device_timer.h"

namespace etrt::backend {

DeviceTimer::~DeviceTimer() = default;

bool DeviceTimer::start(engine::StreamHandle /*stream*/, uint64_t /*execution*/, uint64_t /*host_start*/) noexcept {
  return false;
}

void DeviceTimer::stop(engine::StreamHandle /*stream*/, int32_t /*profile*/) noexcept {}

bool DeviceTimer::pop_ready(Measurement* /*out*/) noexcept { return false; }

}  // namespace etrt::backend
