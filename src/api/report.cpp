// etrt::ExecutionReport (etrt/report.h): the reports open on each thread, innermost first, which every execution
// of a TensorRT delegate on that thread appends to.

#include "etrt/report.h"

#include "common/fast_tls.h"

namespace etrt {
namespace {

thread_local ExecutionReport* t_current_report ETRT_FAST_TLS = nullptr;

}  // namespace

ExecutionReport::ExecutionReport() noexcept : previous_(t_current_report) { t_current_report = this; }
ExecutionReport::~ExecutionReport() { t_current_report = previous_; }
bool ExecutionReport::active_on_this_thread() noexcept { return t_current_report != nullptr; }

void ExecutionReport::record_on_this_thread(const ExecutionRecord& r) noexcept {
  for (ExecutionReport* report = t_current_report; report != nullptr; report = report->previous_) report->record(r);
}

void ExecutionReport::record(const ExecutionRecord& r) noexcept {
  if (count_ < kCapacity) records_[count_] = r;
  ++count_;
  if (r.switched) ++switches_;
}

}  // namespace etrt
