#pragma once
// Cost against job completion time, for `gpufleet sim compare --static ... --autoscale ...`:
// static clusters of several sizes and autoscaled fleets replayed on one trace, as one table, a
// CSV and a plot of cost against average JCT. Pure: it formats results it is given.
#include <string>
#include <vector>

#include "sim/time_sim.h"

namespace gpufleet::sim {

struct CostPoint {
  std::string label;
  bool autoscaled = false;
  int nodes = 0;  // a static cluster's size; a fleet's peak
  double cost_usd = 0;
  double gpu_h_bought = 0;
  double gpu_h_used = 0;
  JctSummary summary;
  FleetStats fleet;    // autoscaled points only
  double seconds = 0;  // wall time of the replay (reported, never used in a decision)
};

// A static cluster of `nodes` nodes of `gpus_per_node` GPUs, each `price_per_node_hour`, paid for
// from the first submit to the last finish (its whole makespan), busy or not.
CostPoint StaticCostPoint(const std::string& label, int nodes, int gpus_per_node,
                          double price_per_node_hour, const TimeSimResult& result, double seconds);
// An autoscaled replay: what its fleet bought (`result.fleet`).
CostPoint FleetCostPoint(const std::string& label, const TimeSimResult& result, double seconds);

// Markdown: one row per point, in the order given; times in hours, money in dollars.
std::string CostTable(const std::vector<CostPoint>& points);
std::string CostCsv(const std::vector<CostPoint>& points);
// SVG: cost (thousands of dollars) against average JCT (hours); the static clusters as one line
// labelled with their sizes, each autoscaled point on its own.
std::string CostPlot(const std::vector<CostPoint>& points, const std::string& title);

}  // namespace gpufleet::sim
