// etrt::ExecutionReport (etrt/report.h): the reports open on each thread, innermost first, which every execution
// of a TensorRT delegate on that thread appends to.

#include "etrt/report.h"

#include "backend/glue/thread_state.h"

namespace etrt {
namespace {

// The innermost open report lives in the thread's block (backend/thread_state.h).
ExecutionReport*& current_report() noexcept { return backend::thread_state().report; }

}  // namespace

ExecutionReport::ExecutionReport() noexcept : previous_(current_report()) { current_report() = this; }
ExecutionReport::~ExecutionReport() { current_report() = previous_; }

void ExecutionReport::record_on_this_thread(const ExecutionRecord& r) noexcept {
  for (ExecutionReport* report = current_report(); report != nullptr; report = report->previous_) report->record(r);
}

void ExecutionReport::record(const ExecutionRecord& r) noexcept {
  if (count_ < kCapacity) records_[count_] = r;
  ++count_;
  if (r.switched) ++switches_;
}

}  // namespace etrt
