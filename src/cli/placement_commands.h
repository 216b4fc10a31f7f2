#pragma once
// `gpufleet sim placement` and `gpufleet sim placement-report`: the openb placement experiment
// from the command line. Each function returns the process exit code and prints errors itself.

#include <cstdint>
#include <string>
#include <vector>

namespace gpufleet::cli {

struct PlacementOptions {
  std::string nodes_path;
  std::string pods_path;
  std::string policy = "fgd";
  std::string order_path;  // one published order file
  std::string orders_dir;  // published orders, <dir>/<pods stem>.seed<N>.txt per seed
  uint64_t seed = 42;
  int seeds = 1;
  double tune = 1.3;
  bool json = false;
  bool csv = false;
  std::string decisions_path;  // per-pod decision log (first seed)
  int threads = 0;             // 0 = all cores
};
int RunSimPlacement(const PlacementOptions& options);

struct PlacementReportOptions {
  std::string traces_dir;  // ../shared/traces/alibaba-openb-2023 or similar; "" = synthetic
  std::string out_dir = "out/placement";
  std::vector<std::string> policies;  // empty = all registered
  std::vector<std::string> traces;    // empty = the four shipped pod lists
  int seeds = 10;
  bool check = false;  // exit non-zero unless the published curves are matched
  int threads = 0;
};
int RunSimPlacementReport(const PlacementReportOptions& options);

}  // namespace gpufleet::cli
