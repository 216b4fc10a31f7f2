#pragma once
// The trace-driven time simulation: jobs arrive, wait, run and finish on a virtual clock, and
// every scheduling decision comes from the same `sched::Scheduler` the controller uses. The
// engine is event-driven: it jumps from one arrival or completion to the next and calls the
// scheduler once after each batch of events at the same instant, never on a fixed tick.
//
// Runtime model: a job's trace run time is at reference speed (relative speed 1.0 in the GPU
// catalog); on slower or faster GPUs it runs at the slowest of its GPUs' speeds, and a job that
// fits on fewer nodes than it was given runs `spread_slowdown` times slower.

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/gpu_catalog.h"
#include "core/node.h"
#include "core/result.h"
#include "sched/placement_policy.h"
#include "sched/queue_policy.h"

namespace gpufleet::scale {
struct AutoscaleConfig;
}

namespace gpufleet::sim {

struct TraceJob {
  int64_t id = 0;
  int64_t submit_s = 0;
  int64_t duration_s = 0;  // at reference speed, on the fewest nodes
  int num_gpus = 1;
  std::string vc;
  int gpu_milli = core::kGpuMilli;  // below 1000: a share of one GPU (num_gpus 1)
  int64_t cpu_milli_per_gpu = 0;
  int64_t memory_mib_per_gpu = 0;
  core::ModelSet gpu_models = core::ModelSet::All();
  // Elastic (0 < min_gpus <= num_gpus <= max_gpus, max_gpus > min_gpus): it may run on
  // min_gpus..max_gpus GPUs; its run time `duration_s` is at num_gpus, and at g GPUs its work
  // goes ElasticSpeedup(g) / ElasticSpeedup(num_gpus) times as fast. 0, 0: rigid.
  int min_gpus = 0;
  int max_gpus = 0;
};

inline bool IsElastic(const TraceJob& t) { return t.min_gpus > 0 && t.max_gpus > t.min_gpus; }

// The speed-up of data-parallel training on `gpus` GPUs over one: linear with an efficiency
// factor (each GPU past the first adds `efficiency` of one GPU's throughput).
inline double ElasticSpeedup(int gpus, double efficiency) {
  return 1.0 + efficiency * static_cast<double>(gpus - 1);
}

// Makes about `fraction` of the whole-GPU jobs of `jobs` elastic (chosen by a hash of the id and
// `seed`, so the same jobs at every policy): from max(1, num_gpus x min_factor) to
// min(num_gpus x max_factor, most_gpus) GPUs, rounded to whole GPUs. Returns how many it made.
int64_t MakeElastic(std::vector<TraceJob>* jobs, double fraction, double min_factor,
                    double max_factor, int most_gpus, uint64_t seed);

struct ClusterSpec {
  std::string name;
  std::vector<core::NodeSpec> nodes;
};
// A named cluster: "philly-512" is 64 nodes x 8 GPUs of one type (V100M32, speed 1.0).
core::Result<ClusterSpec> NamedCluster(std::string_view name, const core::GpuCatalog& catalog);

// The trace and the cluster `factor` times over: every job `factor` times (same submit time,
// new ids) on `factor` times the nodes. For measuring how the replay's cost grows.
void ReplicateTrace(int factor, std::vector<TraceJob>* jobs, ClusterSpec* cluster);

// Replaying on an autoscaled fleet instead of a fixed cluster (see `sim/sim_fleet.h`).
struct AutoscaleSimOptions {
  // The groups and policy; null: a fixed cluster. Must outlive the replay.
  const scale::AutoscaleConfig* config = nullptr;
  // Trace jobs may run on spot nodes (DL training that checkpoints); false: none may, and the
  // planner buys them on-demand nodes only.
  bool jobs_restartable = true;
  // Spot interruptions: a Poisson process of this many per spot node-hour (0: none).
  double spot_interruptions_per_node_hour = 0;
  // A running job checkpoints every this many seconds of its run; an interrupted job loses the
  // progress since its last checkpoint (0: no checkpoints, the whole run is lost).
  int64_t checkpoint_interval_s = 1800;
};

// What an autoscaled fleet bought, and what interruptions cost (zero for a fixed cluster).
struct FleetStats {
  bool enabled = false;
  double cost_usd = 0;       // sum over nodes of lifetime (booting included) x price
  double spot_cost_usd = 0;  // the spot nodes' part of it
  double gpu_s_bought = 0;   // sum over nodes of lifetime x GPUs
  int64_t nodes_created = 0, spot_nodes_created = 0, nodes_retired = 0;
  int64_t peak_nodes = 0;          // booting and ready nodes held at once, at most
  double peak_spend_per_hour = 0;  // the hourly price of the nodes held, at most
  int64_t interruptions = 0;       // spot nodes reclaimed
  int64_t jobs_interrupted = 0;    // job runs stopped by an interruption
  double gpu_s_lost = 0;           // progress since the last checkpoint, plus restart cost
  // Consolidation (`policy.consolidation`): nodes emptied and retired, job runs moved off them,
  // and the GPU-seconds those moves cost (each moved job checkpoints in its grace period, so it
  // loses only the restart overhead, `TimeSimConfig::preemption_overhead_s`).
  int64_t consolidations = 0;
  int64_t jobs_moved = 0;
  double gpu_s_lost_moves = 0;
  int64_t planner_calls = 0;
  // Nodes held over time: (time, nodes from then on), one point per change.
  std::vector<std::pair<int64_t, int>> nodes_over_time;
};

struct TimeSimConfig {
  double spread_slowdown = 1.5;  // run-time factor for a job spread over more nodes than needed
  // A job that one node could hold may run spread over several (and slower) rather than wait.
  // A job larger than any node is always spread over the fewest nodes; without spreading, one
  // whose GPUs fill whole nodes of the largest size waits for that many whole nodes.
  bool allow_spread = true;
  double preemption_overhead_s = 60;  // checkpoint and restart cost added to a preempted job
  // Elastic jobs: each GPU past the first adds this much of one GPU's throughput
  // (ElasticSpeedup); a resize costs the preemption overhead; a job grows only after running
  // this long since its last start or resize: an hour, 60 restart overheads, so that a grow
  // undone at once costs a job that ran that long under 2% (docs/sim/elastic.md).
  double elastic_efficiency = 0.8;
  double elastic_grow_after_s = 3600;
  uint64_t seed = 1;
  // Fair-share policies: each VC's weight. Empty: each VC's share of the trace's total GPU-time
  // (what an administrator would set from last period's usage).
  std::map<std::string, double> queue_weights;
  AutoscaleSimOptions autoscale;
};

// Each VC's share of the GPU-time of `jobs` (num_gpus x duration), for fair-share weights.
std::map<std::string, double> GpuTimeShares(const std::vector<TraceJob>& jobs);

struct JobOutcome {
  int64_t id = 0;
  int64_t submit_s = 0;
  int64_t start_s = -1;   // first start; -1 if never started
  int64_t finish_s = -1;  // -1 if unfinished
  int num_gpus = 0;
  int64_t duration_s = 0;
  std::string vc;
  double predicted_s = std::nan("");  // run time predicted at arrival, when the policy asked
};

struct TimeSimResult {
  std::string policy;
  std::vector<JobOutcome> jobs;  // in trace order
  int64_t makespan_s = 0;        // last finish - first submit
  double busy_gpu_s = 0;         // GPU-seconds allocated to running jobs
  int total_gpus = 0;
  int64_t preemptions = 0;
  int64_t grows = 0, shrinks = 0;  // elastic resizes
  int64_t scheduler_calls = 0;
  std::string decision_log;  // "time,event,job,nodes" lines, when asked for
  // Busy GPUs over time: (time, GPUs allocated from then on), one point per change.
  std::vector<std::pair<int64_t, int>> busy_gpus;
  FleetStats fleet;  // autoscaled replays only
};

// Replays `jobs` (sorted by submit time) on `cluster`. A job asking more GPUs than the cluster
// has is an error, never a job that waits forever. `log_decisions` fills `decision_log`.
// With `config.autoscale.config` set, `cluster` is not used: the jobs run on the autoscaled fleet
// of that config (every group's `max` nodes is the most it can hold), starting from each group's
// `min` nodes at the first submit; the replay ends at the last finish, and `fleet` says what was
// bought. `busy_gpus` then counts job GPUs only.
core::Result<TimeSimResult> RunTimeSim(const std::vector<TraceJob>& jobs,
                                       const ClusterSpec& cluster,
                                       const sched::QueuePolicy& queue_policy,
                                       const sched::PlacementPolicy& placement_policy,
                                       const TimeSimConfig& config, bool log_decisions);

struct JctSummary {
  int64_t jobs = 0, finished = 0, unfinished = 0;
  double avg_jct_s = 0, p50_jct_s = 0, p95_jct_s = 0, p99_jct_s = 0;
  double avg_queue_s = 0;
  double utilization = 0;  // busy GPU-seconds / (GPUs x makespan); a fleet's: / GPU-s bought
  // Run-time predictions (policies that use them): how far off they were from the truth.
  int64_t predicted_jobs = 0;
  double prediction_median_rel_error = 0;  // median |predicted - true| / true
  double prediction_mae_s = 0;             // mean |predicted - true|
  // Fairness across virtual clusters: each VC's mean JCT slowdown (JCT / run time), and Jain's
  // index over those means (1 = all VCs equally slowed).
  std::vector<std::pair<std::string, double>> vc_slowdown;
  double jain_index = 0;
};

// Each hour's mean busy-GPU fraction, from the start of the trace to the makespan.
std::vector<double> HourlyUtilization(const TimeSimResult& result);
// Percentiles interpolate linearly between order statistics (numpy's default).
JctSummary Summarize(const TimeSimResult& result);

}  // namespace gpufleet::sim
