// The registry of delegate-owned state (delegate_state.h): one storage per (scope, name), held by the delegates
// that use it, freed with the last hold.

#include "backend/registry/delegate_state.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/shape_text.h"

namespace etrt::backend {

struct StateStorage {
  StateSpec spec;  // what the first delegate asked for; later ones must agree
  DeviceBuffer buffer;
  std::vector<StateUser> users;
};

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<StateStorage>> states;
};

// Leaked on purpose, as the counters' registry: a delegate destroyed during static destruction still releases.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Writes the initial value (or zeros) with the state's device current.
Error initialise(const StateStorage& s, Diagnostic& why) {
  DeviceGuard device;
  if (s.spec.kind == engine::MemoryKind::kDevice) {
    const Error activated = device.activate(s.spec.device_id, why, /*check_range=*/false);
    if (activated != Error::Ok) return activated;
  }
  const Error status =
      fill_buffer(s.buffer, s.spec.initial.empty() ? nullptr : s.spec.initial.data(), s.spec.bytes, why);
  if (status != Error::Ok) why.prepend("state '%s': ", s.spec.name.c_str());
  return status;
}

}  // namespace

void* StateHold::data() const { return storage_ != nullptr ? storage_->buffer.data() : nullptr; }
size_t StateHold::bytes() const { return storage_ != nullptr ? storage_->spec.bytes : 0; }

void StateHold::release() {
  if (storage_ == nullptr) return;
  Registry& r = registry();
  std::unique_ptr<StateStorage> last;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto& users = storage_->users;
    users.erase(std::remove_if(users.begin(), users.end(), [&](const StateUser& u) { return u.lock == user_.lock; }),
                users.end());
    if (users.empty()) {
      auto it = std::find_if(r.states.begin(), r.states.end(), [&](const auto& s) { return s.get() == storage_; });
      last = std::move(*it);
      r.states.erase(it);
    }
  }
  storage_ = nullptr;
  if (last && last->spec.kind == engine::MemoryKind::kDevice) {
    // cudaFree on the state's own device.
    DeviceGuard device;
    Diagnostic ignored;
    (void)device.activate(last->spec.device_id, ignored, /*check_range=*/false);
    last.reset();
  }
}

Error hold_state(StateSpec spec, const StateUser& user, StateHold* out, Diagnostic& why) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& s : r.states) {
    const StateSpec& have = s->spec;
    if (have.scope != spec.scope || have.name != spec.name) continue;
    if (have.dtype != spec.dtype || have.shape != spec.shape || have.kind != spec.kind ||
        have.device_id != spec.device_id || have.initial_key != spec.initial_key) {
      return fail(why, Error::InvalidProgram,
                  "state '%s' is %s %s on %s %d with initial value '%s' here, but delegate %s of this program holds it "
                  "as %s %s on %s %d with initial value '%s'; delegates share a state by name, so they must agree: "
                  "re-export the model",
                  spec.name.c_str(), engine::to_string(spec.dtype), shape_text(spec.shape).c_str(),
                  spec.kind == engine::MemoryKind::kDevice ? "device" : "host (device id)", spec.device_id,
                  spec.initial_key.c_str(), s->users.front().delegate, engine::to_string(have.dtype),
                  shape_text(have.shape).c_str(),
                  have.kind == engine::MemoryKind::kDevice ? "device" : "host (device id)", have.device_id,
                  have.initial_key.c_str());
    }
    s->users.push_back(user);
    out->storage_ = s.get();
    out->user_ = user;
    return Error::Ok;
  }
  auto storage = std::make_unique<StateStorage>();
  storage->spec = std::move(spec);
  Error status = storage->buffer.allocate(storage->spec.kind, storage->spec.bytes, why);
  if (status != Error::Ok) {
    why.prepend("could not allocate the %zu bytes of state '%s': ", storage->spec.bytes, storage->spec.name.c_str());
    return status;
  }
  status = initialise(*storage, why);
  if (status != Error::Ok) return status;
  storage->users.push_back(user);
  out->storage_ = storage.get();
  out->user_ = user;
  r.states.push_back(std::move(storage));
  return Error::Ok;
}

int64_t reset_states(const char* name, Diagnostic& why) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  int64_t count = 0;
  for (const auto& s : r.states) {
    if (name != nullptr && s->spec.name != name) continue;
    // Every user is locked (registry order, and executions take one delegate lock and never the registry's, so no
    // cycle) and idle on the device before the storage is rewritten.
    for (const StateUser& u : s->users) u.lock->lock();
    for (const StateUser& u : s->users) {
      if (!u.device->device) continue;
      DeviceGuard device;
      Diagnostic ignored;
      if (device.activate(u.device->device_id, ignored, /*check_range=*/false) == Error::Ok)
        wait_for_in_flight(*u.device);
    }
    const Error status = initialise(*s, why);
    for (const StateUser& u : s->users) u.lock->unlock();
    if (status != Error::Ok) return -1;
    ++count;
  }
  return count;
}

int64_t state_bytes_held() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  int64_t total = 0;
  for (const auto& s : r.states) total += static_cast<int64_t>(s->spec.bytes);
  return total;
}

}  // namespace etrt::backend
