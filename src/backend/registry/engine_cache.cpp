// The engine cache (engine_cache.h): live engines in one list under one lock. An engine being made is listed, not
// ready, so a second load of its key waits for it instead of deserializing it again; loads of other keys go on.
// Keys whose engine was found not to share profiles are remembered, so later loads of them neither wait nor ask
// again (on TensorRT 8.6 asking costs two contexts: seconds for a multi-GB engine).

#include "backend/registry/engine_cache.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

namespace etrt::backend {
namespace {

struct Entry {
  EngineKey key;
  int64_t bytes = 0;
  bool shared = false;  // found by later loads of its key
  bool ready = false;   // made; until then `engine` is null and loads of the key wait
  std::unique_ptr<engine::Engine> engine;
  int64_t sessions = 0;
};

// Keys found not to share, the latest kKept (an older one forgotten asks again at its next load). A fixed ring:
// recording one cannot fail once the engine is made.
class Unshareable {
 public:
  static constexpr size_t kKept = 64;
  bool holds(const EngineKey& key) const {
    for (size_t i = 0; i < count_; ++i)
      if (keys_[i] == key) return true;
    return false;
  }
  void add(const EngineKey& key) {
    if (holds(key)) return;
    keys_[next_] = key;
    next_ = (next_ + 1) % kKept;
    count_ = std::min(count_ + 1, kKept);
  }

 private:
  std::array<EngineKey, kKept> keys_{};
  size_t count_ = 0, next_ = 0;
};

struct Cache {
  std::mutex mutex;
  std::condition_variable made;  // an entry became ready, or left
  std::vector<Entry*> entries;   // every engine held or being made
  Unshareable unshareable;       // keys whose engine cannot share profiles
  int64_t deserialized = 0;
};

// Leaked on purpose: a delegate destroyed during static destruction (a Module held by a static) still releases.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// Holding the lock: the ready, shared entry of `key`, or the one being made (ready false), or null.
Entry* find(Cache& c, const EngineKey& key) {
  for (Entry* e : c.entries)
    if (e->shared && e->key == key) return e;
  return nullptr;
}

void remove(Cache& c, Entry* entry) { c.entries.erase(std::find(c.entries.begin(), c.entries.end(), entry)); }

// Drops one hold; the last takes the engine out of the cache and destroys it, outside the lock.
struct Release {
  Entry* entry;
  void operator()(engine::Engine*) const {
    Cache& c = cache();
    std::unique_lock<std::mutex> lock(c.mutex);
    if (--entry->sessions > 0) return;
    remove(c, entry);
    lock.unlock();
    delete entry;
  }
};

// A hold on `entry`, whose count the caller raised under the lock. Made after unlocking: should the control block's
// allocation throw, the hold is released (Release takes the lock) before the exception leaves.
EngineHold hold(Entry* entry) { return EngineHold(entry->engine.get(), Release{entry}); }

// Forgets an entry whose making failed or threw, and wakes the loads waiting for it (one of them makes it again).
void forget(Cache& c, std::unique_ptr<Entry>& entry) {
  std::lock_guard<std::mutex> lock(c.mutex);
  remove(c, entry.get());
  c.made.notify_all();
}

}  // namespace

Error acquire_engine(const EngineKey& key, size_t bytes, bool share, const MakeEngine& make, EngineHold* out,
                     Diagnostic& why) {
  Cache& c = cache();
  std::unique_lock<std::mutex> lock(c.mutex);
  if (share) {
    for (Entry* found = find(c, key); found != nullptr; found = find(c, key)) {
      if (found->ready) {
        ++found->sessions;
        lock.unlock();
        *out = hold(found);
        return Error::Ok;
      }
      c.made.wait(lock);  // its maker finishes it, or gives up, or finds it cannot be shared
    }
    share = !c.unshareable.holds(key);
  }
  auto entry = std::make_unique<Entry>();
  entry->key = key;
  entry->bytes = static_cast<int64_t>(bytes);
  entry->shared = share;  // for now: loads of the key wait for this one
  c.entries.push_back(entry.get());
  lock.unlock();

  std::unique_ptr<engine::Engine> made;
  Error status = Error::Internal;
  bool shared = false;
  try {
    status = make(&made, why);
    // The engine is asked only when this load would share it (the answer may come from trying, engine.h), and
    // before this load creates any context.
    shared = status == Error::Ok && share && shares_engine(share, made->profiles_shared_across_contexts());
  } catch (...) {
    forget(c, entry);
    throw;
  }
  if (status != Error::Ok) {
    forget(c, entry);
    return status;
  }
  lock.lock();
  if (share && !shared) c.unshareable.add(key);
  ++c.deserialized;
  entry->engine = std::move(made);
  entry->shared = shared;
  entry->ready = true;
  entry->sessions = 1;
  c.made.notify_all();
  lock.unlock();
  *out = hold(entry.release());
  return Error::Ok;
}

EngineCacheTotals engine_cache_totals() noexcept {
  Cache& c = cache();
  EngineCacheTotals totals;
  std::lock_guard<std::mutex> lock(c.mutex);
  totals.deserialized = c.deserialized;
  for (const Entry* e : c.entries) {
    if (!e->ready) continue;
    ++totals.resident;
    totals.bytes_resident += e->bytes;
    totals.sessions += e->sessions;
  }
  return totals;
}

}  // namespace etrt::backend
