// etrt/state.h over the glue's state registry (backend/delegate_state.h).

#include "etrt/state.h"

#include "backend/glue/last_error.h"
#include "backend/registry/delegate_state.h"
#include "etrt/report.h"

namespace etrt {

int64_t reset_delegate_state(const char* name) {
  clear_last_error();
  Diagnostic why;
  const int64_t count = backend::reset_states(name, why);
  if (count < 0) backend::report_error_of("etrt::reset_delegate_state", why.c_str());
  return count;
}

}  // namespace etrt
