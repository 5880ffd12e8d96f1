#include "etrt_gpufree/trace.h"

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include "model.h"

namespace etrt::gpufree {

namespace detail {

// Bounded per label: at most kMaxTraceEvents events, and at most kMaxEventsKeptAcrossReloads of those from before
// the label last had no engine alive (see trace.h). The record itself stays for the life of the process, since
// engines and their contexts hold its address; released, it holds no heap memory besides its label.
struct TraceRecord {
  std::mutex mutex;
  // A ring: the oldest event is events[head] once the ring is full; a vector, so that release() frees it entirely.
  std::vector<TraceEvent> events;
  size_t head = 0;
  TraceCounters counters;
  // Engines loaded under this label and not yet destroyed (as far as the trace saw them go).
  int64_t live_engines = 0;
  // Its place in the sink's list of retired records, while it is one (no live engine, events kept).
  bool retired = false;
  std::list<TraceRecord*>::iterator retired_at;

  // Keeps the newest `keep` events, in a vector of exactly that capacity.
  void trim(size_t keep) {
    if (events.size() <= keep && head == 0 && events.capacity() == events.size()) return;
    const size_t n = events.size() < keep ? events.size() : keep;
    std::vector<TraceEvent> newest;
    newest.reserve(n);
    for (size_t i = events.size() - n; i < events.size(); ++i)
      newest.push_back(std::move(events[(head + i) % events.size()]));
    counters.dropped_events += static_cast<int64_t>(events.size() - n);
    events.swap(newest);
    head = 0;
  }
  void release() { trim(0); }
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
  // Records whose engines are all destroyed and that still hold events, oldest retirement first. Past
  // kMaxRetiredTraces the oldest one's events are released.
  std::list<TraceRecord*> retired;
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

// Holding the sink's lock and the record's.
void unretire(Sink& s, TraceRecord& r) {
  if (!r.retired) return;
  s.retired.erase(r.retired_at);
  r.retired = false;
}

// Holding the sink's lock, not the record's (it takes the records' locks itself).
void retire(Sink& s, TraceRecord* r) {
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    if (r->live_engines > 0 || r->retired || r->events.empty()) return;
    r->retired = true;
    r->retired_at = s.retired.insert(s.retired.end(), r);
  }
  while (s.retired.size() > kMaxRetiredTraces) {
    TraceRecord* oldest = s.retired.front();
    s.retired.pop_front();
    std::lock_guard<std::mutex> lock(oldest->mutex);
    oldest->retired = false;
    oldest->release();
  }
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
  std::lock_guard<std::mutex> record_lock(r->mutex);
  // The first engine of a new generation: of the events of the engines before it, all destroyed, the newest few stay.
  if (r->live_engines == 0) r->trim(kMaxEventsKeptAcrossReloads);
  unretire(s, *r);
  ++r->live_engines;
  return r.get();
}

void record(TraceRecord* r, TraceEvent event) {
  const bool engine_gone = event.kind == TraceKind::kDestroyEngine;
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    // Numbered under the record's lock so one label's events are in sequence order.
    event.sequence = g_sequence.fetch_add(1, std::memory_order_relaxed) + 1;
    count(r->counters, event);
    if (r->events.size() < kMaxTraceEvents) {
      r->events.push_back(std::move(event));
    } else {
      r->events[r->head] = std::move(event);
      r->head = (r->head + 1) % kMaxTraceEvents;
      ++r->counters.dropped_events;
    }
    if (engine_gone && r->live_engines > 0) --r->live_engines;
    if (!engine_gone || r->live_engines > 0) return;
  }
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  retire(s, r);
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
  std::vector<TraceEvent> out;
  out.reserve(r->events.size());
  const auto head = static_cast<std::ptrdiff_t>(r->head);
  out.insert(out.end(), r->events.begin() + head, r->events.end());
  out.insert(out.end(), r->events.begin(), r->events.begin() + head);
  return out;
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
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.records.find(label);
  if (it == s.records.end()) return;
  TraceRecord& r = *it->second;
  std::lock_guard<std::mutex> record_lock(r.mutex);
  unretire(s, r);
  std::vector<TraceEvent>().swap(r.events);
  r.head = 0;
  r.counters = TraceCounters{};
}

void clear_all_traces() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.retired.clear();
  for (auto& entry : s.records) {
    TraceRecord& r = *entry.second;
    std::lock_guard<std::mutex> record_lock(r.mutex);
    r.retired = false;
    std::vector<TraceEvent>().swap(r.events);
    r.head = 0;
    r.counters = TraceCounters{};
  }
}

size_t trace_memory_bytes() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  size_t bytes = 0;
  for (auto& entry : s.records) {
    TraceRecord& r = *entry.second;
    std::lock_guard<std::mutex> record_lock(r.mutex);
    bytes += sizeof(TraceRecord) + entry.first.capacity() + r.events.capacity() * sizeof(TraceEvent);
    for (const TraceEvent& e : r.events) bytes += e.error.capacity() + e.input_shapes.capacity() * sizeof(Shape);
  }
  return bytes;
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
