#include "cli/placement_output.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace gpufleet::cli {

namespace {
nlohmann::json Number(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}
}  // namespace

std::string PlacementJson(const PlacementSummary& s) {
  nlohmann::ordered_json j;
  j["policy"] = s.policy;
  j["nodes"] = s.nodes_path;
  j["pods_file"] = s.pods_path;
  j["order"] = s.order;
  j["seeds"] = s.seeds;
  j["tune"] = s.tune;
  j["failed"] = s.curves.failed;
  j["pods"] = s.curves.pods;
  nlohmann::ordered_json alloc = nlohmann::ordered_json::object();
  nlohmann::ordered_json frag = nlohmann::ordered_json::object();
  for (size_t x = 0; x < s.curves.allocation.size(); ++x) {
    alloc[std::to_string(x)] = Number(s.curves.allocation[x]);
    // The fragmentation mean is not rounded in the published data; 6 decimals is plenty here.
    const double f = s.curves.frag_ratio[x];
    frag[std::to_string(x)] = Number(std::isnan(f) ? f : std::round(f * 1e6) / 1e6);
  }
  j["allocation"] = std::move(alloc);
  j["frag_ratio"] = std::move(frag);
  return j.dump(2) + "\n";
}

std::string PlacementCsv(const PlacementSummary& s) {
  std::string out = "percent,allocation,frag_ratio\n";
  char line[96];
  for (size_t x = 0; x < s.curves.allocation.size(); ++x) {
    std::snprintf(line, sizeof line, "%zu,%.2f,%.6f\n", x, s.curves.allocation[x],
                  s.curves.frag_ratio[x]);
    out += line;
  }
  return out;
}

}  // namespace gpufleet::cli
