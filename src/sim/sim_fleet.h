#pragma once
// `SimFleet`: the simulator's autoscaled fleet. It owns the nodes the autoscaler buys and retires
// during a replay and keeps the time simulation's `ClusterSnapshot` in step with them, so that the
// same engine (`RunTimeSim`) and the same `sched::Scheduler` run on a fleet that changes size.
//
// Model. The snapshot is sized once with every group's `max` nodes (`FleetClusterSpec`). A node
// slot that holds no ready node (never created, booting, retired, interrupted) is blocked by a
// placeholder allocation of all its CPU, memory and GPUs, so the scheduler never sees it free. A
// created node is unblocked `boot_s` after its creation; a retired or interrupted one is blocked
// again. Each group starts with its `min` nodes ready. Planning (`scale::PlanScaling`, the
// function the controller calls) runs at most once per `policy.scan_interval_s` of simulated
// time, and only when something changed: an arrival, a completion, a boot, an interruption, or an
// idle node reaching its unneeded time (a wake-up event is scheduled for that). With
// `policy.consolidation`, a completion alone makes a pass due, and the nodes it empties are
// retired as soon as the caller has moved their jobs off (`TakeConsolidations`, `Consolidated`).
//
// Cost: each node is charged its price (spot or on-demand) from creation to retirement (booting
// included), or to the end of the replay. Spot nodes are interrupted as a Poisson process of
// `spot_interruptions_per_node_hour` per node, drawn from the fleet's own seeded generator.
//
// Pure: no clock, no I/O; the time is always the caller's.
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "scale/autoscale_config.h"
#include "scale/planner.h"
#include "sched/placement_policy.h"
#include "sim/time_sim.h"

namespace gpufleet::sim {

// The snapshot a fleet runs on: every group's `max` nodes, group by group, named
// "<group>-<i>". Slot k of the snapshot is node k of this spec.
ClusterSpec FleetClusterSpec(const scale::AutoscaleConfig& config);

class SimFleet {
 public:
  // `config` must outlive the fleet and hold at least one group.
  SimFleet(const scale::AutoscaleConfig& config, const AutoscaleSimOptions& options, uint64_t seed);

  // Blocks every slot of `cluster` (built from `FleetClusterSpec`), then creates each group's
  // `min` on-demand nodes, ready at `start`.
  void Start(core::ClusterSnapshot& cluster, int64_t start);

  // The time of the next fleet event (a boot, an interruption, a wake-up), or INT64_MAX.
  int64_t NextEventTime() const;

  // Carries out the fleet events due at `now`: boots complete (their slots are unblocked) and
  // wake-ups mark the fleet changed. Returns the slots of spot nodes interrupted at `now`; the
  // caller must stop every job on them, then call `Remove` for each.
  std::vector<int> Advance(core::ClusterSnapshot& cluster, int64_t now);

  // Removes an interrupted node (which must be empty by now): its slot is blocked again and its
  // cost stops at `now`.
  void Remove(core::ClusterSnapshot& cluster, int slot, int64_t now);

  // Something the planner should see happened (an arrival or a completion).
  void MarkChanged() { changed_ = true; }
  // A job finished: with consolidation on, a node may have become worth emptying, so a planning
  // pass is due even when nothing waits.
  void MarkCompletion() {
    changed_ = true;
    completed_ = true;
  }

  // After the scheduler's pass at `now`: notes which ready nodes are idle (and schedules the
  // wake-up at the end of their unneeded time), then runs a planning pass if one is due and
  // carries out its orders (creations boot from `now`; retirements block their slots at `now`).
  // `waiting` returns the jobs the scheduler left waiting (called only for a pass);
  // `any_waiting` says whether there are any. `running` returns the running jobs (called only for
  // a pass with consolidation on).
  void AfterSchedule(core::ClusterSnapshot& cluster,
                     const std::function<std::vector<scale::WaitingJob>()>& waiting,
                     const std::function<std::vector<scale::RunningJobView>()>& running,
                     bool any_waiting, int64_t now, const sched::PlacementPolicy& placement,
                     core::Rng& rng);

  // The nodes the last planning pass chose to empty (consolidation), each once. The caller stops
  // every job named (each checkpoints within its grace period and is requeued), then calls
  // `Consolidated` for the node.
  std::vector<scale::Plan::Consolidation> TakeConsolidations();

  // Retires node `name`, emptied by consolidation at `now`. It is paid for `drain_s` more (the
  // grace period in which its jobs checkpointed), and a wake-up at `now` lets the scheduler place
  // the moved jobs at once.
  void Consolidated(core::ClusterSnapshot& cluster, const std::string& name, int64_t now,
                    int64_t drain_s);

  // Whether slot `slot` holds a spot node now.
  bool IsSpot(int slot) const { return slots_[slot].spot; }

  // Milli-GPUs held by placeholders (not by jobs) in the snapshot now.
  int64_t blocked_gpu_milli() const { return blocked_gpu_milli_; }

  // Ends every node's lifetime at `end` and returns the totals. Call once, at the end.
  FleetStats Finish(int64_t end);

  // The running totals (lifetimes of live nodes not yet counted).
  const FleetStats& stats() const { return stats_; }

 private:
  enum class State { kAbsent, kBooting, kReady };
  struct Slot {
    int group = -1;
    State state = State::kAbsent;
    bool spot = false;
    int64_t created_s = 0;
    int64_t idle_since_s = -1;
    uint32_t generation = 0;  // bumps at every creation and removal; stale events are ignored
  };
  enum class EventKind { kBoot, kInterrupt, kWake };
  struct Event {
    int64_t time;
    EventKind kind;
    int slot;
    uint32_t generation;
    bool operator>(const Event& o) const;
  };

  void Block(core::ClusterSnapshot& cluster, int slot);
  void Unblock(core::ClusterSnapshot& cluster, int slot);
  void Create(int group, bool spot, int64_t now);
  void EndLifetime(int slot, int64_t now);
  void Plan(core::ClusterSnapshot& cluster, std::vector<scale::WaitingJob> waiting,
            std::vector<scale::RunningJobView> running, int64_t now,
            const sched::PlacementPolicy& placement, core::Rng& rng);
  void Wake(int64_t at);

  const scale::AutoscaleConfig& config_;
  AutoscaleSimOptions options_;
  core::Rng interruptions_;
  std::vector<Slot> slots_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> slot_of_;
  std::vector<std::vector<int>> free_slots_;  // per group, absent slots (last one taken first)
  std::vector<int> live_;                     // slots of booting and ready nodes
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  int64_t blocked_gpu_milli_ = 0;
  bool changed_ = true;
  bool idle_expired_ = false;                            // some idle node reached its unneeded time
  bool completed_ = false;                               // a job finished since the last pass
  std::vector<scale::Plan::Consolidation> consolidate_;  // chosen by the last pass, not yet taken
  int64_t last_plan_s_ = INT64_MIN / 2;
  int64_t wake_at_ = -1;  // the pending planning wake-up, if any
  int live_count_ = 0;
  double spend_per_hour_ = 0;
  FleetStats stats_;
};

}  // namespace gpufleet::sim
