#include "alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

int64_t etrt::allocation_count() noexcept { return g_allocations.load(std::memory_order_relaxed); }

void* operator new(std::size_t size) {
  // A relaxed load and store, not fetch_add: a locked add would cost the
  // allocating baseline ~20 cycles per allocation that real code does not pay.
  // Counts can be lost only if threads allocate concurrently, which the
  // single-threaded measurements here never do.
  g_allocations.store(g_allocations.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
