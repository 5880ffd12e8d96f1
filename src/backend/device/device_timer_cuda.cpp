// DeviceTimer over CUDA timing events (device_timer.h). Never blocks: a measurement is read only once
// cudaEventQuery says its stop event has completed.
#include <cuda_runtime_api.h>

#include "backend/device/device_cuda.h"
#include "backend/device/device_timer.h"

namespace etrt::backend {

namespace {

bool make_event(void** event) {
  if (*event != nullptr) return true;
  cudaEvent_t e = nullptr;
  if (cudaEventCreate(&e) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  *event = e;
  return true;
}

}  // namespace

DeviceTimer::~DeviceTimer() {
  // ~Delegate() has waited for the last execution; CUDA releases an event still pending once it completes anyway.
  for (Slot& s : slots_) {
    if (s.start != nullptr) (void)cudaEventDestroy(as_event(s.start));
    if (s.stop != nullptr) (void)cudaEventDestroy(as_event(s.stop));
  }
}

bool DeviceTimer::start(engine::StreamHandle stream, uint64_t execution, uint64_t host_start) noexcept {
  open_ = kSlots;
  size_t pick = kSlots;
  for (size_t i = 0; i < kSlots && pick == kSlots; ++i)
    if (!slots_[i].pending) pick = i;
  if (pick == kSlots) {  // every slot waits to be read: reuse the oldest
    pick = 0;
    for (size_t i = 1; i < kSlots; ++i)
      if (slots_[i].m.execution < slots_[pick].m.execution) pick = i;
    slots_[pick].pending = false;
    ++dropped_;
  }
  Slot& slot = slots_[pick];
  if (!make_event(&slot.start) || !make_event(&slot.stop)) return false;
  if (cudaEventRecord(as_event(slot.start), as_stream(stream)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  slot.m = Measurement{execution, host_start, 0.0F, -1};
  open_ = pick;
  return true;
}

void DeviceTimer::stop(engine::StreamHandle stream, int32_t profile) noexcept {
  if (open_ == kSlots) return;
  Slot& slot = slots_[open_];
  open_ = kSlots;
  if (cudaEventRecord(as_event(slot.stop), as_stream(stream)) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  slot.m.profile = profile;
  slot.pending = true;
}

bool DeviceTimer::pop_ready(Measurement* out) noexcept {
  Slot* oldest = nullptr;
  for (Slot& s : slots_) {
    if (!s.pending || (oldest != nullptr && oldest->m.execution < s.m.execution)) continue;
    const cudaError_t status = cudaEventQuery(as_event(s.stop));
    if (status == cudaSuccess) {
      oldest = &s;
    } else {
      // Not ready yet (not an error, but CUDA records it as the thread's last error, as PyTorch notes), or failed:
      // a failed one is dropped, and its error is the device work's to report.
      (void)cudaGetLastError();
      if (status != cudaErrorNotReady) {
        s.pending = false;
        ++dropped_;
      }
    }
  }
  if (oldest == nullptr) return false;
  oldest->pending = false;
  float ms = 0.0F;
  if (cudaEventElapsedTime(&ms, as_event(oldest->start), as_event(oldest->stop)) != cudaSuccess) {
    (void)cudaGetLastError();
    ++dropped_;
    return pop_ready(out);
  }
  *out = oldest->m;
  out->milliseconds = ms;
  return true;
}

}  // namespace etrt::backend
