#include "backend/glue/default_load_options.h"

#include <atomic>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace etrt::backend {
namespace {

// A RawOption that owns its strings.
struct DefaultOption {
  std::string key;
  RawOption::Kind kind;
  bool bool_value;
  int int_value;
  std::string string_value;

  RawOption raw() const { return {key.c_str(), kind, bool_value, int_value, string_value.c_str()}; }
};

struct DefaultStore {
  std::mutex mutex;
  std::vector<DefaultOption> options;  // in the order first set; one per key
  std::atomic<uint64_t> reads{0};
};

DefaultStore& store() {
  static DefaultStore* s = new DefaultStore();  // never destroyed: delegates may load during static destruction
  return *s;
}

}  // namespace

Error set_default_load_option(const RawOption& option, Diagnostic& why) noexcept {
  if (option.key == nullptr || option.key[0] == '\0')
    return fail(why, Error::InvalidArgument, "a load option needs a key; known keys are listed in etrt/options.h");
  LoadOptions scratch;
  if (const Error error = apply_load_option(option, &scratch, why); error != Error::Ok) return error;
  try {
    DefaultOption stored{option.key, option.kind, option.bool_value, option.int_value,
                         option.string_value != nullptr ? option.string_value : ""};
    DefaultStore& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (DefaultOption& existing : s.options) {
      if (existing.key == stored.key) {
        existing = std::move(stored);
        return Error::Ok;
      }
    }
    s.options.push_back(std::move(stored));
    return Error::Ok;
  } catch (const std::bad_alloc&) {
    return fail(why, Error::MemoryAllocationFailed, "out of memory");
  }
}

void clear_default_load_options(const char* key) noexcept {
  DefaultStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (key == nullptr) {
    s.options.clear();
    return;
  }
  for (auto it = s.options.begin(); it != s.options.end(); ++it) {
    if (it->key == key) {
      s.options.erase(it);
      return;
    }
  }
}

std::string default_load_options_text() {
  std::string text;
  DefaultStore& s = store();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const DefaultOption& o : s.options) {
    text += o.key;
    switch (o.kind) {
      case RawOption::Kind::kBool:
        text += o.bool_value ? "\tbool\t1\n" : "\tbool\t0\n";
        break;
      case RawOption::Kind::kInt:
        text += "\tint\t" + std::to_string(o.int_value) + "\n";
        break;
      case RawOption::Kind::kString:
        text += "\tstring\t" + o.string_value + "\n";
        break;
    }
  }
  return text;
}

void apply_default_load_options(LoadOptions* options) noexcept {
  DefaultStore& s = store();
  s.reads.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(s.mutex);
  Diagnostic unused;  // each option was checked when set; apply_load_option writes this only on a refusal
  for (const DefaultOption& option : s.options) (void)apply_load_option(option.raw(), options, unused);
}

uint64_t default_load_options_reads() noexcept { return store().reads.load(); }

}  // namespace etrt::backend
