#include "backend/glue/counters.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "backend/registry/delegate_state.h"
#include "backend/registry/engine_cache.h"
#include "backend/registry/scratch_pool.h"
#include "etrt/options.h"

namespace etrt::backend {
namespace {

struct Registry {
  std::mutex mutex;
  DelegateCounts* live = nullptr;  // the newest live delegate's counts; a doubly linked list through them
  int64_t destroyed_executions = 0;
  int64_t destroyed_switches = 0;
  CopiedBytes destroyed_copied;
};

void add_copied(CopiedBytes& to, const std::atomic<int64_t>& h2d, const std::atomic<int64_t>& d2h,
                const std::atomic<int64_t>& realigned, const std::atomic<int64_t>& write_back) {
  to.host_to_device += h2d.load(std::memory_order_relaxed);
  to.device_to_host += d2h.load(std::memory_order_relaxed);
  to.realigned += realigned.load(std::memory_order_relaxed);
  to.write_back += write_back.load(std::memory_order_relaxed);
}

// Leaked on purpose: a delegate destroyed during static destruction (a Module held by a static) still leaves it.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

struct Counter {
  const char* name;
  int64_t (*read)(const CounterTotals& totals);
};

// The table: one row per counter of etrt/options.h, in its order.
constexpr Counter kCounters[] = {
    {kCounterProfileSwitches, [](const CounterTotals& t) -> int64_t { return t.switches; }},
    {kCounterExecutions, [](const CounterTotals& t) -> int64_t { return t.executions; }},
    {kCounterLastProfile, [](const CounterTotals& t) -> int64_t { return t.last_profile; }},
    {kCounterStateBytes, [](const CounterTotals&) -> int64_t { return state_bytes_held(); }},
    {kCounterScratchBytes, [](const CounterTotals&) -> int64_t { return scratch_bytes_held(); }},
    {kCounterHostToDeviceBytes, [](const CounterTotals& t) -> int64_t { return t.copied.host_to_device; }},
    {kCounterDeviceToHostBytes, [](const CounterTotals& t) -> int64_t { return t.copied.device_to_host; }},
    {kCounterRealignedBytes, [](const CounterTotals& t) -> int64_t { return t.copied.realigned; }},
    {kCounterWriteBackBytes, [](const CounterTotals& t) -> int64_t { return t.copied.write_back; }},
    {kCounterEnginesDeserialized, [](const CounterTotals&) -> int64_t { return engine_cache_totals().deserialized; }},
    {kCounterEnginesResident, [](const CounterTotals&) -> int64_t { return engine_cache_totals().resident; }},
    {kCounterEngineBytes, [](const CounterTotals&) -> int64_t { return engine_cache_totals().bytes_resident; }},
    {kCounterEngineSessions, [](const CounterTotals&) -> int64_t { return engine_cache_totals().sessions; }},
};

}  // namespace

std::atomic<int32_t> DelegateCounts::last_profile_{-1};

DelegateCounts::DelegateCounts() noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  next_ = r.live;
  if (next_ != nullptr) next_->previous_ = this;
  r.live = this;
}

DelegateCounts::~DelegateCounts() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.destroyed_executions += executions_.load(std::memory_order_relaxed);
  r.destroyed_switches += switches_.load(std::memory_order_relaxed);
  add_copied(r.destroyed_copied, host_to_device_, device_to_host_, realigned_, write_back_);
  if (previous_ != nullptr)
    previous_->next_ = next_;
  else
    r.live = next_;
  if (next_ != nullptr) next_->previous_ = previous_;
}

CounterTotals counter_totals() noexcept {
  Registry& r = registry();
  CounterTotals totals;
  std::lock_guard<std::mutex> lock(r.mutex);
  totals.executions = r.destroyed_executions;
  totals.switches = r.destroyed_switches;
  totals.copied = r.destroyed_copied;
  for (const DelegateCounts* c = r.live; c != nullptr; c = c->next_) {
    totals.executions += c->executions_.load(std::memory_order_relaxed);
    totals.switches += c->switches_.load(std::memory_order_relaxed);
    add_copied(totals.copied, c->host_to_device_, c->device_to_host_, c->realigned_, c->write_back_);
  }
  totals.last_profile = DelegateCounts::last_profile_.load(std::memory_order_relaxed);
  return totals;
}

bool read_counter(const CounterTotals& totals, const char* name, int64_t* value) {
  for (const Counter& counter : kCounters) {
    if (std::strcmp(name, counter.name) == 0) {
      *value = counter.read(totals);
      return true;
    }
  }
  return false;
}

const char* counter_names() noexcept {
  static const std::array<char, 512> text = [] {
    std::array<char, 512> names{};
    size_t used = 0;
    for (const Counter& counter : kCounters) {
      const int n = std::snprintf(names.data() + used, names.size() - used, "%s%s", used == 0 ? "" : ", ",
                                  counter.name);
      if (n < 0 || static_cast<size_t>(n) >= names.size() - used) break;  // cannot happen: the names are short
      used += static_cast<size_t>(n);
    }
    return names;
  }();
  return text.data();
}

}  // namespace etrt::backend
