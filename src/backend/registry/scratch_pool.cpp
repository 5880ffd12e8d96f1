// The registry of shared scratch pools (scratch_pool.h): one pool per (program, device, memory kind), sized by
// scratch_pool_policy.h, its buffer replaced through device.h.

#include "backend/registry/scratch_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

#include <executorch/runtime/platform/log.h>

#include "backend/policy/scratch_pool_policy.h"

namespace etrt::backend {

namespace {
// Bytes of the live delegates' private scratch (PrivateScratch).
std::atomic<int64_t> g_private_bytes{0};
}  // namespace

class ScratchRegistry {
 public:
  static Error join(const ScratchSpec& spec, const DeviceState* device, ScratchHold* out, Diagnostic& why) {
    ScratchRegistry& r = get();
    std::lock_guard<std::mutex> registry_lock(r.mutex_);
    ScratchPool* pool = nullptr;
    for (const auto& p : r.pools_)
      if (p->scope_ == spec.scope && p->device_id_ == spec.device_id && p->kind_ == spec.kind) pool = p.get();
    std::unique_ptr<ScratchPool> made;
    if (pool == nullptr) {
      made.reset(new ScratchPool);
      made->scope_ = spec.scope;
      made->kind_ = spec.kind;
      made->device_id_ = spec.device_id;
      pool = made.get();
    }
    {
      std::lock_guard<ScratchPool> pool_lock(*pool);
      const ScratchResize resize = resize_on_join(pool->buffer_.size(), pool->members_.size(), spec.need);
      if (resize.reallocate) {
        const size_t held = pool->buffer_.size();
        const Error status = replace_buffer(*pool, resize.bytes, why);
        if (status != Error::Ok) {
          why.prepend("could not %s the shared scratch memory to the %zu bytes delegate %s needs: ",
                      made ? "allocate" : "grow", spec.need, spec.delegate);
          return status;
        }
        if (!made)
          ET_LOG(Debug, "TensorRT delegate %s: the shared scratch memory grew from %zu to %zu bytes", spec.delegate,
                 held, resize.bytes);
      }
      pool->members_.push_back({device, spec.need});
    }
    if (made) r.pools_.push_back(std::move(made));
    out->pool_ = pool;
    out->device_ = device;
    return Error::Ok;
  }

  static void leave(ScratchHold* hold) {
    ScratchRegistry& r = get();
    std::unique_ptr<ScratchPool> last;  // freed outside the registry's lock
    {
      std::lock_guard<std::mutex> registry_lock(r.mutex_);
      ScratchPool& pool = *hold->pool_;
      std::lock_guard<ScratchPool> pool_lock(pool);
      auto& members = pool.members_;
      members.erase(std::remove_if(members.begin(), members.end(),
                                   [&](const ScratchPool::Member& m) { return m.device == hold->device_; }),
                    members.end());
      // The leaving delegate waited for its own work when it was destroyed: if it was the last user, nothing of
      // the pool's is left running.
      if (pool.turn_.event != nullptr && pool.turn_.event == hold->device_->in_flight_event) pool.turn_ = ScratchTurn{};
      size_t largest = 0;
      for (const ScratchPool::Member& m : members) largest = std::max(largest, m.need);
      const ScratchResize resize = resize_on_leave(pool.buffer_.size(), members.size(), largest);
      if (members.empty()) {
        auto it = std::find_if(r.pools_.begin(), r.pools_.end(), [&](const auto& p) { return p.get() == &pool; });
        last = std::move(*it);
        r.pools_.erase(it);
      } else if (resize.reallocate) {
        Diagnostic why;
        const size_t held = pool.buffer_.size();
        if (replace_buffer(pool, resize.bytes, why) != Error::Ok)  // it keeps the larger buffer, which still serves
          ET_LOG(Info, "etrt: the shared scratch memory stays at %zu bytes: %s", held, why.c_str());
      }
    }
    hold->pool_ = nullptr;
    hold->device_ = nullptr;
    if (last && last->kind_ == engine::MemoryKind::kDevice) {
      // cudaFree on the pool's own device.
      DeviceGuard device;
      Diagnostic ignored;
      (void)device.activate(last->device_id_, ignored, /*check_range=*/false);
      last.reset();
    }
  }

  static int64_t bytes() {
    ScratchRegistry& r = get();
    std::lock_guard<std::mutex> registry_lock(r.mutex_);
    int64_t total = g_private_bytes.load(std::memory_order_relaxed);
    for (const auto& p : r.pools_) total += static_cast<int64_t>(p->buffer_.size());
    return total;
  }

 private:
  // Leaked on purpose, as the counters' and the states' registries: a delegate destroyed during static destruction
  // still leaves its pool.
  static ScratchRegistry& get() {
    static ScratchRegistry* r = new ScratchRegistry;
    return *r;
  }

  // Under both locks: a buffer of `bytes` replaces the pool's once the work in the old one has finished (the new one
  // first, so a failure leaves the pool as it was), and the members move to it at their next execution.
  static Error replace_buffer(ScratchPool& pool, size_t bytes, Diagnostic& why) {
    DeviceGuard device;
    if (pool.kind_ == engine::MemoryKind::kDevice) {
      const Error activated = device.activate(pool.device_id_, why, /*check_range=*/false);
      if (activated != Error::Ok) return activated;
    }
    DeviceBuffer fresh;
    const Error status = fresh.allocate(pool.kind_, bytes, why);
    if (status != Error::Ok) return status;
    wait_for_scratch_turn(pool.turn_);
    pool.turn_ = ScratchTurn{};
    pool.buffer_.swap(fresh);
    ++pool.generation_;
    return Error::Ok;  // `fresh` frees the old buffer, with its device current
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<ScratchPool>> pools_;
};

void ScratchHold::release() {
  if (pool_ != nullptr) ScratchRegistry::leave(this);
}

Error join_scratch_pool(const ScratchSpec& spec, const DeviceState* device, ScratchHold* out, Diagnostic& why) {
  return ScratchRegistry::join(spec, device, out, why);
}

PrivateScratch::~PrivateScratch() {
  g_private_bytes.fetch_sub(static_cast<int64_t>(bytes_), std::memory_order_relaxed);
}

void PrivateScratch::count(size_t bytes) {
  g_private_bytes.fetch_add(static_cast<int64_t>(bytes) - static_cast<int64_t>(bytes_), std::memory_order_relaxed);
  bytes_ = bytes;
}

int64_t scratch_bytes_held() { return ScratchRegistry::bytes(); }

}  // namespace etrt::backend
