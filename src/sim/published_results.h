#pragma once
// The FGD paper's published per-seed curves (published-allocation.csv, published-frag-ratio.csv):
// one row per workload, policy and seed, with a value for every 1% of arrived demand.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpufleet::sim {

struct PublishedCurve {
  std::string workload;  // pod list name without .csv, e.g. "openb_pod_list_default"
  std::string policy;    // our policy name, e.g. "fgd"
  int seed = 0;
  std::vector<double> values;  // index = % of arrived demand
};

core::Result<std::vector<PublishedCurve>> ReadPublishedCurves(const std::string& path);
// Our name for a published `sc_policy` ("06-FGD" -> "fgd"); "" when unknown.
std::string_view PolicyNameFromPublished(std::string_view sc_policy);

}  // namespace gpufleet::sim
