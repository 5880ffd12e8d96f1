#include "etrt_gpufree/faults.h"

#include <atomic>
#include <map>
#include <mutex>

namespace etrt::gpufree {

namespace {

struct Armed {
  bool armed = false;
  int64_t remaining = 0;  // calls until it fires, this one included
  std::string label;
};

struct Faults {
  std::mutex mutex;
  Armed armed[kCallCount];
  std::map<std::string, std::function<void()>> hooks;
};

Faults& faults() {
  static Faults* f = new Faults;  // leaked: engines destroyed during static destruction still ask
  return *f;
}

std::atomic<int> g_armed{0};
std::atomic<int> g_hooks{0};
std::atomic<int64_t> g_fired{0};

}  // namespace

const char* to_string(Call call) {
  switch (call) {
    case Call::kCreateInferRuntime: return "createInferRuntime";
    case Call::kDeserializeCudaEngine: return "deserializeCudaEngine";
    case Call::kCreateExecutionContext: return "createExecutionContext";
    case Call::kSetOptimizationProfileAsync: return "setOptimizationProfileAsync";
    case Call::kSetInputShape: return "setInputShape";
    case Call::kGetTensorShape: return "getTensorShape";
    case Call::kSetTensorAddress: return "setTensorAddress";
    case Call::kSetDeviceMemoryV2: return "setDeviceMemoryV2";
    case Call::kEnqueueV3: return "enqueueV3";
    case Call::kSetWeightStreamingBudgetV2: return "setWeightStreamingBudgetV2";
  }
  return "unknown call";
}

void inject_fault(Call call, int64_t nth, const std::string& label) {
  Faults& f = faults();
  std::lock_guard<std::mutex> lock(f.mutex);
  Armed& a = f.armed[static_cast<int>(call)];
  if (!a.armed) g_armed.fetch_add(1);
  a.armed = true;
  a.remaining = nth < 1 ? 1 : nth;
  a.label = label;
}

void clear_faults() {
  Faults& f = faults();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (Armed& a : f.armed) a = Armed{};
  g_armed.store(0);
}

int64_t faults_fired() { return g_fired.load(); }

bool detail::fault_fires(Call call, const std::string& label) {
  if (g_armed.load(std::memory_order_relaxed) == 0) return false;
  Faults& f = faults();
  std::lock_guard<std::mutex> lock(f.mutex);
  Armed& a = f.armed[static_cast<int>(call)];
  if (!a.armed) return false;
  if (!a.label.empty() && call != Call::kCreateInferRuntime && a.label != label) return false;
  if (--a.remaining > 0) return false;
  a = Armed{};
  g_armed.fetch_sub(1);
  g_fired.fetch_add(1);
  return true;
}

void set_enqueue_hook(const std::string& label, std::function<void()> hook) {
  Faults& f = faults();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (hook) {
    f.hooks[label] = std::move(hook);
  } else {
    f.hooks.erase(label);
  }
  g_hooks.store(static_cast<int>(f.hooks.size()));
}

void detail::run_enqueue_hook(const std::string& label) {
  if (g_hooks.load(std::memory_order_relaxed) == 0) return;
  std::function<void()> hook;
  {
    Faults& f = faults();
    std::lock_guard<std::mutex> lock(f.mutex);
    auto it = f.hooks.find(label);
    if (it == f.hooks.end()) return;
    hook = it->second;
  }
  hook();
}

}  // namespace etrt::gpufree
