#pragma once
// The simulator's autoscaling commands: `gpufleet sim run --autoscale FILE.toml` (one replay on
// an autoscaled fleet: cost, GPU-hours bought against used, JCT, queueing, interruptions) and the
// cost sweep of `gpufleet sim compare --static SIZES --autoscale FILES` (a table, a CSV and a plot
// of cost against average JCT). Each returns the process exit code and prints its errors.
#include <optional>
#include <vector>

#include "cli/sim_run_command.h"
#include "sched/placement_policy.h"
#include "sched/queue_policy.h"
#include "sim/time_sim.h"

namespace gpufleet::cli {

struct SimInputs {
  std::vector<sim::TraceJob> jobs;
  sim::ClusterSpec cluster;
  int64_t elastic_jobs = 0;  // jobs made elastic (--elastic-fraction)
};
// Reads the trace and the cluster `o` names; prints the error and returns nothing.
std::optional<SimInputs> LoadSimInputs(const SimRunOptions& o);

// `sim run` with `o.autoscale` set; the policies are those `o` names, `placement` unprepared.
int RunSimRunAutoscaled(const SimRunOptions& o, const sched::QueuePolicy& queue_policy,
                        sched::PlacementPolicy& placement);
// `sim compare` with `static_sizes` or `autoscale_files` set.
int RunSimCostSweep(const SimCompareOptions& o);

}  // namespace gpufleet::cli
