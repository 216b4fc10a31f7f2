#pragma once
// Placing a gang job: all of its GPUs at once, or none. A job that fits one node goes to one
// node, chosen by the placement policy; a job larger than any node, or one that no single node
// can hold now when spreading is allowed, takes whole GPUs from the fewest nodes with the most
// free GPUs (ties to the lower index).

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "sched/placement_policy.h"
#include "sched/placer.h"
#include "sched/queue_types.h"

namespace gpufleet::sched {

// Where `job` can run on `cluster` now, or nothing. `placer` must be bound to `cluster`.
// `allow_spread`: a job that fits one node may still be split over several when no node can
// hold it whole (it then runs slower; the caller's runtime model decides how much).
std::optional<std::vector<Allocation>> PlaceGang(const core::ClusterSnapshot& cluster,
                                                 Placer& placer, const QueuedJob& job,
                                                 bool allow_spread, core::Rng& rng);

// The outcome of preempting running jobs to make room for one job.
struct PreemptionPlan {
  std::vector<Allocation> placement;  // where the job goes once the victims have stopped
  std::vector<size_t> victims;        // indices into `running`, in the order taken
};

// Takes `candidates` (indices into `running`, in preference order) off `work` itself one at a
// time, skipping those `may_take` refuses, until `job` can be placed. With a plan, `work` is left
// without the victims (the job not yet added); without one (nobody preempted: even all of them
// are not enough), every candidate taken is put back, so `work` holds what it held. `placer` must
// be bound to `work`: it follows the changes through the change journal, so a plan costs the
// nodes it touches rather than a copy of the cluster and a placer built from scratch. Shared by
// every preemptive policy so that victim selection differs only in the candidates' order and
// the veto.
std::optional<PreemptionPlan> PlanPreemption(core::ClusterSnapshot& work, Placer& placer,
                                             const QueuedJob& job,
                                             std::span<const RunningJob> running,
                                             std::span<const size_t> candidates,
                                             const std::function<bool(size_t)>& may_take,
                                             bool allow_spread, core::Rng& rng);
// The same, with the candidates produced as they are needed: `candidate_at(k)` is the k-th (k
// counts up from 0, each asked at most once), nullopt past the last. A caller that orders its
// candidates lazily pays only for those the plan reads.
std::optional<PreemptionPlan> PlanPreemption(
    core::ClusterSnapshot& work, Placer& placer, const QueuedJob& job,
    std::span<const RunningJob> running,
    const std::function<std::optional<size_t>(size_t)>& candidate_at,
    const std::function<bool(size_t)>& may_take, bool allow_spread, core::Rng& rng);

// The fewest nodes a job of `gpus` whole GPUs can use on a cluster whose largest node has
// `max_node_gpus` GPUs.
inline int MinimumNodes(int gpus, int max_node_gpus) {
  return max_node_gpus <= 0 ? 0 : (gpus + max_node_gpus - 1) / max_node_gpus;
}

}  // namespace gpufleet::sched
