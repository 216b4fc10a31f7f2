#include "controller/fleet_json.h"

#include <cmath>

namespace gpufleet::controller {
namespace {

using nlohmann::json;

// A GPU counts as busy (really used) above this SM utilization, as the advisor's idle test.
constexpr double kBusyUtilPct = 5;

json Rounded(double v) { return v < 0 ? json(nullptr) : json(std::round(v * 10) / 10); }
json Mib(int64_t v) { return v < 0 ? json(nullptr) : json(v); }

}  // namespace

json FleetNodeJson(const NodeView& n, const store::UserRecord& viewer) {
  json gpus = json::array();
  for (std::size_t g = 0; g < n.gpus_now.size(); ++g) {
    const NodeView::GpuNow& now = n.gpus_now[g];
    std::string drain_reason;
    bool drained = false;
    for (const NodeView::DrainedGpu& d : n.drained) {
      if (d.gpu == static_cast<int>(g)) {
        drained = true;
        drain_reason = d.cause + ": " + d.reason;
      }
    }
    const bool mine = now.job != 0 && now.job_user == viewer.name;
    const bool visible = now.job != 0 && (viewer.admin || mine);
    gpus.push_back({{"index", g},
                    {"util_pct", Rounded(now.util_pct)},
                    {"mem_used_mib", Mib(now.mem_used_mib)},
                    {"mem_total_mib", Mib(now.mem_total_mib)},
                    {"healthy", now.healthy},
                    {"drained", drained},
                    {"drain_reason", drained ? json(drain_reason) : json(nullptr)},
                    {"busy", now.job != 0},
                    {"job", visible ? json(now.job) : json(nullptr)},
                    {"job_user", visible ? json(now.job_user) : json(nullptr)},
                    {"job_mine", mine}});
  }
  return {{"name", n.name},           {"state", n.state},
          {"simulated", n.simulated}, {"gpu_model", n.gpu_model},
          {"last_seen_ms", n.last_seen_ms}, {"running_jobs", n.running_jobs},
          {"gpus", std::move(gpus)}};
}

json FleetJson(const std::vector<NodeView>& nodes, const ControllerStats& stats,
               const store::UserRecord& viewer, int64_t now_ms) {
  json out_nodes = json::array();
  int gpus = 0, allocated = 0, busy = 0, sampled = 0, ready = 0;
  double util_sum = 0;
  for (const NodeView& n : nodes) {
    if (n.state == "RETIRED") continue;
    out_nodes.push_back(FleetNodeJson(n, viewer));
    if (n.state != "READY") continue;
    ++ready;
    for (const NodeView::GpuNow& g : n.gpus_now) {
      ++gpus;
      if (g.job != 0) ++allocated;
      if (g.util_pct >= 0) {
        ++sampled;
        util_sum += g.util_pct;
        if (g.util_pct > kBusyUtilPct) ++busy;
      }
    }
  }
  return {{"now_ms", now_ms},
          {"totals",
           {{"nodes", ready},
            {"gpus", gpus},
            {"gpus_allocated", allocated},
            {"gpus_busy", busy},
            {"util_mean_pct", sampled > 0 ? json(std::round(util_sum / sampled * 10) / 10)
                                          : json(nullptr)},
            {"waiting", stats.waiting},
            {"running", stats.running}}},
          {"nodes", std::move(out_nodes)}};
}

}  // namespace gpufleet::controller
