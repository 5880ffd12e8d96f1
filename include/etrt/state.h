#pragma once
/// @file
/// State a TensorRT delegate owns across calls: the KV caches (and any other
/// mutable buffer) a partitioner handed to the delegate with ExecuTorch's
/// `tag_mutated_buffer`. ExecuTorch then passes neither the buffer nor its new
/// value; the blob's `delegate_state` key names them, and the delegate keeps
/// them in storage of its own, on the engine's memory, from load to destroy,
/// shared by name among the delegates of one load (a prefill method and a
/// decode method of one Module over one cache). Each Module -- a second load of
/// the file, or a session over a shared Program -- keeps its own, whether or
/// not the program has a named-data table. docs/design.md, decision 18.
///
/// @code
///   module.execute("prefill", prompt);
///   for (int i = 0; i < n; ++i) module.execute("decode", token);
///   etrt::reset_delegate_state();            // the next prompt starts a new sequence
/// @endcode
///
/// The bytes held are the counter etrt::kCounterStateBytes (etrt/options.h).

#include <cstdint>

#include "etrt/export.h"

namespace etrt {

/// Writes the initial value (the exported one, or zeros) into every delegate-owned
/// state of the live delegates of this process, or only those named `name`
/// (the buffer's name, as `etrt inspect` shows it) when it is not null. Each
/// state's delegates are locked and their work in flight finished first, so
/// no execution sees a half-written state; when it returns, the state is
/// written for work on any stream. Returns how many states were reset (0 when
/// none matched); -1 when writing one failed, with the reason in
/// etrt::last_error_message().
ETRT_API int64_t reset_delegate_state(const char* name = nullptr);

}  // namespace etrt
