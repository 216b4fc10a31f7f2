#include "sim/cost_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/svg_plot.h"

namespace gpufleet::sim {

CostPoint StaticCostPoint(const std::string& label, int nodes, int gpus_per_node,
                          double price_per_node_hour, const TimeSimResult& result, double seconds) {
  CostPoint p;
  p.label = label;
  p.nodes = nodes;
  const double hours = static_cast<double>(result.makespan_s) / 3600.0;
  p.cost_usd = nodes * price_per_node_hour * hours;
  p.gpu_h_bought = static_cast<double>(nodes) * gpus_per_node * hours;
  p.gpu_h_used = result.busy_gpu_s / 3600.0;
  p.summary = Summarize(result);
  p.seconds = seconds;
  return p;
}

CostPoint FleetCostPoint(const std::string& label, const TimeSimResult& result, double seconds) {
  CostPoint p;
  p.label = label;
  p.autoscaled = true;
  p.nodes = static_cast<int>(result.fleet.peak_nodes);
  p.cost_usd = result.fleet.cost_usd;
  p.gpu_h_bought = result.fleet.gpu_s_bought / 3600.0;
  p.gpu_h_used = result.busy_gpu_s / 3600.0;
  p.summary = Summarize(result);
  p.fleet = result.fleet;
  p.fleet.nodes_over_time.clear();
  p.seconds = seconds;
  return p;
}

std::string CostTable(const std::vector<CostPoint>& points) {
  std::string out =
      "| point | nodes (static; peak) | cost ($) | GPU-h bought | GPU-h used | used/bought | "
      "avg JCT (h) | p99 JCT (h) | avg queue (h) | unfinished | nodes created | interruptions | "
      "GPU-h lost | consolidations | GPU-h lost moves | planner calls | replay (s) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const CostPoint& p : points) {
    const JctSummary& s = p.summary;
    char line[640];
    std::snprintf(
        line, sizeof line,
        "| %s | %d | %.0f | %.0f | %.0f | %.3f | %.2f | %.2f | %.3f | %lld | %s | %s | "
        "%s | %s | %s | %s | %.2f |\n",
        p.label.c_str(), p.nodes, p.cost_usd, p.gpu_h_bought, p.gpu_h_used,
        p.gpu_h_bought > 0 ? p.gpu_h_used / p.gpu_h_bought : 0.0, s.avg_jct_s / 3600,
        s.p99_jct_s / 3600, s.avg_queue_s / 3600, static_cast<long long>(s.unfinished),
        p.autoscaled ? std::to_string(p.fleet.nodes_created).c_str() : "-",
        p.autoscaled ? std::to_string(p.fleet.interruptions).c_str() : "-",
        p.autoscaled ? std::to_string(std::lround(p.fleet.gpu_s_lost / 3600)).c_str() : "-",
        p.autoscaled ? std::to_string(p.fleet.consolidations).c_str() : "-",
        p.autoscaled ? std::to_string(std::lround(p.fleet.gpu_s_lost_moves / 3600)).c_str() : "-",
        p.autoscaled ? std::to_string(p.fleet.planner_calls).c_str() : "-", p.seconds);
    out += line;
  }
  return out;
}

std::string CostCsv(const std::vector<CostPoint>& points) {
  std::string out =
      "point,autoscaled,nodes,cost_usd,gpu_hours_bought,gpu_hours_used,avg_jct_s,p99_jct_s,"
      "avg_queue_s,unfinished,nodes_created,nodes_retired,spot_nodes_created,interruptions,"
      "gpu_hours_lost,planner_calls,replay_s,consolidations,jobs_moved,gpu_hours_lost_moves\n";
  for (const CostPoint& p : points) {
    const JctSummary& s = p.summary;
    char line[512];
    std::snprintf(
        line, sizeof line,
        "%s,%d,%d,%.2f,%.2f,%.2f,%.1f,%.1f,%.1f,%lld,%lld,%lld,%lld,%lld,%.2f,%lld,%.3f,%lld,%lld,"
        "%.2f\n",
        p.label.c_str(), p.autoscaled ? 1 : 0, p.nodes, p.cost_usd, p.gpu_h_bought, p.gpu_h_used,
        s.avg_jct_s, s.p99_jct_s, s.avg_queue_s, static_cast<long long>(s.unfinished),
        static_cast<long long>(p.fleet.nodes_created),
        static_cast<long long>(p.fleet.nodes_retired),
        static_cast<long long>(p.fleet.spot_nodes_created),
        static_cast<long long>(p.fleet.interruptions), p.fleet.gpu_s_lost / 3600,
        static_cast<long long>(p.fleet.planner_calls), p.seconds,
        static_cast<long long>(p.fleet.consolidations), static_cast<long long>(p.fleet.jobs_moved),
        p.fleet.gpu_s_lost_moves / 3600);
    out += line;
  }
  return out;
}

std::string CostPlot(const std::vector<CostPoint>& points, const std::string& title) {
  std::vector<PlotSeries> series;
  std::vector<PlotMarks> marks;
  PlotSeries statics;
  statics.name = "static clusters (nodes)";
  PlotMarks static_marks;
  static_marks.markers = true;
  std::vector<const CostPoint*> sorted;
  for (const CostPoint& p : points) {
    if (!p.autoscaled) sorted.push_back(&p);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const CostPoint* a, const CostPoint* b) { return a->nodes < b->nodes; });
  double x_max = 0, y_max = 0;
  for (const CostPoint* p : sorted) {
    statics.x.push_back(p->summary.avg_jct_s / 3600);
    statics.y.push_back(p->cost_usd / 1000);
    static_marks.labels.push_back(std::to_string(p->nodes));
  }
  if (!statics.x.empty()) {
    series.push_back(std::move(statics));
    marks.push_back(std::move(static_marks));
  }
  for (const CostPoint& p : points) {
    if (!p.autoscaled) continue;
    PlotSeries s;
    s.name = p.label;
    s.x = {p.summary.avg_jct_s / 3600};
    s.y = {p.cost_usd / 1000};
    series.push_back(std::move(s));
    PlotMarks dot;
    dot.line = false;
    dot.markers = true;
    dot.labels = {p.label};  // named beside the dot too: colour is not the only key
    marks.push_back(std::move(dot));
  }
  for (const PlotSeries& s : series) {
    for (double x : s.x) x_max = std::max(x_max, x);
    for (double y : s.y) y_max = std::max(y_max, y);
  }
  PlotSpec spec;
  spec.title = title;
  spec.x_label = "average JCT (hours)";
  spec.y_label = "cost (thousands of dollars)";
  spec.x_max = x_max > 0 ? x_max * 1.08 : 1;
  spec.y_max = y_max > 0 ? y_max * 1.08 : 1;
  spec.width = 1000;
  return RenderSvgLineChart(spec, series, marks);
}

}  // namespace gpufleet::sim
