// What a traced execution did (Executor::execute_traced, executor.cpp), for its delegate events (execution_trace.h).
// Read once the execution has ended, under the delegate's lock.

#include "backend/execute/executor.h"

namespace etrt::backend {

TraceOutcome Executor::trace_outcome(const Outcome& outcome, int32_t from_profile, Error status) const {
  TraceOutcome t;
  t.profile = outcome.choice.profile;
  t.from_profile = from_profile;
  t.num_profiles = plan_.table.num_profiles();
  t.switched = outcome.switched;
  t.pin_ignored = outcome.choice.pin_ignored;
  t.context_per_profile = plan_.strategy == Strategy::kContextPerProfile;
  t.ok = status == Error::Ok;
  const size_t n_in = plan_.arity.inputs;
  for (size_t k = 0; k < device_.staged.size(); ++k) {
    if (device_.staged[k] == 0) continue;
    if (k < n_in)
      ++t.staged_inputs;
    else
      ++t.staged_outputs;
  }
  return t;
}

}  // namespace etrt::backend
