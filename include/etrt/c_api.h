#ifndef ETRT_C_API_H_
#define ETRT_C_API_H_
/**
 * @file
 * A small C ABI over libetrt, for runtimes that cannot use its C++ API:
 * Python through ctypes (python/etrt/runtime.py), other languages through
 * their FFI. Plain types only; every function is safe to call from any thread
 * and never throws.
 *
 * Versioning: etrt_abi_version() returns ETRT_ABI_VERSION of the library. A
 * caller checks it before anything else; a library with another version may
 * have other functions or layouts. Records are read with an explicit size
 * (etrt_report_entry), so a struct may grow at its end within one version.
 *
 * What each part mirrors:
 *  - etrt_profile_push_*() / etrt_profile_pop(): etrt::OptimizationProfileGuard
 *    (etrt/profile_guard.h). A push is a guard made on the calling thread, a
 *    pop ends the innermost one and restores the request that was in force
 *    when it was made. Pops must come in reverse order of pushes on the same
 *    thread; a pop with the wrong depth is refused and changes nothing.
 *  - etrt_report_*(): etrt::ExecutionReport (etrt/report.h), created and
 *    destroyed on one thread, innermost first.
 *  - etrt_counter(): the process-wide counters (etrt/options.h kCounter*).
 *  - etrt_last_error_message() & co.: etrt::last_error_message() & co.
 *  - etrt_set_default_load_option_*(): process-wide defaults for the load
 *    options of etrt/options.h, applied to every TensorRT delegate loaded
 *    afterwards before the load options its runtime passes (which override
 *    them key by key). For runtimes that pass no load options, such as
 *    ExecuTorch's Python API.
 *
 * What the tools ask the runtime (etrt inspect, etrt validate: the readers of
 * blobs and engines and the rules they share with a load) is not here: it is
 * libetrt_tools' C ABI (etrt/tools_c_api.h), installed beside libetrt.
 *
 * History: version 1, the guards, reports, counters, state, last error and
 * default load options; versions 2 to 5 added the tools' readers and rules
 * (etrt_text, etrt_*_describe, etrt_delegate_resolve, etrt_parse_byte_count,
 * etrt_host_engine_binds, etrt_build_has_cuda, etrt_device_memory) and the
 * code ETRT_E_NOT_SUPPORTED; version 6 moves those functions into
 * libetrt_tools (etrt/tools_c_api.h) and changes nothing else of version 5.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ETRT_C_API __attribute__((visibility("default")))

/** The version of this header; etrt_abi_version() returns the library's. */
#define ETRT_ABI_VERSION 6

/** Return codes. */
#define ETRT_OK 0
/** An argument is out of range, null where it may not be, or of the wrong type for the option. */
#define ETRT_E_INVALID_ARGUMENT 1
/** A pop or destroy that is not the innermost one on the calling thread. */
#define ETRT_E_OUT_OF_ORDER 2
/** A handle that is not a live report of the calling thread. */
#define ETRT_E_BAD_HANDLE 3
/** Memory for a guard or report could not be allocated. */
#define ETRT_E_NO_MEMORY 4
/** The operation failed; etrt_last_error_message() says why. */
#define ETRT_E_FAILED 5
/** This build cannot do what was asked (version 2; the tools' calls, etrt/tools_c_api.h); their text says why. */
#define ETRT_E_NOT_SUPPORTED 6

/** Profile request kinds (etrt::ProfileRequest::Kind). */
#define ETRT_REQUEST_DEFAULT 0
#define ETRT_REQUEST_PINNED 1
#define ETRT_REQUEST_AUTO 2
/** Auto policies (etrt::AutoPolicy). */
#define ETRT_POLICY_STICKY_FIRST_FIT 0
#define ETRT_POLICY_FIRST_FIT 1

/** ETRT_ABI_VERSION of the library. */
ETRT_C_API uint32_t etrt_abi_version(void);

/** The etrt version the library was built as, "major.minor.patch". */
ETRT_C_API const char* etrt_version(void);

/* ---- profile requests, on the calling thread ---- */

/**
 * Pins profile `index` (an OptimizationProfileGuard(index)). Returns the
 * thread's new nesting depth (>= 1) in *depth, for the matching pop.
 * ETRT_E_INVALID_ARGUMENT for a null `depth`; an index a delegate does not
 * have is refused by that delegate when it executes, as with the C++ guard.
 */
ETRT_C_API int etrt_profile_push_pinned(int32_t index, uint32_t* depth);

/** Asks for shape-driven selection with `policy` (ETRT_POLICY_*); as etrt_profile_push_pinned. */
ETRT_C_API int etrt_profile_push_auto(int32_t policy, uint32_t* depth);

/**
 * Ends the innermost request pushed on this thread, restoring the one in force
 * before it. `depth` is what its push returned: ETRT_E_OUT_OF_ORDER (and no
 * change) when it is not the innermost.
 */
ETRT_C_API int etrt_profile_pop(uint32_t depth);

/** Requests pushed and not yet popped on this thread. */
ETRT_C_API uint32_t etrt_profile_depth(void);

/**
 * The request in force on this thread (etrt::current_profile_request()):
 * kind ETRT_REQUEST_*, the pinned index (0 unless pinned), the auto policy
 * (ETRT_POLICY_*). Null pointers are skipped.
 */
