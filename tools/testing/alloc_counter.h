#pragma once
// Counts calls to the global operator new, which alloc_counter.cpp replaces
// for the whole executable. Kept in its own translation unit so the compiler
// cannot inline the replacement into callers (GCC then mistakes the
// malloc/free pair for a mismatched new/delete).

#include <cstdint>

namespace etrt {

/// Number of operator new / new[] calls since the program started.
int64_t allocation_count() noexcept;

}  // namespace etrt
