#pragma once
// Elastic jobs (`QueuedJob::min_gpus`): the placement steps `Scheduler::Schedule` takes for them.
// A waiting elastic job is placed at its min, then grown with what is left; a waiting job
// that does not fit may take GPUs back from running elastic jobs above their min (a shrink)
// before any job is preempted; GPUs left idle after a pass are lent to running elastic jobs (a
// grow). Every resize is a checkpoint-restart on a new placement. Pure: no clock, no I/O.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "sched/placement_policy.h"
#include "sched/placer.h"
#include "sched/queue_types.h"

namespace gpufleet::sched {

// `job` at `gpus` GPUs (its size for one placement attempt).
inline QueuedJob SizedTo(const QueuedJob& job, int gpus) {
  QueuedJob sized = job;
  sized.total_gpus = gpus;
  sized.min_gpus = 0;
  return sized;
}

// A running job's placement as this pass has left it, and whether the pass changed it already
// (started, resized or preempted it: it is not touched again in the same pass).
struct ElasticView {
  std::vector<Allocation> placement;
  bool touched = false;
};

// The outcome of shrinking running elastic jobs to make room for one waiting job.
struct ShrinkPlan {
  std::vector<Allocation> placement;  // where the waiting job goes once the shrinks are done
  // (index into `running`, its new placement), each job once, in the order shrunk.
  std::vector<std::pair<size_t, std::vector<Allocation>>> resized;
};

// Takes GPUs, one at a time, from the running elastic jobs above their min (those with the most
// GPUs above it first) on a copy of `work` until `job` fits (an elastic `job` at its min); the
// job whose GPUs made it fit then gives back the rest of its surplus too (one restart now, not
// one per later arrival); nothing when even every such job at
// its min is not enough. A GPU is taken from the job's node with the most free GPUs, so that the
// freed GPUs gather on few nodes. `views[i]` is running job i's current placement.
std::optional<ShrinkPlan> PlanShrink(const core::ClusterSnapshot& work,
                                     const PlacementPolicy& placement_policy, const QueuedJob& job,
                                     std::span<const RunningJob> running,
                                     std::span<const ElasticView> views, bool allow_spread,
                                     core::Rng& rng);

// The GPUs running elastic jobs could still give back (above their min), untouched ones only.
int64_t ShrinkableGpus(std::span<const RunningJob> running, std::span<const ElasticView> views);

}  // namespace gpufleet::sched
