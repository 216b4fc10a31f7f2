#pragma once
// `gpufleet sim run`: replays a job trace through the shared scheduler on a simulated cluster
// (or, with `--autoscale FILE.toml`, on a fleet the autoscaler's planner buys and retires) and
// reports job completion times, queueing, utilization, and for a fleet its cost. Returns the
// process exit code.

#include <cstdint>
#include <string>
#include <vector>

namespace gpufleet::cli {

struct SimRunOptions {
  std::string trace;  // FORMAT:FILE; formats: philly
  std::string cluster = "philly-512";
  std::string policy = "fifo";
  std::string placement = "bestfit";
  int64_t limit = 0;
  double window_start_h = 0, window_end_h = 0;
  double spread_slowdown = 1.5;
  int replicate = 1;  // trace and cluster this many times over (scaling runs)
  uint64_t seed = 1;
  bool json = false;
  std::string decisions_path;
  // Autoscaled replays (`sim/sim_fleet.h`): the groups and policy come from this file (its
  // [provider] is not needed); `--cluster` must then not be given.
  std::string autoscale;
  bool cluster_given = false;  // --cluster was on the command line
  // Poisson rate of spot interruptions. Default: AWS Spot Instance Advisor's worst bucket
  // (">20%" of capacity reclaimed in the trailing month), read as 20% of nodes interrupted per
  // 730-hour month: -ln(0.8) / 730 = 3.1e-4 per node-hour (docs/scale.md).
  double spot_interruptions_per_node_hour = 3.0e-4;
  int64_t checkpoint_interval_s = 1800;  // an interrupted job redoes the work since its last one
  bool not_restartable = false;          // trace jobs may not run on spot nodes
  // Elastic jobs (sim::MakeElastic): this fraction of the trace's whole-GPU jobs runs on
  // num_gpus x min_factor .. num_gpus x max_factor GPUs, with the speed-up model's efficiency.
  double elastic_fraction = 0;
  double elastic_min_factor = 0.5, elastic_max_factor = 2.0;
  double elastic_efficiency = 0.8;
  double elastic_grow_after_s = 3600;
};
int RunSimRun(const SimRunOptions& options);

// `gpufleet sim compare`: several queue policies on one trace, one table (and plots with --out).
struct SimCompareOptions {
  SimRunOptions run;  // trace, cluster, placement, window, spread slowdown, seed
  std::vector<std::string> policies;
  std::string out_dir;
  int threads = 0;
  // The cost sweep (`docs/scale.md`), when either is given: static clusters of these sizes (the
  // node shape and price of the first autoscale file's first group, else philly-512's 8 x V100M32
  // at the catalog's price), and one autoscaled point per file. One queue policy for every point
  // (`policies`: at most one; default `priority`).
  std::vector<int> static_sizes;
  std::vector<std::string> autoscale_files;
};
int RunSimCompare(const SimCompareOptions& options);

// `gpufleet sim generate`: a synthetic job trace (sim/synthetic_jobs.h) in the `csv:` format, to
// `out` or standard output.
struct SimGenerateOptions {
  std::string durations = "heavy";
  std::string sizes = "mixed";
  int64_t jobs = 20000;
  int64_t cluster_gpus = 512;
  double load = 0.9;
  int queues = 8;
  uint64_t seed = 1;
  std::string out;
};
int RunSimGenerate(const SimGenerateOptions& options);

}  // namespace gpufleet::cli
