#pragma once
// The static report `gpufleet sim compare --out DIR` writes as `DIR/index.html`: the comparison's
// table and plots on one self-contained page. No script, no external resource (a
// Content-Security-Policy says so to the browser too), plots as inline SVG, and every string that
// comes from the data (trace, cluster, policy and point names) escaped. Pure: it formats results
// it is given.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost_sweep.h"
#include "sim/time_sim_report.h"

namespace gpufleet::sim {

// What the page says about the replay besides the results.
struct CompareContext {
  std::string trace;      // as given on the command line: FORMAT:FILE
  std::string cluster;    // the cluster, or for the cost sweep the static clusters' node
  std::string placement;  // placement policy
  std::string policy;     // the cost sweep's one queue policy; empty for a policy comparison
  int64_t jobs = 0;
};

// Queue policies compared: the table of `CompareTable` (one row per policy), a bar chart per
// headline metric, and the JCT CDF and utilization plots of `ComparePlots`.
std::string CompareHtml(const CompareContext& context, const std::vector<PolicyRun>& runs);

// The cost sweep (`--static`, `--autoscale`): the table of `CostTable` (one row per point), bar
// charts of cost and average JCT, and the plot of cost against average JCT of `CostPlot`.
std::string CostSweepHtml(const CompareContext& context, const std::vector<CostPoint>& points);

}  // namespace gpufleet::sim
