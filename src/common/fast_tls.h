#pragma once
// Thread-locals read on every execution. They use the default TLS model:
// initial-exec would make an access one load instead of a __tls_get_addr
// call, but it puts all of libetrt's thread-locals (the 8 KB last-error text
// included) in the static TLS block, which a library loaded with dlopen (as
// from Python) cannot count on.
#define ETRT_FAST_TLS
