#pragma once
// Process-wide default load options, which runtimes that pass no load options of their own (ExecuTorch's Python API)
// set through the C ABI (etrt/c_api.h, etrt_set_default_load_option_*). The store is the glue's: every delegate
// reads it when it loads (TensorRTBackend::init, before read_load_options applies the runtime specs, which override it
// key by key), and the C ABI above writes and lists it. It checks each option with load_options.h, which knows
// nothing of it.

#include <cstdint>
#include <string>

#include "backend/glue/load_options.h"
#include "common/error.h"

namespace etrt::backend {

// Checks `option` exactly as a load option is checked (apply_load_option, with its message) and stores it, replacing
// a default of the same key. InvalidArgument for an empty key, an unknown key or a bad value; MemoryAllocationFailed
// when the store cannot grow.
[[nodiscard]] Error set_default_load_option(const RawOption& option, Diagnostic& why) noexcept;

// Forgets the default of `key`, or every default when `key` is null.
void clear_default_load_options(const char* key) noexcept;

// One line per default, in the order first set: "<key>\t<bool|int|string>\t<value>\n". Throws std::bad_alloc.
std::string default_load_options_text();

// Applies the defaults to `options`, in the order they were first set. Each value was checked when it was set, so
// this cannot fail; it locks a mutex and allocates nothing when no default is set.
void apply_default_load_options(LoadOptions* options) noexcept;

// How many times a delegate has read the defaults (apply_default_load_options) since the process started.
uint64_t default_load_options_reads() noexcept;

}  // namespace etrt::backend
