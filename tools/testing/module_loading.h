#pragma once
// Loading a program through ExecuTorch's Module with TensorRTBackend load options (test tooling for tests/ and
// bench/; never part of libetrt). Runners write the same few lines with ExecuTorch's BackendOptions and
// LoadBackendOptionsMap (etrt/options.h shows them); the tests and benchmarks say only which options they want:
//
//   auto module = etrt::testing::load_module(path, {{etrt::kOptionCudaGraphs, true}});
//   ASSERT_EQ(etrt::testing::load_with_options(*module, {{etrt::kOptionSharedScratch, true}}), Error::Ok)
//       << etrt::last_error_message();
//
// BackendOptions<N>::set_option takes its key as a string literal; these take any key, so a test can also hand etrt
// a key it does not know, or a value of the wrong type, and see it refused.

#include <executorch/extension/module/module.h>
#include <executorch/runtime/backend/backend_options_map.h>
#include <executorch/runtime/backend/options.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"

namespace etrt::testing {

// One TensorRTBackend load option: a key of etrt/options.h (kOption*) and its bool, int or string value.
struct LoadOption {
  LoadOption(const char* option_key, bool flag) : key(option_key), value(flag) {}
  LoadOption(const char* option_key, int number) : key(option_key), value(number) {}
  LoadOption(const char* option_key, const char* text) : key(option_key), value(text) {}

  const char* key;
  std::variant<bool, int, const char*> value;
};
using LoadOptions = std::vector<LoadOption>;

// `options` as ExecuTorch's LoadBackendOptionsMap for TensorRTBackend; a key given twice keeps its last value, as
// BackendOptions::set_option does. The map points into this object: keep it alive across Module::load(map) (Module
// keeps a copy for methods loaded later). error() is InvalidArgument when a key or a string value does not fit
// ExecuTorch's fixed-size option.
class LoadOptionsMap {
 public:
  explicit LoadOptionsMap(const LoadOptions& options) {
    using ::executorch::runtime::Error;
    storage_.reserve(options.size());
    for (const LoadOption& option : options) {
      if (std::strlen(option.key) >= ::executorch::runtime::kMaxOptionKeyLength) error_ = Error::InvalidArgument;
      ::executorch::runtime::BackendOption* out = nullptr;
      for (auto& existing : storage_) {
        if (std::strncmp(existing.key, option.key, sizeof(existing.key)) == 0) out = &existing;
      }
      if (out == nullptr) {
        out = &storage_.emplace_back();
        std::memcpy(out->key, option.key, std::min(std::strlen(option.key), sizeof(out->key) - 1));
      }
      if (const auto* text = std::get_if<const char*>(&option.value)) {
        std::array<char, ::executorch::runtime::kMaxOptionValueLength> value{};
        if (std::strlen(*text) >= value.size()) error_ = Error::InvalidArgument;
        std::memcpy(value.data(), *text, std::min(std::strlen(*text), value.size() - 1));
        out->value = value;
      } else if (const auto* flag = std::get_if<bool>(&option.value)) {
        out->value = *flag;
      } else {
        out->value = std::get<int>(option.value);
      }
    }
    if (!storage_.empty() && error_ == Error::Ok) {
      error_ = map_.set_options(kBackendId, {storage_.data(), storage_.size()});
    }
  }
  LoadOptionsMap(const LoadOptionsMap&) = delete;
  LoadOptionsMap& operator=(const LoadOptionsMap&) = delete;

  const ::executorch::runtime::LoadBackendOptionsMap& map() const { return map_; }
  ::executorch::runtime::Error error() const { return error_; }

 private:
  std::vector<::executorch::runtime::BackendOption> storage_;
  ::executorch::runtime::LoadBackendOptionsMap map_;
  ::executorch::runtime::Error error_ = ::executorch::runtime::Error::Ok;
};

// Loads `module`'s program with `options`, then `method` (none when null). Clears the thread's last error first, so
// that after a refusal etrt::last_error_message() explains it.
inline ::executorch::runtime::Error load_with_options(::executorch::extension::Module& module,
                                                      const LoadOptions& options, const char* method = "forward") {
  const LoadOptionsMap map(options);
  if (map.error() != ::executorch::runtime::Error::Ok) return map.error();
  etrt::clear_last_error();
  ::executorch::runtime::Error status = module.load(map.map());
  if (status == ::executorch::runtime::Error::Ok && method != nullptr) status = module.load_method(method);
  return status;
}

// The program at `path`, loaded as load_with_options() does; `status` (when given) receives its result. The Module is
// returned either way, so that a test can look at a refused one.
inline std::unique_ptr<::executorch::extension::Module> load_module(const std::string& path,
                                                                    const LoadOptions& options = {},
                                                                    ::executorch::runtime::Error* status = nullptr,
                                                                    const char* method = "forward") {
  auto module = std::make_unique<::executorch::extension::Module>(path);
  const ::executorch::runtime::Error loaded = load_with_options(*module, options, method);
  if (status != nullptr) *status = loaded;
  return module;
}

}  // namespace etrt::testing
