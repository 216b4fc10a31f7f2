#pragma once
// Placing a gang job: all of its GPUs at once, or none. A job that fits one node goes to one
// node, chosen by the placement policy; a job larger than any node, or one that no single node
// can hold now when spreading is allowed, takes whole GPUs from the fewest nodes with the most
// free GPUs (ties to the lower index).

#include <optional>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "sched/placer.h"
#include "sched/queue_types.h"

namespace gpufleet::sched {

// Where `job` can run on `cluster` now, or nothing. `placer` must be bound to `cluster`.
// `allow_spread`: a job that fits one node may still be split over several when no node can
// hold it whole (it then runs slower; the caller's runtime model decides how much).
std::optional<std::vector<Allocation>> PlaceGang(const core::ClusterSnapshot& cluster,
                                                 Placer& placer, const QueuedJob& job,
                                                 bool allow_spread, core::Rng& rng);

// The fewest nodes a job of `gpus` whole GPUs can use on a cluster whose largest node has
// `max_node_gpus` GPUs.
inline int MinimumNodes(int gpus, int max_node_gpus) {
  return max_node_gpus <= 0 ? 0 : (gpus + max_node_gpus - 1) / max_node_gpus;
}

}  // namespace gpufleet::sched
