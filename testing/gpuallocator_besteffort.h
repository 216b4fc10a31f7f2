#pragma once
// Our own re-implementation, for comparison only, of the "best effort" policy of NVIDIA's
// go-gpuallocator (gpuallocator/besteffort_policy.go), which NVIDIA's Kubernetes device plugin
// uses to prefer GPUs (GetPreferredAllocation). Written from the public description of its
// algorithm, not from its code:
//  - A pair's score sums one term per link between the two GPUs: its PCIe path (across sockets
//    10, one socket 20, one host bridge 30, several switches 40, one switch 50, one board 60) and
//    its NVLinks (100 per link, for 1 to 12 links; 13 or more links score nothing, as the policy
//    lists no score for them). A set scores the sum over its pairs.
//  - It pads the free GPUs with empty slots to a multiple of the job size, walks every partition
//    of them into sets of that size (the first set always holds the first GPU left; a set holds
//    either no empty slot or all of them), keeps the first partition with the highest total
//    score, and returns that partition's first highest-scoring set.
//  - NVLinks are counted only where a link's far end is the other GPU: links into an NVSwitch
//    are not seen (the library leaves NVSwitch to a TODO), so on an NVSwitch machine it ranks
//    sets by PCIe alone. `sees_nvswitch_links = false` models that.
#include "core/gpu_links.h"
#include "core/node.h"

namespace gpufleet::test {

struct GpuAllocatorView {
  const core::GpuLinks* links = nullptr;
  bool sees_nvswitch_links = true;  // false for NVSwitch machines (see above)
};

// gpuallocator's pair and set scores.
int GpuAllocatorPairScore(const GpuAllocatorView& view, int a, int b);
int GpuAllocatorSetScore(const GpuAllocatorView& view, core::GpuMask set);

// The set gpuallocator's best-effort policy prefers among `free` (GPU index order) for a job of
// `count` GPUs; 0 when fewer than `count` are free.
core::GpuMask GpuAllocatorBestEffort(const GpuAllocatorView& view, core::GpuMask free, int count);

}  // namespace gpufleet::test
