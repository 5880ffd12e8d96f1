// The C ABI of etrt/c_api.h: thin wrappers over the C++ API that keep what they make on behalf of a C caller (guards
// and reports) per thread, and over the glue's store of process-wide default load options
// (backend/default_load_options.h).

#include "etrt/c_api.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backend/glue/counters.h"
#include "backend/glue/default_load_options.h"
#include "etrt/options.h"
#include "etrt/profile_guard.h"
#include "etrt/report.h"
#include "etrt/state.h"

#ifndef ETRT_VERSION_STRING
#define ETRT_VERSION_STRING "unknown"
#endif

namespace etrt::api {
namespace {

// Room for one OptimizationProfileGuard, which is neither copyable nor movable: it is built in place and destroyed
// in place, innermost first, as a scope would.
struct GuardSlot {
  alignas(OptimizationProfileGuard) unsigned char bytes[sizeof(OptimizationProfileGuard)];
  OptimizationProfileGuard* guard() { return std::launder(reinterpret_cast<OptimizationProfileGuard*>(bytes)); }
};

// What the C ABI made on this thread, for a C caller (not the thread's request, report and error flag, which are
// the glue's: backend/thread_state.h). Reached through one thread-local pointer, so libetrt's static TLS block (which
// a library loaded with dlopen, as from Python, must fit into glibc's small reserve) grows by 8 bytes only.
struct CallerObjects {
  std::vector<std::unique_ptr<GuardSlot>> slots;  // slots[0, depth) hold live guards; the rest are kept for reuse
  uint32_t depth = 0;
  std::vector<ExecutionReport*> reports;  // live reports, innermost last
  ~CallerObjects() {
    // The thread is ending: its requests end with it. Reports were allocated here and are freed here.
    for (auto it = reports.rbegin(); it != reports.rend(); ++it) delete *it;
  }
};

thread_local std::unique_ptr<CallerObjects> t_objects;

// The calling thread's objects, made on first use; null when there is no memory for them.
CallerObjects* caller_objects() noexcept {
  if (!t_objects) t_objects.reset(new (std::nothrow) CallerObjects());
  return t_objects.get();
}

int push(ProfileRequest request, uint32_t* depth) noexcept {
  if (depth == nullptr) return ETRT_E_INVALID_ARGUMENT;
  CallerObjects* s = caller_objects();
  if (s == nullptr) return ETRT_E_NO_MEMORY;
  try {
    if (s->slots.size() <= s->depth) s->slots.push_back(std::make_unique<GuardSlot>());
  } catch (const std::bad_alloc&) {
    return ETRT_E_NO_MEMORY;
  }
  void* where = s->slots[s->depth]->bytes;
  if (request.kind == ProfileRequest::Kind::kPinned) {
    new (where) OptimizationProfileGuard(request.index);
  } else {
    new (where) OptimizationProfileGuard(OptimizationProfileGuard::automatic(request.policy));
  }
  *depth = ++s->depth;
  return ETRT_OK;
}

ExecutionReport* live_report(void* handle) noexcept {
  if (handle == nullptr || !t_objects) return nullptr;
  for (ExecutionReport* r : t_objects->reports)
    if (r == handle) return r;
  return nullptr;
}

void write_error(char* error, size_t size, const std::string& message) {
  if (error == nullptr || size == 0) return;
  std::snprintf(error, size, "%s", message.c_str());
}

int set_default(const char* key, backend::RawOption::Kind kind, bool b, int i, const char* text, char* error,
                size_t error_size) noexcept {
  Diagnostic why;
  const Error code = backend::set_default_load_option({key, kind, b, i, text != nullptr ? text : ""}, why);
  if (code == Error::Ok) return ETRT_OK;
  write_error(error, error_size, why.c_str());
  return code == Error::MemoryAllocationFailed ? ETRT_E_NO_MEMORY : ETRT_E_INVALID_ARGUMENT;
}

}  // namespace
}  // namespace etrt::api

using etrt::ExecutionRecord;
using etrt::ExecutionReport;
using etrt::ProfileRequest;
using RawKind = etrt::backend::RawOption::Kind;

