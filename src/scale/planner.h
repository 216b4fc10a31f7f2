#pragma once
// The autoscaler's planning pass: from the waiting jobs, the nodes the fleet has (and those still
// booting) and the node groups it may buy, which nodes to create and which to retire. Pure: no
// clock (`now` is the caller's), no I/O; the controller and the simulator call the same function.
//
// Scale-up is a binpacking estimate, as cluster-autoscaler's: the waiting jobs are first placed
// on what the fleet has free (booting nodes counted as empty), with the scheduler's own gang
// placement (`sched::PlaceGang`); each job left over is then placed on hypothetical new nodes of
// every group that can hold it, and an expander picks the group; repeated until no group helps.
// Gangs are all-or-nothing: a 4-node job gets 4 new nodes in one group or none. Restartable jobs
// go to spot capacity first and may take on-demand nodes once they have waited `spot_fallback_s`.
// The spend cap bounds every plan: the hourly price of the nodes held plus those created never
// exceeds `max_spend_per_hour`.
//
// Scale-down: a ready node idle for `scale_down_unneeded_s`, that the estimate did not need for a
// waiting job, is retired, never taking its group below `min`.
//
// Consolidation (`policy.consolidation`, see `scale/consolidation.h`): a busy node whose jobs are
// all restartable and all fit on other ready nodes' free room (after the waiting jobs' share) is
// emptied when that saves money; its jobs are stopped with their grace period and requeued, and
// the caller retires the node once it is idle.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "scale/autoscale_config.h"
#include "sched/placement_policy.h"
#include "sched/queue_types.h"

namespace gpufleet::scale {

// A node the autoscaler holds.
struct ManagedNode {
  std::string name;
  int group = -1;  // index into AutoscaleConfig::groups
  bool spot = false;
  bool ready = false;  // joined: it is `cluster_index` in the snapshot
  // Being deleted (retiring, or under a spot notice): it costs and counts against its group's
  // `max` until it is gone, but is no capacity and is not retired again.
  bool leaving = false;
  int cluster_index = -1;
  int64_t idle_since_s = -1;  // ready and without a job since then; -1: busy or booting
};

struct WaitingJob {
  sched::QueuedJob job;  // `waiting_since_s` is when it (re)entered the queue
  bool restartable = false;
};

// A job running on a ready node, for consolidation.
struct RunningJobView {
  sched::RunningJob run;  // `run.placement` in indices of `PlanInput::cluster`
  bool restartable = false;
  // Seconds of run left, when known; NaN: unknown, and then taken to be the run's age
  // (`now - run.started_s`: for heavy-tailed run times the remaining run grows with the age).
  double expected_remaining_s = std::numeric_limits<double>::quiet_NaN();
  // Seconds of its GPUs' time one move costs it: the checkpoint in its grace period and the
  // restart, plus any work lost.
  double restart_overhead_s = 60;
};

struct PlanInput {
  const std::vector<NodeGroup>* groups = nullptr;
  ScalePolicy policy;
  // Every ready node of the fleet, managed or not, with what is free on it now.
  const core::ClusterSnapshot* cluster = nullptr;
  std::vector<ManagedNode> nodes;   // booting and ready nodes the autoscaler holds
  std::vector<WaitingJob> waiting;  // in any order
  int64_t now = 0;
  // Per group: its spot capacity cannot be had now (the provider refused it lately). Empty: all
  // available. Restartable jobs then wait for spot until `spot_fallback_s`, then take on-demand.
  std::vector<uint8_t> spot_unavailable;
  // Offerings (group, spot or not) are compared on estimates of at most this many new nodes,
  // and only the winner is estimated in full; 0: every estimate in full (slower; the
  // benchmark's baseline).
  int probe_nodes = 16;
  // Consolidation only (read when `policy.consolidation`): the jobs running on the ready nodes.
  std::vector<RunningJobView> running;
};

struct CreateOrder {
  int group = -1;
  bool spot = false;
  int count = 0;
  std::vector<sched::JobId> for_jobs;  // the waiting jobs these nodes are for
};

struct Plan {
  std::vector<CreateOrder> create;
  std::vector<std::string> retire;  // names of managed nodes
  // Nodes to empty now: each job named is stopped with its grace period and requeued; the
  // caller retires the node as soon as it is idle (it is no longer capacity from now on).
  struct Consolidation {
    std::string node;
    std::vector<sched::JobId> jobs;
  };
  std::vector<Consolidation> consolidate;
  // Waiting jobs no group can ever hold (with the field at fault), and jobs that would fit a
  // group but wait because of its `max` or the spend cap.
  std::vector<std::pair<sched::JobId, std::string>> unservable;
  std::vector<sched::JobId> capped;
  double spend_per_hour = 0;        // of the nodes held, before this plan
  double spend_per_hour_after = 0;  // after it (the consolidated nodes retired)
  int64_t estimates = 0;            // group estimates made (for benchmarks)
};

// One planning pass. `placement_policy` must be prepared; `rng` breaks placement ties.
Plan PlanScaling(const PlanInput& input, const sched::PlacementPolicy& placement_policy,
                 core::Rng& rng);

// The hourly price of the nodes in `nodes`.
double SpendPerHour(const std::vector<NodeGroup>& groups, const std::vector<ManagedNode>& nodes);

}  // namespace gpufleet::scale
