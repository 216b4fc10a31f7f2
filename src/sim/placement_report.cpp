#include "sim/placement_report.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <thread>
#include <tuple>

#include "core/gpu_catalog.h"
#include "sched/policy_registry.h"
#include "sim/published_results.h"
#include "sim/svg_plot.h"
#include "sim/synthetic_openb.h"

namespace gpufleet::sim {

namespace fs = std::filesystem;

void RunInParallel(int count, int threads, const std::function<void(int)>& task) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, count);
  if (threads <= 1) {
    for (int i = 0; i < count; ++i) task(i);
    return;
  }
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < count; i = next++) task(i);
    });
  }
  for (auto& th : pool) th.join();
}

std::string PublishedOrderPath(const std::string& dir, const std::string& pods_path,
                               uint64_t seed) {
  const std::string stem = fs::path(pods_path).stem().string();
  return (fs::path(dir) / (stem + ".seed" + std::to_string(seed) + ".txt")).string();
}

core::Result<SeedRun> RunPlacementSeed(const OpenbWorkload& workload,
                                       const sched::WorkloadProfile& profile,
                                       const std::string& policy, const PlacementOrder& order,
                                       uint64_t seed, double tune) {
  auto placement_policy = sched::MakePlacementPolicy(policy);
  if (!placement_policy) {
    return core::Error{"unknown placement policy '" + policy + "'; choose one of " +
                       sched::PlacementPolicyNames()};
  }
  PreparePlacementPolicy(*placement_policy, profile, workload);
  core::Rng rng(seed);
  SeedRun out;
  out.run = RunPlacement(workload, order, *placement_policy, profile, rng);
  out.curves = SummarizeCurves(out.run, static_cast<int>(std::lround(tune * 100)));
  return out;
}

std::string DecisionLogCsv(const OpenbWorkload& workload, const PlacementOrder& order,
                           const PlacementRun& run) {
  std::string out = "event,pod,node,gpus\n";
  for (size_t i = 0; i < order.pods.size(); ++i) {
    out += std::to_string(i) + "," + workload.pods[order.pods[i]].job.name + ",";
    if (run.node[i] < 0) {
      out += "-,\n";
      continue;
    }
    out += workload.nodes[run.node[i]].name + ",";
    bool first = true;
    for (int g = 0; g < 32; ++g) {
      if (!((run.gpus[i] >> g) & 1u)) continue;
      if (!first) out += ' ';
      out += std::to_string(g);
      first = false;
    }
    out += "\n";
  }
  return out;
}

namespace {

constexpr const char* kShippedTraces[] = {"openb_pod_list_default", "openb_pod_list_gpushare40",
                                          "openb_pod_list_gpuspec10", "openb_pod_list_multigpu20"};
constexpr uint64_t kFirstSeed = 42;
constexpr double kTune = 1.3;

int64_t TotalGpus(const OpenbWorkload& w) {
  int64_t gpus = 0;
  for (const auto& n : w.nodes) gpus += n.num_gpus;
  return gpus;
}

std::string Fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::isnan(v) ? "-" : "%.2f", v);
  return buf;
}

using CurveKey = std::tuple<std::string, std::string, int>;  // (trace, policy, seed)

// The published curves in `traces_dir`, keyed by (trace, policy, seed); empty when unreadable.
std::map<CurveKey, std::vector<double>> ReadPublished(const std::string& traces_dir,
                                                      const char* file) {
  std::map<CurveKey, std::vector<double>> out;
  auto curves = ReadPublishedCurves((fs::path(traces_dir) / file).string());
  if (!curves) {
    std::fprintf(stderr, "warning: %s\n", curves.error().c_str());
    return out;
  }
  for (auto& c : curves.value()) out[{c.workload, c.policy, c.seed}] = std::move(c.values);
  return out;
}

}  // namespace

core::Result<ReportInputs> LoadReportInputs(const std::string& traces_dir,
                                            std::vector<std::string> trace_names, int seeds) {
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  ReportInputs in;
  in.real =
      !traces_dir.empty() && fs::exists(fs::path(traces_dir) / "openb_node_list_gpu_node.csv");
  if (!in.real) {
    in.trace_names = {"synthetic"};
    in.workloads.push_back(GenerateSyntheticOpenb(catalog, 400, 1.0, 7));
    in.orders.emplace_back();
    for (int s = 0; s < seeds; ++s) {
      in.orders.back().push_back(GenerateOrder(in.workloads.back(), kFirstSeed + s, kTune));
    }
    return in;
  }
  if (trace_names.empty()) trace_names.assign(std::begin(kShippedTraces), std::end(kShippedTraces));
  in.trace_names = std::move(trace_names);
  const std::string nodes = (fs::path(traces_dir) / "openb_node_list_gpu_node.csv").string();
  const std::string orders_dir = (fs::path(traces_dir) / "orders").string();
  for (const auto& name : in.trace_names) {
    auto w = ReadOpenbWorkload(nodes, (fs::path(traces_dir) / (name + ".csv")).string(), catalog);
    if (!w) return core::Error{w.error()};
    in.workloads.push_back(std::move(w).value());
    const OpenbWorkload& workload = in.workloads.back();
    in.orders.emplace_back();
    for (int s = 0; s < seeds; ++s) {
      const std::string path = PublishedOrderPath(orders_dir, workload.pods_path, kFirstSeed + s);
      if (!fs::exists(path)) {
        in.orders.back().push_back(GenerateOrder(workload, kFirstSeed + s, kTune));
        continue;
      }
      auto order = ReadOrderFile(path, workload);
      if (!order) return core::Error{order.error()};
      in.orders.back().push_back(std::move(order).value());
    }
  }
  return in;
}

