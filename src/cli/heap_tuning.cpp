#include "cli/heap_tuning.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace gpufleet::cli {

void UseLargeHeapPages(std::size_t bytes) {
  const char* setting = std::getenv("GPUFLEET_HEAP_PAGES");
  if (setting != nullptr && std::string_view(setting) == "small") return;
  if (setting != nullptr && std::string_view(setting) != "huge") {
    std::fprintf(stderr,
                 "gpufleet: warning: GPUFLEET_HEAP_PAGES='%s' is neither 'small' nor 'huge'; "
                 "using huge\n",
                 setting);
  }
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  // glibc refuses an mmap threshold over 32 MiB on 64-bit machines.
  constexpr std::size_t kMaxMmapThreshold = std::size_t{32} << 20;
  const int size = static_cast<int>(bytes);
  // Blocks up to `bytes` (or 32 MiB) come from the heap, not one mapping each; the heap grows by
  // `bytes` at a time and is not trimmed back while the command runs.
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(std::min(bytes, kMaxMmapThreshold))) == 0 ||
      mallopt(M_TOP_PAD, size) == 0 ||
      mallopt(M_TRIM_THRESHOLD, 2 * size) == 0) {
    return;
  }
  // A block larger than the heap's free top makes malloc grow the heap now, by the block and the
  // pad; freed, it stays (the trim threshold) for what comes next.
  void* const before = sbrk(0);
  void* volatile block = std::malloc(bytes / 4);  // volatile: the compiler may not drop the pair
  std::free(block);
  void* const after = sbrk(0);
  if (before == reinterpret_cast<void*>(-1) || after == reinterpret_cast<void*>(-1)) return;
  const std::uintptr_t begin =
      (reinterpret_cast<std::uintptr_t>(before) + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(after) & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace gpufleet::cli
