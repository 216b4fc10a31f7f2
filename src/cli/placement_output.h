#pragma once
// Output formats of the placement experiment (JSON, CSV). Kept apart so that only this file
// pays for the JSON library's templates.

#include <string>

#include "sim/placement_experiment.h"

namespace gpufleet::cli {

struct PlacementSummary {
  std::string policy;
  std::string nodes_path, pods_path;
  std::string order;  // "orders from DIR", "seed 42", ...
  int seeds = 1;
  double tune = 1.3;
  sim::PlacementCurves curves;
};

// One JSON object: policy, allocation and frag_ratio keyed "0".."130", failed, pods, and context.
std::string PlacementJson(const PlacementSummary& summary);
// CSV with one row per percent: percent,allocation,frag_ratio.
std::string PlacementCsv(const PlacementSummary& summary);

}  // namespace gpufleet::cli
