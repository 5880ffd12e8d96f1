#include "backend/counters.h"

namespace etrt::backend {

Counters& counters() noexcept {
  static Counters instance;
  return instance;
}

}  // namespace etrt::backend
