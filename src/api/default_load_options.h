#pragma once
// Process-wide default load options, set through the C ABI (etrt/c_api.h,
// etrt_set_default_load_option_*) by runtimes that pass no load options of
// their own (ExecuTorch's Python API). The store lives in c_api.cpp.

#include "backend/load_options.h"

namespace etrt::api {

// Applies the defaults to `options`, in the order they were first set. The backend calls it when a delegate loads,
// before it reads the runtime specs, so the load options a runtime passes override the defaults key by key. Each value
// was checked when it was set, so this cannot fail; it locks a mutex and allocates nothing when no default is set.
void apply_default_load_options(backend::LoadOptions* options) noexcept;

}  // namespace etrt::api
