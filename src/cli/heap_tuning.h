#pragma once
// Process-wide heap settings for short batch commands that allocate tens of MiB at once (the openb
// placement experiment). Touching fresh 4 KiB pages one fault at a time was a third of such a
// run's wall time on a paravirtualized machine (bench/results/placement.md).

#include <cstddef>

namespace gpufleet::cli {

// Grows the heap by `bytes` now, asks the kernel for transparent huge pages on it (where the
// kernel offers them on request: /sys/kernel/mm/transparent_hugepage/enabled = madvise or
// always), and keeps large blocks on it instead of separate mappings. Call once, at the start of
// a batch command, before it allocates; a no-op where any step is refused. GPUFLEET_HEAP_PAGES in
// the environment: `small` turns it off (to compare, or where huge pages are unwelcome), `huge`
// or unset leaves it on, anything else warns and leaves it on. Not for servers: the heap then
// never shrinks back.
void UseLargeHeapPages(std::size_t bytes);

}  // namespace gpufleet::cli
