#pragma once
// Synthetic job traces for the time simulator's evaluation grids (`gpufleet sim generate`): jobs
// arrive as a Poisson process whose rate makes the offered GPU demand `load` times the cluster's
// GPUs, with run times and GPU counts drawn from named shapes. Pure: a seed in, jobs out; the same
// seed always gives the same trace. Written as the `csv:` trace format (job_trace.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/time_sim.h"

namespace gpufleet::sim {

// Run-time shapes:
//   heavy    lognormal, median 20 min, sigma 2.0 (most jobs short, a few run for weeks);
//   bimodal  80% around 10 min, 20% around 8 h (debug runs and training runs);
//   narrow   lognormal, median 2 h, sigma 0.2 (every job about as long as the next);
//   pareto   Pareto with shape 1.3 from 5 min (a power-law tail heavier than lognormal's).
// GPU-count mixes (1, 2, 4, 8, 16, 32 GPUs):
//   small  70/15/10/5/0/0 %;  mixed  50/15/15/15/4/1 %;  large  20/10/20/30/15/5 %.
struct SyntheticJobsSpec {
  std::string durations = "heavy";
  std::string sizes = "mixed";
  int64_t jobs = 20000;
  int64_t cluster_gpus = 512;
  double load = 0.9;  // offered GPU demand / cluster GPUs
  // Jobs are spread evenly over VCs vc0..vcN-1; each VC's run times are scaled by a factor drawn
  // once per VC (lognormal, sigma 0.25), so a predictor learning by VC has something to learn.
  int queues = 8;
  uint64_t seed = 1;
};

// Field-named errors for unknown shapes or values out of range.
core::Result<std::vector<TraceJob>> GenerateSyntheticJobs(const SyntheticJobsSpec& spec);
// The trace in the generic CSV format (`id,submit_s,duration_s,num_gpus,queue`).
std::string SyntheticJobsCsv(const std::vector<TraceJob>& jobs);
// The names accepted by `durations` and `sizes`.
std::string_view SyntheticDurationNames();
std::string_view SyntheticSizeNames();

}  // namespace gpufleet::sim
