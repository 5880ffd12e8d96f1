#pragma once
// Small thread-locals read on every execution (the profile request, the
// report pointer, the has-error flag) use the initial-exec TLS model: an
// access is one load through the thread pointer instead of a __tls_get_addr
// call. glibc keeps some static TLS in reserve for libraries loaded later
// with dlopen (as from Python), which a few bytes fit; large thread-locals
// (the 8 KB last-error text) stay in the default model.
#define ETRT_FAST_TLS __attribute__((tls_model("initial-exec")))
