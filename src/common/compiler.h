#pragma once
// Compiler hints, empty where the compiler has none.
//
//   ETRT_PRINTF_FORMAT(f, a)  argument `f` is a printf format for the arguments from `a` on: checked like printf's.
//   ETRT_COLD                 a function only failure paths call (building a refusal's message): the compiler moves
//                             it, and every branch that calls it, out of the hot code, so that an execution's
//                             instructions stay dense in the instruction cache.
//   ETRT_FLATTEN              inline every call in this function's body that can be inlined.
//   ETRT_NOINLINE             never inline this function.
//   ETRT_ALWAYS_INLINE        inline this function wherever it is called, however large.

#if defined(__GNUC__) || defined(__clang__)
#define ETRT_PRINTF_FORMAT(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#define ETRT_COLD __attribute__((cold))
#define ETRT_FLATTEN __attribute__((flatten))
#define ETRT_NOINLINE __attribute__((noinline))
#define ETRT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define ETRT_PRINTF_FORMAT(fmt_index, args_index)
#define ETRT_COLD
#define ETRT_FLATTEN
#define ETRT_NOINLINE
#define ETRT_ALWAYS_INLINE
#endif
