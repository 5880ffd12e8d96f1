#include "backend/glue/thread_state.h"

namespace etrt::backend {
namespace {

thread_local ThreadState t_state;

}  // namespace

ThreadState& thread_state() noexcept { return t_state; }

}  // namespace etrt::backend
