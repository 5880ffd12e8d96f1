#include "libetrt_caller.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace etrt::testing {

bool from_libetrt(const void* caller) {
  Dl_info info{};
  if (dladdr(caller, &info) == 0 || info.dli_fname == nullptr) return false;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base != nullptr ? base + 1 : info.dli_fname;
  return std::strncmp(base, "libetrt.so", 10) == 0;
}

void* next_definition(const char* name, const char* who) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "%s: libcudart's %s not found (%s); link the shared CUDA runtime\n", who, name, dlerror());
    std::abort();
  }
  return symbol;
}

}  // namespace etrt::testing
