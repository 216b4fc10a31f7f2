#pragma once
// `GpuHistory`: each GPU's recent utilization and memory, one sample per `step_ms` kept for
// `keep_ms`, by node and GPU index, for the dashboard's per-GPU plots of a job (the usage series
// of advise/ keeps per-minute figures over the job's GPUs, not each GPU's own). Memory only:
// a restarted controller starts empty. No clock or lock of its own (the Controller's lock).
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpufleet::controller {

class GpuHistory {
 public:
  // One hour at one sample per 10 s: 360 samples, about 6 KiB per GPU.
  explicit GpuHistory(int64_t step_ms = 10'000, int64_t keep_ms = 3'600'000);

  // A sample of GPU `gpu` of `node` at `t_ms`; one less than `step_ms` after the last one kept
  // is skipped, as is an older one. Negative figures mean unknown.
  void Add(const std::string& node, int gpu, int64_t t_ms, double util_pct, double mem_used_mib);

  struct Series {
    std::vector<int64_t> t_ms;
    std::vector<double> util_pct;      // -1: unknown
    std::vector<double> mem_used_mib;  // -1: unknown
  };
  // The samples of one GPU from `from_ms` to `to_ms` (inclusive; `to_ms` 0: up to now).
  Series Get(const std::string& node, int gpu, int64_t from_ms, int64_t to_ms) const;
  int64_t keep_ms() const { return keep_ms_; }

 private:
  struct Point {
    int64_t t_ms;
    float util_pct;
    float mem_used_mib;
  };
  int64_t step_ms_, keep_ms_;
  std::unordered_map<std::string, std::vector<std::deque<Point>>> by_node_;
};

}  // namespace gpufleet::controller
