#pragma once
// Topology-aware GPU selection: which free GPUs of one node a job of 2..4 whole GPUs takes,
// given how the node's GPUs are connected (`core::GpuLinks`). Pure: no I/O, no clock, no
// randomness; the same inputs give the same set.
//
// Contract of `PickConnectedGpus`. Among every set of `count` GPUs in `free`, the chosen set is
// the best by these keys, compared in order (each higher is better):
//  1. Connection: the weakest pair's class, where a pair joined by any NVLink (direct or through
//     an NVSwitch fabric) is best, then one board, one PCIe switch, several switches, one host
//     bridge, one socket, and across sockets last. So a set inside one NVLink clique beats any
//     set with a PCIe-only pair; a set under one PCIe switch beats one that spans switches; a set
//     in one socket beats one that spans sockets.
//  2. Bandwidth: the total number of NVLinks over the set's pairs.
//  3. Closeness: the sum of the pairs' classes (for PCIe-only sets, more pairs under one switch).
//  4. Fragmentation: what stays free afterwards. For a later job of 4, then 3, then 2 GPUs, the
//     best set (by keys 1 to 3) among the GPUs left free; the choice that leaves the better sets
//     wins. This takes GPUs from islands and switches that are already partly used, and leaves
//     whole NVLink quads, switches and sockets free for the jobs after.
//  5. PCIe locality of NVLink pairs: the weakest, then the summed PCIe class over the set's
//     pairs (keeps an NVSwitch job inside one socket, where all NVLink sets are equal).
//  6. The lowest GPU indices (the first set in lexicographic order of its sorted indices).
// Key 4 looks at every remaining set for every candidate tied on keys 1-3, so its cost grows
// fast with the node's GPU count; when that work would pass `kMaxLookaheadSets` (nodes of more
// than about 16 free GPUs), key 4 is skipped for the tied candidates.
#include <cstdint>

#include "core/gpu_links.h"
#include "core/node.h"

namespace gpufleet::sched {

inline constexpr int kMinTopologyGpus = 2;
inline constexpr int kMaxTopologyGpus = 4;
inline constexpr int64_t kMaxLookaheadSets = 4'000'000;

// The best set of `count` GPUs among `free` (see above). Requires kMinTopologyGpus <= count <=
// kMaxTopologyGpus, `links` non-empty, `free` within links.num_gpus and holding at least
// `count` GPUs.
core::GpuMask PickConnectedGpus(const core::GpuLinks& links, core::GpuMask free, int count);

// How a set of GPUs is connected: keys 1 to 3 above, and key 5's two parts. Exposed for tests
// and for the comparison with other allocators.
struct SetConnection {
  int min_class = 0;  // 0..6: across sockets .. NVLink
  int nvlinks = 0;    // NVLinks summed over pairs
  int class_sum = 0;  // classes summed over pairs
  int min_pcie = 0;   // PcieClass, weakest pair
  int pcie_sum = 0;   // PcieClass summed over pairs
};
SetConnection ConnectionOf(const core::GpuLinks& links, core::GpuMask set);

// The GPUs of `node` with all of their milli free: what a whole-GPU job may take.
core::GpuMask WholeFreeGpus(const core::NodeState& node);

}  // namespace gpufleet::sched
