#pragma once
// Consolidation, the planner's last step (called by `PlanScaling`; internal to scale/): which
// busy nodes to empty, as Karpenter's consolidation does, so that whole nodes can be retired.
//
// A ready managed node is a candidate when every job on it is restartable and runs on it alone
// (a job spread over several nodes stays: moving it would free none of its other nodes), no
// waiting job was placed on it by the estimate, and its group stays at or above `min` without it.
// Candidates are tried least-utilized first (GPU share held by jobs, then index). One qualifies
// when
//   - its saving beats the move: the node's price over the longest expected remaining run of its
//     jobs (the run's age when unknown), less the moved jobs' GPUs x restart overhead at the
//     node's GPU-hour price, is at least `policy.consolidation_min_saving_s` of its price; and
//   - its jobs all fit, by the scheduler's own gang placement (`sched::PlaceGang`), on the room
//     left free on other ready nodes once the waiting jobs have their share: never on booting
//     nodes, idle managed nodes (soon retired: a move there saves nothing), nodes retired or
//     leaving, nodes emptied in the same pass, or the node itself.
// At most a tenth of the ready managed nodes (at least one) are emptied per pass (Karpenter's
// default disruption budget), and at most `kMaxConsolidationTrials` placement trials are run.
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "scale/planner.h"
#include "sched/placement_policy.h"

namespace gpufleet::scale {

inline constexpr int kMaxConsolidationTrials = 64;

struct ConsolidationContext {
  const std::vector<NodeGroup>* groups = nullptr;
  const ScalePolicy* policy = nullptr;
  const std::vector<ManagedNode>* nodes = nullptr;
  const std::vector<RunningJobView>* running = nullptr;
  const std::vector<std::string>* retiring = nullptr;  // retired by this plan already
  int64_t now = 0;
  int ready_nodes = 0;  // snapshot nodes [0, ready_nodes) are ready; the rest are booting
  const std::vector<uint8_t>* needed = nullptr;  // per ready node: a waiting job was placed there
};

// The nodes to empty. `room`: the fleet's snapshot with the waiting jobs' estimate placed on it.
// `keep[g]`: the nodes group g keeps after this plan's retirements; lowered for each node chosen.
std::vector<Plan::Consolidation> PlanConsolidation(const ConsolidationContext& ctx,
                                                   core::ClusterSnapshot room,
                                                   std::vector<int>& keep,
                                                   const sched::PlacementPolicy& placement,
                                                   core::Rng& rng);

}  // namespace gpufleet::scale
