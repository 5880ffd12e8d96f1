#pragma once
// What libetrt exports. The library is built with hidden visibility: only the declarations in include/etrt/ marked
// ETRT_API (and the C ABI's ETRT_C_API) are visible to runners, so internal calls stay direct and inlinable, and
// nothing private can be linked against by accident.

#if defined(__GNUC__) || defined(__clang__)
#define ETRT_API __attribute__((visibility("default")))
#else
#define ETRT_API
#endif
