#include "sim/time_sim_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "sim/placement_report.h"
#include "sim/svg_plot.h"

namespace gpufleet::sim {

core::Result<std::vector<PolicyRun>> ComparePolicies(const std::vector<TraceJob>& jobs,
                                                     const ClusterSpec& cluster,
                                                     const std::vector<std::string>& policies,
                                                     const std::string& placement,
                                                     const TimeSimConfig& config, int threads) {
  for (const auto& p : policies) {
    if (!sched::MakeQueuePolicy(p)) {
      return core::Error{"unknown queue policy '" + p + "'; choose from " +
                         sched::QueuePolicyNames()};
    }
  }
  if (!sched::MakePlacementPolicy(placement)) {
    return core::Error{"unknown placement policy '" + placement + "'"};
  }
  std::vector<PolicyRun> runs(policies.size());
  std::vector<std::string> errors(policies.size());
  RunInParallel(static_cast<int>(policies.size()), threads, [&](int i) {
    auto queue = sched::MakeQueuePolicy(policies[i]);
    auto place = sched::MakePlacementPolicy(placement);
    place->Prepare(sched::WorkloadProfile());
    const auto t0 = std::chrono::steady_clock::now();
    auto r = RunTimeSim(jobs, cluster, *queue, *place, config, false);
    runs[i].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runs[i].policy = policies[i];
    if (!r) {
      errors[i] = r.error();
      return;
    }
    runs[i].result = std::move(r).value();
    runs[i].summary = Summarize(runs[i].result);
  });
  for (const auto& e : errors) {
    if (!e.empty()) return core::Error{e};
  }
  return runs;
}

const PolicyRun* BaselineRun(const std::vector<PolicyRun>& runs) {
  const PolicyRun* base = runs.empty() ? nullptr : &runs.front();
  for (const auto& r : runs) {
    if (r.policy == "fifo") base = &r;
  }
  return base;
}

std::string CompareTable(const std::vector<PolicyRun>& runs) {
  const PolicyRun* base = BaselineRun(runs);
  std::string out =
      "| policy | jobs | avg JCT (h) | p50 (h) | p95 (h) | p99 (h) | avg queue (h) | makespan (d) "
      "| "
      "utilization | preemptions | unfinished | Jain (VC slowdown) | avg JCT vs " +
      (base ? base->policy : std::string("-")) + " | p99 vs " +
      (base ? base->policy : std::string("-")) + " | replay (s) |\n" +
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : runs) {
    const JctSummary& s = r.summary;
    char line[512];
    std::snprintf(line, sizeof line,
                  "| %s | %lld | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f%% | %lld | %lld | "
                  "%.3f | %.3f | %.3f | %.2f |\n",
                  r.policy.c_str(), static_cast<long long>(s.jobs), s.avg_jct_s / 3600,
                  s.p50_jct_s / 3600, s.p95_jct_s / 3600, s.p99_jct_s / 3600, s.avg_queue_s / 3600,
                  static_cast<double>(r.result.makespan_s) / 86400, 100 * s.utilization,
                  static_cast<long long>(r.result.preemptions),
                  static_cast<long long>(s.unfinished), s.jain_index,
                  base ? s.avg_jct_s / base->summary.avg_jct_s : NAN,
                  base ? s.p99_jct_s / base->summary.p99_jct_s : NAN, r.seconds);
    out += line;
  }
  return out;
}

std::string CompareCsv(const std::vector<PolicyRun>& runs) {
  std::string out =
      "policy,jobs,finished,unfinished,avg_jct_s,p50_jct_s,p95_jct_s,p99_jct_s,avg_queue_s,"
      "makespan_s,utilization,preemptions,jain_index,prediction_median_rel_error\n";
  for (const auto& r : runs) {
    const JctSummary& s = r.summary;
    char line[512];
    std::snprintf(
        line, sizeof line, "%s,%lld,%lld,%lld,%.1f,%.1f,%.1f,%.1f,%.1f,%lld,%.4f,%lld,%.4f,%.4f\n",
        r.policy.c_str(), static_cast<long long>(s.jobs), static_cast<long long>(s.finished),
        static_cast<long long>(s.unfinished), s.avg_jct_s, s.p50_jct_s, s.p95_jct_s, s.p99_jct_s,
        s.avg_queue_s, static_cast<long long>(r.result.makespan_s), s.utilization,
        static_cast<long long>(r.result.preemptions), s.jain_index, s.prediction_median_rel_error);
    out += line;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ComparePlots(const std::vector<PolicyRun>& runs) {
  std::vector<std::pair<std::string, std::string>> plots;
  std::vector<PlotMarks> lines;
  for (size_t i = 0; i < runs.size(); ++i) lines.push_back(DistinctLine(i));
  // JCT CDF on a log10 axis of hours: x = log10(JCT in hours).
  std::vector<PlotSeries> cdf;
  for (const auto& r : runs) {
    std::vector<double> jct;
    for (const auto& o : r.result.jobs) {
      if (o.finish_s >= 0) jct.push_back(static_cast<double>(o.finish_s - o.submit_s) / 3600.0);
    }
    std::sort(jct.begin(), jct.end());
    PlotSeries s;
    s.name = r.policy;
    const size_t points = std::min<size_t>(jct.size(), 400);
    for (size_t k = 1; k <= points; ++k) {
      const size_t i = k * jct.size() / points - 1;
      s.x.push_back(std::log10(std::max(jct[i], 1e-3)));
      s.y.push_back(100.0 * static_cast<double>(i + 1) / static_cast<double>(jct.size()));
    }
    cdf.push_back(std::move(s));
  }
  PlotSpec spec;
  spec.title = "JCT CDF per queue policy";
  spec.x_label = "log10(job completion time in hours)";
  spec.y_label = "jobs finished (%)";
  spec.x_min = -3;
  spec.x_max = 4;
  spec.y_min = 0;
  spec.y_max = 100;
  plots.emplace_back("jct-cdf.svg", RenderSvgLineChart(spec, cdf, lines));
  // Hourly utilization, smoothed to days.
  std::vector<PlotSeries> util;
  double days = 1;
  for (const auto& r : runs) {
    const auto hours = HourlyUtilization(r.result);
    PlotSeries s;
    s.name = r.policy;
    for (size_t d = 0; d * 24 < hours.size(); ++d) {
      double sum = 0;
      size_t n = 0;
      for (size_t h = d * 24; h < std::min(hours.size(), (d + 1) * 24); ++h, ++n) sum += hours[h];
      s.x.push_back(static_cast<double>(d));
      s.y.push_back(100.0 * sum / static_cast<double>(n));
    }
    days = std::max(days, static_cast<double>(s.x.size()));
    util.push_back(std::move(s));
  }
  spec.title = "GPU utilization over time (daily mean)";
  spec.x_label = "day";
  spec.y_label = "GPUs busy (%)";
  spec.x_min = 0;
  spec.x_max = days;
  plots.emplace_back("utilization.svg", RenderSvgLineChart(spec, util, lines));
  return plots;
}

}  // namespace gpufleet::sim
