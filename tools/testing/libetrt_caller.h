#pragma once
// For test and benchmark executables that interpose a CUDA runtime function libetrt calls (the executable exports
// its own definition, so libetrt's call reaches it first): whether a call came from libetrt, and the definition
// the interposer forwards to.

namespace etrt::testing {

/// True when the code at `caller` (an interposer's __builtin_return_address(0)) belongs to libetrt (libetrt.so*,
/// not libetrt_gpufree_nvinfer.so*).
bool from_libetrt(const void* caller);

/// The definition of `name` after the executable's own (the shared CUDA runtime's); aborts, naming `who` and the
/// function, when there is none (the executable or libetrt links the static CUDA runtime).
void* next_definition(const char* name, const char* who);

}  // namespace etrt::testing
