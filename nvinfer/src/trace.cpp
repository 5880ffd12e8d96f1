#include "etrt_gpufree/trace.h"

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "model.h"

namespace etrt::gpufree {

namespace detail {

struct TraceRecord {
  std::mutex mutex;
  std::deque<TraceEvent> events;
  TraceCounters counters;
};

}  // namespace detail

namespace {

using detail::TraceRecord;

std::atomic<bool> g_enabled{true};
std::atomic<uint64_t> g_sequence{0};

struct Sink {
  std::mutex mutex;
  // unique_ptr keeps each record's address stable for the engines holding it.
  std::map<std::string, std::unique_ptr<TraceRecord>> records;
};

// Leaked on purpose: engines destroyed during static destruction (a Module held by a static) still record.
Sink& sink() {
  static Sink* s = new Sink;
  return *s;
}

TraceRecord* find(const std::string& label) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.records.find(label);
  return it == s.records.end() ? nullptr : it->second.get();
}

void count(TraceCounters& c, const TraceEvent& e) {
  if (!e.ok) ++c.failures;
  switch (e.kind) {
    case TraceKind::kLoadEngine:
      c.engines_loaded += 1;
      break;
    case TraceKind::kCreateContext:
      c.contexts_created += e.ok ? 1 : 0;
      break;
    case TraceKind::kDestroyContext:
      c.contexts_destroyed += 1;
      break;
    case TraceKind::kSetOptimizationProfile:
      (e.ok ? c.switches : c.failed_switches) += 1;
      break;
    case TraceKind::kEnqueue:
      (e.ok ? c.enqueues : c.failed_enqueues) += 1;
      if (e.ok) c.last_enqueue_profile = e.profile;
      break;
    default:
      break;
  }
}

}  // namespace

namespace detail {

TraceRecord* trace_record(const std::string& label) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::unique_ptr<TraceRecord>& r = s.records[label];
  if (!r) r = std::make_unique<TraceRecord>();
  return r.get();
}

void record(TraceRecord* r, TraceEvent event) {
  std::lock_guard<std::mutex> lock(r->mutex);
  // Numbered under the record's lock so one label's events are in sequence order.
  event.sequence = g_sequence.fetch_add(1, std::memory_order_relaxed) + 1;
  count(r->counters, event);
  if (r->events.size() >= kMaxTraceEvents) {
    r->events.pop_front();
    ++r->counters.dropped_events;
  }
  r->events.push_back(std::move(event));
}

}  // namespace detail

const char* to_string(TraceKind kind) {
  switch (kind) {
    case TraceKind::kLoadEngine:
      return "load_engine";
    case TraceKind::kDestroyEngine:
      return "destroy_engine";
    case TraceKind::kCreateContext:
      return "create_context";
    case TraceKind::kDestroyContext:
      return "destroy_context";
    case TraceKind::kSetOptimizationProfile:
      return "set_optimization_profile";
    case TraceKind::kSetInputShape:
      return "set_input_shape";
    case TraceKind::kSetTensorAddress:
      return "set_tensor_address";
    case TraceKind::kSetDeviceMemory:
      return "set_device_memory";
    case TraceKind::kEnqueue:
      return "enqueue";
    case TraceKind::kSetWeightStreamingBudget:
      return "set_weight_streaming_budget";
  }
  return "unknown";
}

std::vector<TraceEvent> trace_events(const std::string& label) {
  TraceRecord* r = find(label);
  if (r == nullptr) return {};
  std::lock_guard<std::mutex> lock(r->mutex);
  return std::vector<TraceEvent>(r->events.begin(), r->events.end());
}

TraceCounters trace_counters(const std::string& label) {
  TraceRecord* r = find(label);
  if (r == nullptr) return {};
  std::lock_guard<std::mutex> lock(r->mutex);
  return r->counters;
}

int64_t count_switches(const std::string& label) { return trace_counters(label).switches; }
int64_t count_enqueues(const std::string& label) { return trace_counters(label).enqueues; }
int32_t last_enqueue_profile(const std::string& label) { return trace_counters(label).last_enqueue_profile; }

void clear_trace(const std::string& label) {
  TraceRecord* r = find(label);
  if (r == nullptr) return;
  std::lock_guard<std::mutex> lock(r->mutex);
  r->events.clear();
  r->counters = TraceCounters{};
}

void clear_all_traces() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& entry : s.records) {
    std::lock_guard<std::mutex> record_lock(entry.second->mutex);
    entry.second->events.clear();
    entry.second->counters = TraceCounters{};
  }
}

void set_tracing_enabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }
bool tracing_enabled() { return g_enabled.load(std::memory_order_relaxed); }

std::string to_string(const TraceEvent& e) {
  std::string s = "#" + std::to_string(e.sequence) + " engine " + std::to_string(e.engine_id);
  if (e.context_id != 0) s += " context " + std::to_string(e.context_id);
  s += std::string(" ") + to_string(e.kind);
  switch (e.kind) {
    case TraceKind::kSetOptimizationProfile:
      s += " " + std::to_string(e.previous_profile) + " -> " + std::to_string(e.profile);
      if (e.switch_cost_ns > 0) s += " (cost " + std::to_string(e.switch_cost_ns) + " ns)";
      break;
    case TraceKind::kSetInputShape:
      s += " io " + std::to_string(e.io_index) + " " + shape_to_string(e.shape);
      break;
    case TraceKind::kSetTensorAddress:
      s += " io " + std::to_string(e.io_index);
      break;
    case TraceKind::kSetDeviceMemory:
    case TraceKind::kSetWeightStreamingBudget:
      s += " " + std::to_string(e.size) + " bytes";
      break;
    case TraceKind::kEnqueue:
      s += " profile " + std::to_string(e.profile);
      for (const Shape& shape : e.input_shapes) s += " " + shape_to_string(shape);
      break;
    default:
      break;
  }
  if (!e.ok) s += " FAILED: " + e.error;
  return s;
}

}  // namespace etrt::gpufree
