#pragma once
// Process-wide execution counters, behind get_option (etrt/options.h kCounter*) and the C ABI (etrt_counters).

#include <atomic>
#include <cstdint>

namespace etrt::backend {

struct Counters {
  std::atomic<int64_t> switches{0};
  std::atomic<int64_t> executions{0};
  std::atomic<int32_t> last_profile{-1};
};
Counters& counters() noexcept;

}  // namespace etrt::backend