core::Result<PlacementReport> RunPlacementReport(const ReportInputs& in,
                                                 const std::vector<std::string>& policies,
                                                 const std::string& traces_dir, int threads) {
  const int seeds = in.orders.empty() ? 0 : static_cast<int>(in.orders.front().size());
  std::vector<sched::WorkloadProfile> profiles;
  for (const auto& w : in.workloads) profiles.push_back(ProfileOf(w));

  struct Cell {  // one (trace, policy, seed) run
    size_t trace, policy;
    int seed_index;
    PlacementCurves curves;
    double seconds = 0;
    std::string error;
  };
  std::vector<Cell> cells;
  for (size_t t = 0; t < in.workloads.size(); ++t) {
    for (size_t p = 0; p < policies.size(); ++p) {
      for (int s = 0; s < seeds; ++s) cells.push_back(Cell{t, p, s, {}, 0, {}});
    }
  }
  // Wall-clock time is measured for the report only; it decides nothing.
  const auto start = std::chrono::steady_clock::now();
  RunInParallel(static_cast<int>(cells.size()), threads, [&](int i) {
    Cell& c = cells[i];
    const auto t0 = std::chrono::steady_clock::now();
    auto r = RunPlacementSeed(in.workloads[c.trace], profiles[c.trace], policies[c.policy],
                              in.orders[c.trace][c.seed_index], kFirstSeed + c.seed_index, kTune);
    if (r) {
      c.curves = std::move(r.value().curves);
    } else {
      c.error = r.error();
    }
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  PlacementReport report;
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& c : cells) {
    if (!c.error.empty()) return core::Error{c.error};
    report.run_seconds += c.seconds;
  }
  report.real = in.real;
  report.seeds = seeds;
  report.traces = in.workloads.size();
  report.policies = policies.size();
  report.runs = static_cast<int>(cells.size());

  std::map<CurveKey, std::vector<double>> pub_alloc, pub_frag;
  if (in.real) {
    pub_alloc = ReadPublished(traces_dir, "published-allocation.csv");
    pub_frag = ReadPublished(traces_dir, "published-frag-ratio.csv");
  }
  auto note = [&report](const std::string& trace, const std::string& policy, uint64_t seed,
                        const char* what, size_t x, const char* format, double ours,
                        double published) {
    char values[128];
    std::snprintf(values, sizeof values, format, ours, published);
    report.mismatches += "  " + trace + " " + policy + " seed " + std::to_string(seed) + ": " +
                         what + " at " + std::to_string(x) + "%: " + values + "\n";
  };
  for (size_t t = 0; t < in.workloads.size(); ++t) {
    for (size_t p = 0; p < policies.size(); ++p) {
      const std::string& trace = in.trace_names[t];
      const std::string& policy = policies[p];
      const bool randomized = policy == "random";
      ReportRow row;
      row.trace = trace;
      row.policy = policy;
      row.gpus = TotalGpus(in.workloads[t]);
      std::vector<PlacementCurves> ours, published;
      for (const auto& c : cells) {
        if (c.trace != t || c.policy != p) continue;
        ours.push_back(c.curves);
        const uint64_t seed = kFirstSeed + c.seed_index;
        auto pa = pub_alloc.find({trace, policy, static_cast<int>(seed)});
        if (pa == pub_alloc.end()) continue;
        auto pf = pub_frag.find({trace, policy, static_cast<int>(seed)});
        PlacementCurves pc;
        pc.allocation = pa->second;
        pc.frag_ratio =
            pf != pub_frag.end() ? pf->second : std::vector<double>(pa->second.size(), NAN);
        published.push_back(pc);
        ++row.seeds_published;
        bool same = pa->second.size() == c.curves.allocation.size();
        for (size_t x = 0; same && x < pa->second.size(); ++x) {
          same = std::fabs(pa->second[x] - c.curves.allocation[x]) < 0.005;
          if (!same && !randomized) {
            note(trace, policy, seed, "allocation", x, "ours %.2f, published %.2f",
                 c.curves.allocation[x], pa->second[x]);
          }
        }
        row.seeds_matching += same;
        if (randomized) continue;
        ++report.compared_runs;
        report.exact_runs += same;
        if (pf == pub_frag.end()) continue;
        bool frag_same = true;
        for (size_t x = 0; frag_same && x < pf->second.size() && x < c.curves.frag_ratio.size();
             ++x) {
          if (std::fabs(pf->second[x] - c.curves.frag_ratio[x]) >= 1e-9) {
            frag_same = false;
            note(trace, policy, seed, "frag ratio", x, "ours %.9f, published %.9f",
                 c.curves.frag_ratio[x], pf->second[x]);
          }
        }
        ++report.frag_compared;
        report.frag_exact += frag_same;
      }
      row.mean = MeanCurves(ours);
      if (!published.empty()) {
        row.published_mean = MeanCurves(published);
        if (randomized) {
          for (size_t x = 0; x < row.mean.allocation.size(); ++x) {
            if (std::fabs(row.mean.allocation[x] - row.published_mean.allocation[x]) > 1.0) {
              row.random_mean_ok = false;
            }
          }
          report.random_ok = report.random_ok && row.random_mean_ok;
        }
      }
      report.rows.push_back(std::move(row));
    }
  }
  return report;
}

std::string ReportTable(const PlacementReport& report) {
  std::string table =
      "| trace | policy | 50% ours | 50% published | 100% ours | 100% published | 130% ours | "
      "130% published | GPUs left idle at 130% | failed pods | seeds matching published |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ReportRow& row : report.rows) {
    const bool has_published = !row.published_mean.allocation.empty();
    auto pub_at = [&](size_t x) { return has_published ? row.published_mean.allocation[x] : NAN; };
    std::string matched = "n/a";
    if (row.seeds_published > 0) {
      matched =
          row.policy == "random"
              ? std::string("mean within 1.0: ") + (row.random_mean_ok ? "yes" : "NO")
              : std::to_string(row.seeds_matching) + "/" + std::to_string(row.seeds_published);
    }
    const auto& a = row.mean.allocation;
    char line[512];
    std::snprintf(
        line, sizeof line, "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.1f | %s |\n",
        row.trace.c_str(), row.policy.c_str(), Fixed2(a[50]).c_str(), Fixed2(pub_at(50)).c_str(),
        Fixed2(a[100]).c_str(), Fixed2(pub_at(100)).c_str(), Fixed2(a[130]).c_str(),
        Fixed2(pub_at(130)).c_str(), (100.0 - a[130]) / 100.0 * static_cast<double>(row.gpus),
        row.mean.failed, matched.c_str());
    table += line;
  }
  return table;
}

