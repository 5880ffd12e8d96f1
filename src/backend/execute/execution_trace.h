#pragma once
// ExecuTorch glue: etrt's steps as delegate events in ExecuTorch's event tracer, so its profiling tools (ETDumpGen,
// executorch.devtools.Inspector) see which profile each execution ran on and where its time went. Used only when the
// execution's BackendExecutionContext carries a tracer (Executor::execute_traced); an execution without one never
// reaches this file. docs/profiling.md lists the events and what each means.
//
// The steps are timed as they run (start/stop, ExecuTorch's clock) and logged together at the end, once the outcome
// is known (ExecuTorch's event_tracer_log_profiling_delegate): the profile choice carries whether the execution
// switched, which only the switch step finds out. Every event is named (a string delegate debug identifier) with a
// JSON object as its metadata; the exporter maps each name to the partition's nodes (python/etrt/profiling.py), so
// the Inspector attributes the events to the delegate call. Nothing here allocates: the stamps and the metadata text
// are fixed-size.

#include <cstddef>
#include <cstdint>

#include <executorch/runtime/core/event_tracer.h>

#include "backend/device/device_timer.h"
#include "engine/engine.h"

namespace etrt::backend {

// The steps an execution logs, in order, and their event names. The names are the keys of the debug handle map the
// exporter writes (python/etrt/profiling.py EVENT_NAMES): change both together.
enum class TraceStep : uint8_t { kChoice, kSwitch, kShapes, kStage, kEnqueue, kCopyBack, kCount };
inline constexpr const char* kTraceStepNames[] = {
    "etrt profile choice", "etrt profile switch", "etrt set shapes",
    "etrt stage inputs",   "etrt enqueue",        "etrt copy back",
};
inline constexpr const char kTraceDeviceTimeName[] = "etrt device time";
static_assert(sizeof(kTraceStepNames) / sizeof(kTraceStepNames[0]) == static_cast<size_t>(TraceStep::kCount),
              "one name per step");

// What one execution did, as the delegate knows it at the end.
struct TraceOutcome {
  int32_t profile = -1;       // the profile chosen (-1: refused before a choice)
  int32_t from_profile = -1;  // the profile active before the execution
  int32_t num_profiles = 0;
  bool switched = false;
  bool pin_ignored = false;
  bool context_per_profile = false;  // the switch picked another context rather than calling the engine
  bool ok = false;
  uint32_t staged_inputs = 0;   // inputs copied into a staging buffer
  uint32_t staged_outputs = 0;  // outputs copied back from one
};

class ExecutionTrace {
 public:
  // Starts tracing an execution into `tracer` (not null).
  void begin(executorch::runtime::EventTracer* tracer) noexcept;
  bool on() const noexcept { return tracer_ != nullptr; }

  // A step's start and stop; a step that never stops (its execution was refused first) is not logged. Inline, a
  // check of the tracer: the clock is read out of line, so that the steps' code stays as it was without a tracer.
  void start(TraceStep step) noexcept {
    if (tracer_ != nullptr) stamp(step, /*stop=*/false);
  }
  void stop(TraceStep step) noexcept {
    if (tracer_ != nullptr) stamp(step, /*stop=*/true);
  }

  // The execution's device work on a device engine: start() after the wait for the previous execution, on its
  // stream, and stop() after its last work (the engine's device current).
  void start_device(engine::StreamHandle stream) noexcept;
  void stop_device(engine::StreamHandle stream, int32_t profile) noexcept;

  // Logs every step that ran and every device time ready to be read (never waiting for one), then stops tracing.
  void end(const TraceOutcome& outcome) noexcept;

 private:
  static size_t index(TraceStep step) { return static_cast<size_t>(step); }
  static uint64_t now() noexcept;
  void stamp(TraceStep step, bool stop) noexcept;
  void log(const char* name, uint64_t start, uint64_t stop, const char* metadata) noexcept;
  void log_device_times() noexcept;

  executorch::runtime::EventTracer* tracer_ = nullptr;
  uint64_t start_[static_cast<size_t>(TraceStep::kCount)] = {};
  uint64_t stop_[static_cast<size_t>(TraceStep::kCount)] = {};
  uint32_t ran_ = 0;         // bit per step
  uint64_t executions_ = 0;  // traced executions so far: the number a device time names
  DeviceTimer device_timer_;
};

// Times the step it lives in, when the execution is traced (a check of the tracer otherwise).
class TracedStep {
 public:
  TracedStep(ExecutionTrace& trace, TraceStep step) noexcept : trace_(trace), step_(step) { trace_.start(step_); }
  ~TracedStep() { trace_.stop(step_); }
  TracedStep(const TracedStep&) = delete;
  TracedStep& operator=(const TracedStep&) = delete;

 private:
  ExecutionTrace& trace_;
  TraceStep step_;
};

}  // namespace etrt::backend
