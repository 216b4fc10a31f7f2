#pragma once
// The one way a job enters the scheduler, live and in replay: `BuildQueuedJob` turns what a job
// asks (from a store record in the controller, from a trace in the simulator) and what is known
// of its run time into the `QueuedJob` that `Schedule` sees; `NeverFits` says, before it waits,
// whether a job can ever start on a cluster. Pure: no clock, no I/O.
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/node.h"
#include "core/result.h"
#include "sched/queue_policy.h"
#include "sched/queue_types.h"

namespace gpufleet::core {
class ClusterSnapshot;
}  // namespace gpufleet::core

namespace gpufleet::sched {

// What a job asks of the cluster.
struct JobAsk {
  JobId id = 0;
  int total_gpus = 1;  // whole GPUs over all its nodes; 1 for a share of one GPU
  // Elastic (0 < min_gpus < total_gpus): it runs on min_gpus..total_gpus whole GPUs. Ignored
  // (rigid) for a GPU share or a job of a fixed number of nodes.
  int min_gpus = 0;
  // N > 1: exactly N nodes with total_gpus / N GPUs each; 0 or 1: as few nodes as fit (one
  // node unless the scheduler may spread jobs).
  int nodes = 0;
  int gpu_milli = core::kGpuMilli;
  core::ModelSet gpu_models = core::ModelSet::All();
  int64_t cpu_milli_per_gpu = 0;
  int64_t memory_mib_per_gpu = 0;
  int64_t submit_s = 0;
  std::string queue;
  int priority = 0;
  double time_limit_s = std::nan("");  // NaN: none (a run is stopped at its limit)
  bool restartable = false;            // QueuedJob::restartable
};

// What is known of a job's run time and service so far.
struct JobRunTime {
  double predicted_s = std::nan("");  // its whole run, predicted when it arrived (NaN: none)
  double true_s = std::nan("");       // its whole run as it really is: replay only (oracles)
  double attained_gpu_s = 0;          // GPU-seconds of service in earlier runs (preemption)
  int64_t waiting_since_s = 0;        // when it last (re)entered the queue
};

// The job as `Schedule` sees it. Its `estimate_s` is what a queue policy of kind `estimates` is
// given: kPredicted, the predicted run time left (RemainingEstimate); kOracle, the true run time
// left; kNone, nothing but the time limit (EASY backfill reserves by it). In every case no more
// than the time limit, which a run cannot outlive; NaN when nothing is known.
QueuedJob BuildQueuedJob(const JobAsk& ask, Estimates estimates, const JobRunTime& run_time);

// Why `job` can never start on a cluster of `nodes`, however the jobs running there end, or
// nothing when it fits the empty cluster. The error names the field at fault: "gpu_type" (no node
// of its models), "gpus" (no node, or too few together when `allow_spread`, with its GPUs),
// "nodes" (too few nodes big enough), "cpu" or "memory" (no node with enough for its share).
// `models_label` names the asked models in messages ("" : "the asked").
std::optional<core::Error> NeverFits(const QueuedJob& job, std::span<const core::NodeSpec> nodes,
                                     bool allow_spread, std::string_view models_label = "");
// The same over `nodes` and the nodes the fleet may grow by (`growth`, each NodeSpec named by its
// autoscaler group), one group's at a time: an autoscaler buys a gang's nodes in one group, so
// two groups that only together could hold it never will (a pooled count accepted such a gang,
// and its reservation then held the queue behind it for good).
std::optional<core::Error> NeverFits(const QueuedJob& job, std::span<const core::NodeSpec> nodes,
                                     std::span<const core::NodeSpec> growth, bool allow_spread,
                                     std::string_view models_label);
// The same over every node of `cluster` at its full capacity (what is free now does not matter)
// and `growth` (as above, one group at a time), placed as `PlaceGang` places: a whole-GPU job
// larger than every node is taken as spread over nodes even without `allow_spread`.
std::optional<core::Error> NeverFits(const QueuedJob& job, const core::ClusterSnapshot& cluster,
                                     std::span<const core::NodeSpec> growth, bool allow_spread);

}  // namespace gpufleet::sched
