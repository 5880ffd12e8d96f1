// ExecutionTrace (execution_trace.h): etrt's steps as ExecuTorch delegate events.

#include "backend/execute/execution_trace.h"

#include <cstdio>

#include <executorch/runtime/core/event_tracer_hooks_delegate.h>
#include <executorch/runtime/platform/platform.h>

#include "common/compiler.h"

namespace etrt::backend {

namespace {

// Events are named, not numbered. ETDumpGen aborts unless exactly one of the two is given, and "no number" is
// kUnsetDelegateDebugIntId (-1) -- not kUnsetDebugHandle (0), which the hooks' own comment suggests.
const auto kNamed = static_cast<executorch::runtime::DebugHandle>(executorch::runtime::kUnsetDelegateDebugIntId);

const char* flag(bool b) { return b ? "true" : "false"; }

}  // namespace

uint64_t ExecutionTrace::now() noexcept { return executorch::runtime::pal_current_ticks(); }

ETRT_COLD ETRT_NOINLINE void ExecutionTrace::stamp(TraceStep step, bool stop) noexcept {
  const auto s = static_cast<size_t>(step);
  if (stop) {
    stop_[s] = now();
    ran_ |= 1U << s;
  } else {
    start_[s] = now();
  }
}

void ExecutionTrace::begin(executorch::runtime::EventTracer* tracer) noexcept {
  tracer_ = tracer;
  ran_ = 0;
  ++executions_;
}

void ExecutionTrace::start_device(engine::StreamHandle stream) noexcept {
  // Device times of earlier executions that finished meanwhile go into this execution's run.
  log_device_times();
  (void)device_timer_.start(stream, executions_, now());
}

void ExecutionTrace::stop_device(engine::StreamHandle stream, int32_t profile) noexcept {
  device_timer_.stop(stream, profile);
}

void ExecutionTrace::log(const char* name, uint64_t start, uint64_t stop, const char* metadata) noexcept {
  size_t length = 0;
  while (metadata[length] != '\0') ++length;
  executorch::runtime::event_tracer_log_profiling_delegate(tracer_, name, kNamed, start, stop, metadata, length);
}

void ExecutionTrace::end(const TraceOutcome& o) noexcept {
  char metadata[192];
  for (size_t s = 0; s < static_cast<size_t>(TraceStep::kCount); ++s) {
    if ((ran_ & (1U << s)) == 0) continue;
    switch (static_cast<TraceStep>(s)) {
      case TraceStep::kChoice:
        std::snprintf(metadata, sizeof(metadata),
                      "{\"profile\":%d,\"switched\":%s,\"pin_ignored\":%s,\"num_profiles\":%d,\"ok\":%s,"
                      "\"execution\":%llu}",
                      o.profile, flag(o.switched), flag(o.pin_ignored), o.num_profiles, flag(o.ok),
                      static_cast<unsigned long long>(executions_));
        break;
      case TraceStep::kSwitch:
        if (!o.switched) continue;  // the step found the context on the chosen profile already
        std::snprintf(metadata, sizeof(metadata), "{\"from\":%d,\"to\":%d,\"strategy\":\"%s\"}", o.from_profile,
                      o.profile, o.context_per_profile ? "context_per_profile" : "switch");
        break;
      case TraceStep::kStage:
        std::snprintf(metadata, sizeof(metadata), "{\"staged\":%u}", o.staged_inputs);
        break;
      case TraceStep::kCopyBack:
        std::snprintf(metadata, sizeof(metadata), "{\"staged\":%u}", o.staged_outputs);
        break;
      case TraceStep::kShapes:
      case TraceStep::kEnqueue:
      case TraceStep::kCount:
        std::snprintf(metadata, sizeof(metadata), "{\"profile\":%d}", o.profile);
        break;
    }
    log(kTraceStepNames[s], start_[s], stop_[s], metadata);
  }
  log_device_times();
  tracer_ = nullptr;
}

// Every device time ready now, as its own event: it starts where the execution's host side did and lasts as long
// as the device work did, in ExecuTorch's ticks.
void ExecutionTrace::log_device_times() noexcept {
  const et_tick_ratio_t ratio = et_pal_ticks_to_ns_multiplier();
  device_timer_.read_ready([&](const DeviceTimer::Measurement& m) {
    const double ns = static_cast<double>(m.milliseconds) * 1e6;
    const auto ticks =
        static_cast<uint64_t>(ns * static_cast<double>(ratio.denominator) / static_cast<double>(ratio.numerator));
    char metadata[192];
    std::snprintf(metadata, sizeof(metadata),
                  "{\"profile\":%d,\"execution\":%llu,\"this_execution\":%s,\"dropped\":%llu}", m.profile,
                  static_cast<unsigned long long>(m.execution), flag(m.execution == executions_),
                  static_cast<unsigned long long>(device_timer_.dropped()));
    log(kTraceDeviceTimeName, m.host_start, m.host_start + ticks, metadata);
  });
}

}  // namespace etrt::backend
