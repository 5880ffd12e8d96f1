#pragma once
// The device time of an execution: a pair of CUDA timing events recorded on its stream around its device work, read
// later without waiting (device_timer_cuda.cpp; device_timer_host.cpp is the build without CUDA, where there is
// nothing to time). Only traced executions use it (execution_trace.h): the in-flight event (device.h) stays a
// non-timing event, which is cheaper to record.
//
// A measurement is read when its stop event has completed by the time someone asks (cudaEventQuery, which never
// blocks): at the end of the execution when it waited for its work anyway (no caller stream, host outputs), else at
// a later traced execution. kSlots measurements can wait to be read; a traced execution that finds them all pending
// reuses the oldest slot, and that measurement is counted as dropped.

#include <cstddef>
#include <cstdint>

#include "engine/engine.h"

namespace etrt::backend {

class DeviceTimer {
 public:
  static constexpr size_t kSlots = 4;

  struct Measurement {
    uint64_t execution = 0;     // the number start() gave it
    uint64_t host_start = 0;    // the caller's timestamp at start(), in its units (ExecuTorch's ticks)
    float milliseconds = 0.0F;  // device time between the two events
    int32_t profile = -1;       // what the execution ran on, as stop() was told
  };

  DeviceTimer() = default;
  ~DeviceTimer();  // destroys the events; measurements not yet read are lost
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  // Records the start event of execution `execution` on `stream` (the engine's device current). Creates the events
  // the first time (timing events cost more to record than the in-flight event, so untraced delegates never make
  // them). False, and nothing measured, when CUDA refuses or the build has no CUDA.
  bool start(engine::StreamHandle stream, uint64_t execution, uint64_t host_start) noexcept;
  // Records the stop event after the execution's device work on the same stream, for the slot start() opened.
  void stop(engine::StreamHandle stream, int32_t profile) noexcept;
  // Calls `sink(measurement)` for every measurement whose device work has finished, oldest first, and frees its slot.
  // Never waits.
  template <typename Sink>
  void read_ready(Sink&& sink) noexcept {
    Measurement m;
    while (pop_ready(&m)) sink(m);
  }
  // Measurements whose slot a later start() reused before they could be read.
  uint64_t dropped() const noexcept { return dropped_; }

 private:
  bool pop_ready(Measurement* out) noexcept;

  struct Slot {
    void* start = nullptr;  // cudaEvent_t (opaque: this header needs no CUDA)
    void* stop = nullptr;
    bool pending = false;  // both events recorded, not read yet
    Measurement m;
  };
  Slot slots_[kSlots];
  size_t open_ = kSlots;  // the slot start() recorded into and stop() has not closed; kSlots: none
  uint64_t dropped_ = 0;
};

}  // namespace etrt::backend
