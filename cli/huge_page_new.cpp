// The executable's operator new: an allocation of a few huge pages or more is laid out on
// transparent huge pages (madvise; THP's "madvise" mode is the default on Debian), so a
// [round][device] array of 1024 devices (8 MB) is faulted in 2 MiB at a time, not 4 KiB at a time.
// Everything else is malloc's. The allocations come from malloc either way, so every delete is
// free(). Library users keep their own allocator: this is a policy of the command, like the
// mallopt calls in main.cpp. Under AddressSanitizer the runtime's operator new stays, with its
// checks of new against delete.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRIPESIM_KEEP_SANITIZER_NEW 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define STRIPESIM_KEEP_SANITIZER_NEW 1
#endif

#if !defined(STRIPESIM_KEEP_SANITIZER_NEW) && defined(__linux__)
#include <cstdlib>
#include <new>

#include <sys/mman.h>

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Below two huge pages, rounding up to a whole one would waste more than the faults it saves.
constexpr std::size_t kOnHugePagesFrom = 2 * kHugePage;

void* allocate(std::size_t bytes) noexcept {
  if (bytes < kOnHugePagesFrom) return std::malloc(bytes == 0 ? 1 : bytes);
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  if (rounded < bytes) return nullptr;  // wrapped around
  void* at = std::aligned_alloc(kHugePage, rounded);
  // Advice only: where THP is off, or the kernel declines, the pages are ordinary ones.
  if (at != nullptr) (void)madvise(at, rounded, MADV_HUGEPAGE);
  return at;
}

// As the standard's operator new: call the new-handler until memory comes or there is none.
void* allocate_or_throw(std::size_t bytes) {
  for (;;) {
    if (void* at = allocate(bytes)) return at;
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* allocate_or_null(std::size_t bytes) noexcept {
  try {
    return allocate_or_throw(bytes);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

void* operator new(std::size_t bytes) { return allocate_or_throw(bytes); }
void* operator new[](std::size_t bytes) { return allocate_or_throw(bytes); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept { return allocate_or_null(bytes); }
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept { return allocate_or_null(bytes); }
void operator delete(void* at) noexcept { std::free(at); }
void operator delete[](void* at) noexcept { std::free(at); }
void operator delete(void* at, std::size_t) noexcept { std::free(at); }
void operator delete[](void* at, std::size_t) noexcept { std::free(at); }
void operator delete(void* at, const std::nothrow_t&) noexcept { std::free(at); }
void operator delete[](void* at, const std::nothrow_t&) noexcept { std::free(at); }
#endif
