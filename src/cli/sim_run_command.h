#pragma once
// `gpufleet sim run`: replays a job trace through the shared scheduler on a simulated cluster
// and reports job completion times, queueing, utilization. Returns the process exit code.

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
};
int RunSimRun(const SimRunOptions& options);

// `gpufleet sim compare`: several queue policies on one trace, one table (and plots with --out).
struct SimCompareOptions {
  SimRunOptions run;  // trace, cluster, placement, window, spread slowdown, seed
  std::vector<std::string> policies;
  std::string out_dir;
  int threads = 0;
};
int RunSimCompare(const SimCompareOptions& options);

}  // namespace gpufleet::cli