ETRT_C_API void etrt_profile_current(int32_t* kind, int32_t* index, int32_t* policy);

/* ---- execution reports, on the calling thread ---- */

/** One delegate execution (etrt::ExecutionRecord), as etrt_report_entry copies it. */
typedef struct etrt_execution_record {
  char delegate[64];    /**< "<method>#<n>", NUL-terminated */
  int32_t profile;      /**< the profile it ran on */
  int32_t num_profiles; /**< profiles the delegate's engine carries */
  uint8_t switched;     /**< 1: a profile change happened for this execution */
  uint8_t pin_ignored;  /**< 1: a pin was ignored by a static one-profile engine */
  uint8_t ok;           /**< 1: the execution succeeded */
  uint8_t reserved;
  /* Bytes the execution copied (etrt::ExecutionRecord, etrt/options.h kCounter*Bytes). Appended: a caller built
     against the layout without them passes the smaller size and gets the fields above. */
  int64_t host_to_device_bytes;
  int64_t device_to_host_bytes;
  int64_t realigned_bytes;
  int64_t write_back_bytes;
} etrt_execution_record;

/**
 * Starts recording on this thread (an etrt::ExecutionReport). Reports nest: an
 * execution is recorded in every live report of its thread. *report receives
 * the handle.
 */
ETRT_C_API int etrt_report_create(void** report);

/** Ends the report; it must be the innermost live report of this thread (ETRT_E_OUT_OF_ORDER otherwise). */
ETRT_C_API int etrt_report_destroy(void* report);

/** Executions kept (at most etrt_report_capacity()), all recorded, and profile switches among them. */
ETRT_C_API int etrt_report_counts(void* report, uint64_t* kept, uint64_t* total, uint64_t* switches);

/** How many records a report keeps; later executions are counted, not kept. */
ETRT_C_API uint64_t etrt_report_capacity(void);

/**
 * Copies record `i` (oldest first) into `out`, `size` bytes of it
 * (sizeof(etrt_execution_record) or less, for a caller built against an older
 * layout). ETRT_E_INVALID_ARGUMENT when `i` is not below the kept count.
 */
ETRT_C_API int etrt_report_entry(void* report, uint64_t i, etrt_execution_record* out, size_t size);

/** Forgets what the report recorded. */
ETRT_C_API int etrt_report_clear(void* report);

/* ---- process-wide counters ---- */

/**
 * The counter called `name` (etrt/options.h: "profile_switches", "executions",
 * "last_profile", "state_bytes", "scratch_bytes", "host_to_device_bytes",
 * "device_to_host_bytes", "realigned_bytes", "write_back_bytes",
 * "engines_deserialized", "engines_resident", "engine_bytes",
 * "engine_sessions") into *value.
 * ETRT_E_INVALID_ARGUMENT for another name.
 */
ETRT_C_API int etrt_counter(const char* name, int64_t* value);

/* ---- delegate-owned state (etrt/state.h) ---- */

/**
 * etrt::reset_delegate_state(name): writes the initial value into every
 * delegate-owned state (those named `name`, when not null) of the live
 * delegates; *count (when not null) receives how many. ETRT_E_FAILED when
 * writing one failed (etrt_last_error_message() says why).
 */
ETRT_C_API int etrt_reset_state(const char* name, int64_t* count);

/* ---- the last refusal, on the calling thread ---- */

/** etrt::last_error_message(): valid until the next etrt call on this thread. */
ETRT_C_API const char* etrt_last_error_message(void);
ETRT_C_API int etrt_has_last_error(void);
ETRT_C_API void etrt_clear_last_error(void);

/* ---- process-wide default load options ---- */

/**
 * Sets a default load option (a key of etrt/options.h) for TensorRT delegates
 * loaded afterwards, in this process. The value is checked as the backend
 * checks a load option; a refusal returns ETRT_E_INVALID_ARGUMENT, changes
 * nothing, and writes the reason (NUL-terminated, cut to fit) into `error`
 * when it is not null. Delegates already loaded keep their options.
 */
ETRT_C_API int etrt_set_default_load_option_bool(const char* key, int value, char* error, size_t error_size);
ETRT_C_API int etrt_set_default_load_option_int(const char* key, int32_t value, char* error, size_t error_size);
ETRT_C_API int etrt_set_default_load_option_string(const char* key, const char* value, char* error, size_t error_size);

/** Removes the default for `key`, or every default when `key` is null. */
ETRT_C_API void etrt_clear_default_load_options(const char* key);

/**
 * The defaults in force, one per line, "key\ttype\tvalue\n" (type "bool",
 * "int" or "string"; bools as 0/1), in the order they were first set. Writes
 * at most `size` bytes, NUL included, and returns the length of the whole
 * text (without the NUL), like snprintf.
 */
ETRT_C_API size_t etrt_default_load_options(char* buffer, size_t size);

/**
 * How many delegates have been loaded since the process started with these
 * defaults consulted (whether or not any were set): lets a caller confirm
 * that the backend reads them.
 */
ETRT_C_API uint64_t etrt_default_load_options_reads(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ETRT_C_API_H_
