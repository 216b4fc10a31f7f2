#include <algorithm>
#include <cmath>
#include <map>

#include "sim/time_sim.h"

// The replay's summaries (JCT percentiles, fairness, utilization); the engine is time_sim.cpp.
namespace gpufleet::sim {

namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

JctSummary Summarize(const TimeSimResult& result) {
  JctSummary s;
  s.jobs = static_cast<int64_t>(result.jobs.size());
  std::vector<double> jct;
  double queue_sum = 0;
  int64_t started = 0;
  for (const auto& o : result.jobs) {
    if (o.start_s >= 0) {
      queue_sum += static_cast<double>(o.start_s - o.submit_s);
      ++started;
    }
    if (o.finish_s >= 0) jct.push_back(static_cast<double>(o.finish_s - o.submit_s));
  }
  s.finished = static_cast<int64_t>(jct.size());
  s.unfinished = s.jobs - s.finished;
  std::sort(jct.begin(), jct.end());
  double sum = 0;
  for (double v : jct) sum += v;
  s.avg_jct_s = jct.empty() ? 0 : sum / static_cast<double>(jct.size());
  s.p50_jct_s = Percentile(jct, 0.50);
  s.p95_jct_s = Percentile(jct, 0.95);
  s.p99_jct_s = Percentile(jct, 0.99);
  s.avg_queue_s = started == 0 ? 0 : queue_sum / static_cast<double>(started);
  std::vector<double> rel;
  double abs_sum = 0;
  for (const auto& o : result.jobs) {
    if (std::isnan(o.predicted_s)) continue;
    const double err = std::fabs(o.predicted_s - static_cast<double>(o.duration_s));
    abs_sum += err;
    rel.push_back(err / static_cast<double>(std::max<int64_t>(o.duration_s, 1)));
  }
  s.predicted_jobs = static_cast<int64_t>(rel.size());
  if (!rel.empty()) {
    std::sort(rel.begin(), rel.end());
    s.prediction_median_rel_error = Percentile(rel, 0.5);
    s.prediction_mae_s = abs_sum / static_cast<double>(rel.size());
  }
  std::map<std::string, std::pair<double, int64_t>> by_vc;  // (sum of slowdowns, jobs)
  for (const auto& o : result.jobs) {
    if (o.finish_s < 0) continue;
    auto& [sum_slowdown, n] = by_vc[o.vc];
    sum_slowdown += static_cast<double>(o.finish_s - o.submit_s) /
                    static_cast<double>(std::max<int64_t>(o.duration_s, 1));
    ++n;
  }
  double jain_sum = 0, jain_sq = 0;
  for (const auto& [vc, acc] : by_vc) {
    const double mean = acc.first / static_cast<double>(acc.second);
    s.vc_slowdown.emplace_back(vc, mean);
    jain_sum += mean;
    jain_sq += mean * mean;
  }
  if (!s.vc_slowdown.empty()) {
    s.jain_index = jain_sum * jain_sum / (static_cast<double>(s.vc_slowdown.size()) * jain_sq);
  }
  const double capacity = result.fleet.enabled ? result.fleet.gpu_s_bought
                                               : static_cast<double>(result.total_gpus) *
                                                     static_cast<double>(result.makespan_s);
  s.utilization = capacity > 0 ? result.busy_gpu_s / capacity : 0;
  return s;
}

std::vector<double> HourlyUtilization(const TimeSimResult& result) {
  std::vector<double> hours;
  if (result.busy_gpus.empty() || result.total_gpus == 0) return hours;
  const int64_t start = result.jobs.empty() ? 0 : result.jobs.front().submit_s;
  const int64_t end = start + result.makespan_s;
  const size_t n = static_cast<size_t>((end - start + 3599) / 3600);
  std::vector<double> busy_s(n, 0.0);
  for (size_t i = 0; i < result.busy_gpus.size(); ++i) {
    int64_t from = result.busy_gpus[i].first;
    const int64_t to = i + 1 < result.busy_gpus.size() ? result.busy_gpus[i + 1].first : end;
    const int gpus = result.busy_gpus[i].second;
    while (from < to) {
      const size_t h = static_cast<size_t>((from - start) / 3600);
      if (h >= n) break;
      const int64_t hour_end = start + static_cast<int64_t>(h + 1) * 3600;
      const int64_t upto = std::min(to, hour_end);
      busy_s[h] += static_cast<double>(gpus) * static_cast<double>(upto - from);
      from = upto;
    }
  }
  for (double& b : busy_s) b /= 3600.0 * static_cast<double>(result.total_gpus);
  return busy_s;
}

}  // namespace gpufleet::sim
