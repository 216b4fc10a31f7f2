#include "controller/gpu_history.h"

namespace gpufleet::controller {

GpuHistory::GpuHistory(int64_t step_ms, int64_t keep_ms) : step_ms_(step_ms), keep_ms_(keep_ms) {}

void GpuHistory::Add(const std::string& node, int gpu, int64_t t_ms, double util_pct,
                     double mem_used_mib) {
  if (gpu < 0 || gpu >= 1024) return;
  std::vector<std::deque<Point>>& gpus = by_node_[node];
  if (static_cast<int>(gpus.size()) <= gpu) gpus.resize(static_cast<std::size_t>(gpu) + 1);
  std::deque<Point>& points = gpus[static_cast<std::size_t>(gpu)];
  // (Written so that no sum overflows, whatever `t_ms` a node sent.)
  if (!points.empty() && (t_ms < points.back().t_ms || t_ms - points.back().t_ms < step_ms_)) {
    return;
  }
  points.push_back({t_ms, static_cast<float>(util_pct), static_cast<float>(mem_used_mib)});
  while (!points.empty() && points.front().t_ms < t_ms - keep_ms_) points.pop_front();
}

GpuHistory::Series GpuHistory::Get(const std::string& node, int gpu, int64_t from_ms,
                                   int64_t to_ms) const {
  Series out;
  auto it = by_node_.find(node);
  if (it == by_node_.end() || gpu < 0 || gpu >= static_cast<int>(it->second.size())) return out;
  for (const Point& p : it->second[static_cast<std::size_t>(gpu)]) {
    if (p.t_ms < from_ms || (to_ms > 0 && p.t_ms > to_ms)) continue;
    out.t_ms.push_back(p.t_ms);
    out.util_pct.push_back(p.util_pct);
    out.mem_used_mib.push_back(p.mem_used_mib);
  }
  return out;
}

}  // namespace gpufleet::controller
