#pragma once
// The process-wide counters (etrt/options.h kCounter*) through the C ABI, as benchmarks read them: 64-bit, where
// ExecuTorch's get_option stops at INT_MAX (tests read them as a runner does: tests/backend/module_test_util.h).

#include <cstdint>

#include "etrt/c_api.h"

namespace etrt::testing {

/// The counter `name`, or -1 when etrt does not know it.
inline int64_t counter(const char* name) {
  int64_t value = -1;
  return etrt_counter(name, &value) == ETRT_OK ? value : -1;
}

}  // namespace etrt::testing
