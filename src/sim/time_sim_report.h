#pragma once
// Several queue policies replayed on one trace, side by side: the table `gpufleet sim compare`
// prints (with ratios to FIFO), the JCT CDF and utilization plots, and a CSV of the metrics.

#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "sim/time_sim.h"

namespace gpufleet::sim {

struct PolicyRun {
  std::string policy;
  TimeSimResult result;
  JctSummary summary;
  double seconds = 0;  // wall time of the replay (reported, never used in a decision)
};

// Replays `jobs` once per policy (placement by `placement`), on `threads` threads.
core::Result<std::vector<PolicyRun>> ComparePolicies(const std::vector<TraceJob>& jobs,
                                                     const ClusterSpec& cluster,
                                                     const std::vector<std::string>& policies,
                                                     const std::string& placement,
                                                     const TimeSimConfig& config, int threads);

// The run the ratios compare against: FIFO's, else the first; null when there is none.
const PolicyRun* BaselineRun(const std::vector<PolicyRun>& runs);

// Markdown: one row per policy, times in hours, and avg/p99 JCT as ratios to FIFO's (or to the
// first policy's when FIFO is not among them).
std::string CompareTable(const std::vector<PolicyRun>& runs);
std::string CompareCsv(const std::vector<PolicyRun>& runs);
// (file name, SVG): the JCT CDF of every policy, and hourly GPU utilization; each policy's line
// has its own colour and dash pattern (`DistinctLine`).
std::vector<std::pair<std::string, std::string>> ComparePlots(const std::vector<PolicyRun>& runs);

}  // namespace gpufleet::sim