extern "C" {

uint32_t etrt_abi_version(void) { return ETRT_ABI_VERSION; }

const char* etrt_version(void) { return ETRT_VERSION_STRING; }

int etrt_profile_push_pinned(int32_t index, uint32_t* depth) {
  return etrt::api::push(ProfileRequest::pinned(index), depth);
}

int etrt_profile_push_auto(int32_t policy, uint32_t* depth) {
  if (policy != ETRT_POLICY_STICKY_FIRST_FIT && policy != ETRT_POLICY_FIRST_FIT) return ETRT_E_INVALID_ARGUMENT;
  return etrt::api::push(ProfileRequest::automatic(static_cast<etrt::AutoPolicy>(policy)), depth);
}

int etrt_profile_pop(uint32_t depth) {
  etrt::api::CallerObjects* s = etrt::api::t_objects.get();
  if (s == nullptr || depth == 0 || depth != s->depth) return ETRT_E_OUT_OF_ORDER;
  s->slots[s->depth - 1]->guard()->~OptimizationProfileGuard();
  --s->depth;
  return ETRT_OK;
}

uint32_t etrt_profile_depth(void) { return etrt::api::t_objects ? etrt::api::t_objects->depth : 0; }

void etrt_profile_current(int32_t* kind, int32_t* index, int32_t* policy) {
  const ProfileRequest r = etrt::current_profile_request();
  if (kind != nullptr) *kind = static_cast<int32_t>(r.kind);
  if (index != nullptr) *index = r.kind == ProfileRequest::Kind::kPinned ? r.index : 0;
  if (policy != nullptr) *policy = static_cast<int32_t>(r.policy);
}

int etrt_report_create(void** report) {
  if (report == nullptr) return ETRT_E_INVALID_ARGUMENT;
  etrt::api::CallerObjects* s = etrt::api::caller_objects();
  if (s == nullptr) return ETRT_E_NO_MEMORY;
  try {
    s->reports.reserve(s->reports.size() + 1);  // so that the push_back below cannot throw after the report exists
  } catch (const std::bad_alloc&) {
    return ETRT_E_NO_MEMORY;
  }
  auto* r = new (std::nothrow) ExecutionReport();
  if (r == nullptr) return ETRT_E_NO_MEMORY;
  s->reports.push_back(r);
  *report = r;
  return ETRT_OK;
}

int etrt_report_destroy(void* report) {
  ExecutionReport* r = etrt::api::live_report(report);
  if (r == nullptr) return ETRT_E_BAD_HANDLE;
  if (etrt::api::t_objects->reports.back() != r) return ETRT_E_OUT_OF_ORDER;
  etrt::api::t_objects->reports.pop_back();
  delete r;
  return ETRT_OK;
}

int etrt_report_counts(void* report, uint64_t* kept, uint64_t* total, uint64_t* switches) {
  ExecutionReport* r = etrt::api::live_report(report);
  if (r == nullptr) return ETRT_E_BAD_HANDLE;
  if (kept != nullptr) *kept = r->entries().size();
  if (total != nullptr) *total = r->total();
  if (switches != nullptr) *switches = r->switches();
  return ETRT_OK;
}

uint64_t etrt_report_capacity(void) { return ExecutionReport::kCapacity; }

int etrt_report_entry(void* report, uint64_t i, etrt_execution_record* out, size_t size) {
  ExecutionReport* r = etrt::api::live_report(report);
  if (r == nullptr) return ETRT_E_BAD_HANDLE;
  if (out == nullptr || i >= r->entries().size()) return ETRT_E_INVALID_ARGUMENT;
  const ExecutionRecord& e = r->entries()[static_cast<size_t>(i)];
  etrt_execution_record record{};
  static_assert(sizeof(record.delegate) == sizeof(e.delegate), "delegate names are copied whole");
  std::memcpy(record.delegate, e.delegate, sizeof(record.delegate));
  record.delegate[sizeof(record.delegate) - 1] = '\0';
  record.profile = e.profile;
  record.num_profiles = e.num_profiles;
  record.switched = e.switched ? 1 : 0;
  record.pin_ignored = e.pin_ignored ? 1 : 0;
  record.ok = e.ok ? 1 : 0;
  record.host_to_device_bytes = e.host_to_device_bytes;
  record.device_to_host_bytes = e.device_to_host_bytes;
  record.realigned_bytes = e.realigned_bytes;
  record.write_back_bytes = e.write_back_bytes;
  std::memcpy(out, &record, size < sizeof(record) ? size : sizeof(record));
  return ETRT_OK;
}

int etrt_report_clear(void* report) {
  ExecutionReport* r = etrt::api::live_report(report);
  if (r == nullptr) return ETRT_E_BAD_HANDLE;
  r->clear();
  return ETRT_OK;
}

int etrt_counter(const char* name, int64_t* value) {
  if (name == nullptr || value == nullptr) return ETRT_E_INVALID_ARGUMENT;
  if (!etrt::backend::read_counter(etrt::backend::counter_totals(), name, value)) return ETRT_E_INVALID_ARGUMENT;
  return ETRT_OK;
}

int etrt_reset_state(const char* name, int64_t* count) {
  const int64_t n = etrt::reset_delegate_state(name);
  if (count != nullptr) *count = n;
  return n < 0 ? ETRT_E_FAILED : ETRT_OK;
}

const char* etrt_last_error_message(void) { return etrt::last_error_message(); }
int etrt_has_last_error(void) { return etrt::has_last_error() ? 1 : 0; }
void etrt_clear_last_error(void) { etrt::clear_last_error(); }

int etrt_set_default_load_option_bool(const char* key, int value, char* error, size_t error_size) {
  return etrt::api::set_default(key, RawKind::kBool, value != 0, 0, nullptr, error, error_size);
}

int etrt_set_default_load_option_int(const char* key, int32_t value, char* error, size_t error_size) {
  return etrt::api::set_default(key, RawKind::kInt, false, value, nullptr, error, error_size);
}

int etrt_set_default_load_option_string(const char* key, const char* value, char* error, size_t error_size) {
  if (key != nullptr && value == nullptr) {
    std::snprintf(error != nullptr ? error : nullptr, error != nullptr ? error_size : 0,
                  "load option '%s' needs a string value, got null", key);
    return ETRT_E_INVALID_ARGUMENT;
  }
  return etrt::api::set_default(key, RawKind::kString, false, 0, value, error, error_size);
}

void etrt_clear_default_load_options(const char* key) { etrt::backend::clear_default_load_options(key); }

size_t etrt_default_load_options(char* buffer, size_t size) {
  std::string text;
  try {
    text = etrt::backend::default_load_options_text();
  } catch (const std::bad_alloc&) {
    text.clear();
  }
  if (buffer != nullptr && size > 0) std::snprintf(buffer, size, "%s", text.c_str());
  return text.size();
}

uint64_t etrt_default_load_options_reads(void) { return etrt::backend::default_load_options_reads(); }

}  // extern "C"