std::string ReportCurvesCsv(const PlacementReport& report) {
  std::string csv = "trace,policy,kind";
  const size_t buckets = report.rows.empty() ? 0 : report.rows.front().mean.allocation.size();
  for (size_t x = 0; x < buckets; ++x) csv += "," + std::to_string(x);
  csv += "\n";
  for (const ReportRow& row : report.rows) {
    for (auto [kind, values] : {std::pair{"allocation", &row.mean.allocation},
                                std::pair{"frag_ratio", &row.mean.frag_ratio}}) {
      csv += row.trace + "," + row.policy + "," + kind;
      for (double v : *values) {
        char buf[32];
        std::snprintf(buf, sizeof buf, ",%.4f", v);
        csv += buf;
      }
      csv += "\n";
    }
  }
  return csv;
}

std::vector<std::pair<std::string, std::string>> ReportPlots(const PlacementReport& report) {
  std::vector<std::pair<std::string, std::string>> plots;
  std::vector<std::string> traces;
  for (const auto& row : report.rows) {
    if (std::find(traces.begin(), traces.end(), row.trace) == traces.end()) {
      traces.push_back(row.trace);
    }
  }
  for (const std::string& trace : traces) {
    std::vector<PlotSeries> series;
    for (const auto& row : report.rows) {
      if (row.trace != trace) continue;
      PlotSeries s;
      s.name = row.policy;
      for (size_t x = 0; x < row.mean.allocation.size(); ++x) {
        s.x.push_back(static_cast<double>(x));
        s.y.push_back(row.mean.allocation[x]);
      }
      series.push_back(std::move(s));
    }
    PlotSpec spec;
    spec.title = "GPU allocation vs. arrived GPU demand: " + trace + " (" +
                 std::to_string(report.seeds) + "-seed mean)";
    spec.x_label = "arrived GPU demand (% of cluster GPUs)";
    spec.y_label = "GPUs allocated (% of cluster)";
    spec.x_min = 0;
    spec.x_max = 130;
    spec.y_min = 0;
    spec.y_max = 100;
    plots.emplace_back("allocation-" + trace + ".svg", RenderSvgLineChart(spec, series));
    // A zoom on the tail, where the policies differ.
    spec.title = "Allocation at high demand: " + trace;
    spec.x_min = 80;
    spec.y_min = 75;
    plots.emplace_back("allocation-" + trace + "-zoom.svg", RenderSvgLineChart(spec, series));
  }
  return plots;
}

}  // namespace gpufleet::sim
