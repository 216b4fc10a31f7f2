#include "cli/placement_commands.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "cli/placement_output.h"
#include "core/gpu_catalog.h"
#include "sched/policy_registry.h"
#include "sim/placement_experiment.h"
#include "sim/published_results.h"
#include "sim/svg_plot.h"
#include "sim/synthetic_openb.h"

namespace gpufleet::cli {

namespace fs = std::filesystem;

namespace {

// Runs task(0..count-1) on `threads` threads (0 = all cores). Tasks must be independent.
void ParallelFor(int count, int threads, const std::function<void(int)>& task) {
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

std::string Stem(const std::string& path) { return fs::path(path).stem().string(); }

std::string OrderPath(const std::string& dir, const std::string& pods_path, uint64_t seed) {
  return (fs::path(dir) / (Stem(pods_path) + ".seed" + std::to_string(seed) + ".txt")).string();
}

struct SeedRun {
  sim::PlacementRun run;
  sim::PlacementCurves curves;
};

core::Result<SeedRun> RunOneSeed(const sim::OpenbWorkload& workload,
                                 const sched::WorkloadProfile& profile, const std::string& policy,
                                 const sim::PlacementOrder& order, uint64_t seed, double tune) {
  auto placement_policy = sched::MakePlacementPolicy(policy);
  if (!placement_policy) {
    return core::Error{"unknown placement policy '" + policy + "'; choose one of " +
                       sched::PlacementPolicyNames()};
  }
  placement_policy->Prepare(profile);
  core::Rng rng(seed);
  SeedRun out;
  out.run = sim::RunPlacement(workload, order, *placement_policy, profile, rng);
  out.curves = sim::SummarizeCurves(out.run, static_cast<int>(std::lround(tune * 100)));
  return out;
}

std::string DecisionLog(const sim::OpenbWorkload& workload, const sim::PlacementOrder& order,
                        const sim::PlacementRun& run) {
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

bool WriteFile(const std::string& path, const std::string& text) {
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "error: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int RunSimPlacement(const PlacementOptions& o) {
  if (!sched::MakePlacementPolicy(o.policy)) {
    std::fprintf(stderr, "error: unknown placement policy '%s'; choose one of %s\n",
                 o.policy.c_str(), sched::PlacementPolicyNames().c_str());
    return 2;
  }
  if (o.seeds < 1) {
    std::fprintf(stderr, "error: --seeds must be at least 1\n");
    return 2;
  }
  if (!(o.tune > 0 && o.tune <= 10)) {
    std::fprintf(stderr, "error: --tune must be in (0, 10]\n");
    return 2;
  }
  if (!o.order_path.empty() && o.seeds > 1 && o.policy != "random") {
    std::fprintf(stderr, "error: --order fixes one order; use --orders-dir for several seeds\n");
    return 2;
  }
  auto loaded = sim::ReadOpenbWorkload(o.nodes_path, o.pods_path, core::GpuCatalog::Builtin());
  if (!loaded) {
    std::fprintf(stderr, "error: %s\n", loaded.error().c_str());
    return 2;
  }
  const sim::OpenbWorkload& workload = loaded.value();
  const sched::WorkloadProfile profile = sim::ProfileOf(workload);

  std::vector<sim::PlacementOrder> orders(o.seeds);
  for (int i = 0; i < o.seeds; ++i) {
    const uint64_t seed = o.seed + i;
    if (!o.order_path.empty() || !o.orders_dir.empty()) {
      const std::string path =
          !o.order_path.empty() ? o.order_path : OrderPath(o.orders_dir, o.pods_path, seed);
      auto order = sim::ReadOrderFile(path, workload);
      if (!order) {
        std::fprintf(stderr, "error: %s\n", order.error().c_str());
        return 2;
      }
      orders[i] = std::move(order).value();
    } else {
      orders[i] = sim::GenerateOrder(workload, seed, o.tune);
    }
  }
  std::vector<SeedRun> runs(o.seeds);
  std::vector<std::string> errors(o.seeds);
  ParallelFor(o.seeds, o.threads, [&](int i) {
    auto r = RunOneSeed(workload, profile, o.policy, orders[i], o.seed + i, o.tune);
    if (r) {
      runs[i] = std::move(r).value();
    } else {
      errors[i] = r.error();
    }
  });
  for (const auto& e : errors) {
    if (!e.empty()) {
      std::fprintf(stderr, "error: %s\n", e.c_str());
      return 2;
    }
  }
  std::vector<sim::PlacementCurves> curves;
  for (auto& r : runs) curves.push_back(r.curves);
  PlacementSummary summary;
  summary.policy = o.policy;
  summary.nodes_path = o.nodes_path;
  summary.pods_path = o.pods_path;
  summary.seeds = o.seeds;
  summary.tune = o.tune;
  summary.order = !o.order_path.empty()   ? "order file " + o.order_path
                  : !o.orders_dir.empty() ? "published orders from " + o.orders_dir
                                          : "generated orders";
  summary.order +=
      ", seeds " + std::to_string(o.seed) + ".." + std::to_string(o.seed + o.seeds - 1);
  summary.curves = o.seeds == 1 ? curves.front() : sim::MeanCurves(curves);

  if (!o.decisions_path.empty() &&
      !WriteFile(o.decisions_path, DecisionLog(workload, orders[0], runs[0].run))) {
    return 1;
  }
  if (o.json) {
    std::fputs(PlacementJson(summary).c_str(), stdout);
  } else if (o.csv) {
    std::fputs(PlacementCsv(summary).c_str(), stdout);
  } else {
    const auto& a = summary.curves.allocation;
    const size_t last = a.size() - 1;
    std::printf("policy %s on %s (%s)\n", o.policy.c_str(), Stem(o.pods_path).c_str(),
                summary.order.c_str());
    std::printf("GPU allocation at 50%% / 100%% / %zu%% of arrived demand: %.2f / %.2f / %.2f %%\n",
                last, a.size() > 50 ? a[50] : NAN, a.size() > 100 ? a[100] : NAN, a[last]);
    std::printf("fragmentation ratio at %zu%%: %.2f %%; failed pods: %.1f of %.1f\n", last,
                summary.curves.frag_ratio[last], summary.curves.failed, summary.curves.pods);
    std::printf("(--json or --csv for every 1%% of demand)\n");
  }
  return 0;
}

namespace {

constexpr const char* kShippedTraces[] = {"openb_pod_list_default", "openb_pod_list_gpushare40",
                                          "openb_pod_list_gpuspec10", "openb_pod_list_multigpu20"};

struct Cell {  // one (trace, policy, seed) run
  int trace = 0;
  int policy = 0;
  uint64_t seed = 0;
  sim::PlacementCurves curves;
  double seconds = 0;
  std::string error;
};

int64_t TotalGpus(const sim::OpenbWorkload& w) {
  int64_t gpus = 0;
  for (const auto& n : w.nodes) gpus += n.num_gpus;
  return gpus;
}

std::string Fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::isnan(v) ? "-" : "%.2f", v);
  return buf;
}

}  // namespace

int RunSimPlacementReport(const PlacementReportOptions& o) {
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  std::vector<std::string> policies = o.policies;
  if (policies.empty()) {
    for (const auto& info : sched::PlacementPolicies()) policies.emplace_back(info.name);
  }
  for (const auto& p : policies) {
    if (!sched::MakePlacementPolicy(p)) {
      std::fprintf(stderr, "error: unknown placement policy '%s'; choose from %s\n", p.c_str(),
                   sched::PlacementPolicyNames().c_str());
      return 2;
    }
  }
  const bool real =
      !o.traces_dir.empty() && fs::exists(fs::path(o.traces_dir) / "openb_node_list_gpu_node.csv");
  std::vector<std::string> trace_names;
  std::vector<sim::OpenbWorkload> workloads;
  std::vector<std::vector<sim::PlacementOrder>> orders;  // [trace][seed index]
  if (real) {
    if (o.traces.empty()) {
      trace_names.assign(std::begin(kShippedTraces), std::end(kShippedTraces));
    } else {
      trace_names = o.traces;
    }
    for (const auto& name : trace_names) {
      auto w =
          sim::ReadOpenbWorkload((fs::path(o.traces_dir) / "openb_node_list_gpu_node.csv").string(),
                                 (fs::path(o.traces_dir) / (name + ".csv")).string(), catalog);
      if (!w) {
        std::fprintf(stderr, "error: %s\n", w.error().c_str());
        return 2;
      }
      workloads.push_back(std::move(w).value());
      orders.emplace_back();
      for (int s = 0; s < o.seeds; ++s) {
        const std::string dir = (fs::path(o.traces_dir) / "orders").string();
        const std::string path = OrderPath(dir, workloads.back().pods_path, 42 + s);
        if (fs::exists(path)) {
          auto order = sim::ReadOrderFile(path, workloads.back());
          if (!order) {
            std::fprintf(stderr, "error: %s\n", order.error().c_str());
            return 2;
          }
          orders.back().push_back(std::move(order).value());
        } else {
          orders.back().push_back(sim::GenerateOrder(workloads.back(), 42 + s, 1.3));
        }
      }
    }
  } else {
    std::printf(
        "NOTE: %s not found: running on a SYNTHETIC openb-like trace generated by gpufleet "
        "(no published numbers to compare against).\n",
        o.traces_dir.empty() ? "trace folder" : o.traces_dir.c_str());
    trace_names = {"synthetic"};
    workloads.push_back(sim::GenerateSyntheticOpenb(catalog, 400, 1.0, 7));
    orders.emplace_back();
    for (int s = 0; s < o.seeds; ++s)
      orders.back().push_back(sim::GenerateOrder(workloads.back(), 42 + s, 1.3));
  }
  std::vector<sched::WorkloadProfile> profiles;
  for (const auto& w : workloads) profiles.push_back(sim::ProfileOf(w));

  std::vector<Cell> cells;
  for (size_t t = 0; t < workloads.size(); ++t) {
    for (size_t p = 0; p < policies.size(); ++p) {
      for (int s = 0; s < o.seeds; ++s) {
        Cell c;
        c.trace = static_cast<int>(t);
        c.policy = static_cast<int>(p);
        c.seed = 42 + s;
        cells.push_back(std::move(c));
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  ParallelFor(static_cast<int>(cells.size()), o.threads, [&](int i) {
    Cell& c = cells[i];
    const auto t0 = std::chrono::steady_clock::now();
    auto r = RunOneSeed(workloads[c.trace], profiles[c.trace], policies[c.policy],
                        orders[c.trace][c.seed - 42], c.seed, 1.3);
    if (r) {
      c.curves = std::move(r.value().curves);
    } else {
      c.error = r.error();
    }
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& c : cells) {
    if (!c.error.empty()) {
      std::fprintf(stderr, "error: %s\n", c.error.c_str());
      return 2;
    }
  }

  // Published curves, keyed by (trace, policy, seed).
  std::map<std::tuple<std::string, std::string, int>, std::vector<double>> pub_alloc, pub_frag;
  if (real) {
    for (auto [file, target] : {std::pair{"published-allocation.csv", &pub_alloc},
                                std::pair{"published-frag-ratio.csv", &pub_frag}}) {
      auto curves = sim::ReadPublishedCurves((fs::path(o.traces_dir) / file).string());
      if (!curves) {
        std::fprintf(stderr, "warning: %s\n", curves.error().c_str());
        continue;
      }
      for (auto& c : curves.value())
        (*target)[{c.workload, c.policy, c.seed}] = std::move(c.values);
    }
  }

  // Compare and tabulate.
  int exact_runs = 0, compared_runs = 0, frag_exact = 0, frag_compared = 0;
  bool random_ok = true;
  std::string mismatches;
  std::string table =
      "| trace | policy | 50% ours | 50% published | 100% ours | 100% published | 130% ours | "
      "130% published | GPUs left idle at 130% | failed pods | seeds matching published |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string curves_csv = "trace,policy,kind";
  for (int x = 0; x <= 130; ++x) curves_csv += "," + std::to_string(x);
  curves_csv += "\n";
  std::vector<std::vector<sim::PlotSeries>> plots(workloads.size());
  for (size_t t = 0; t < workloads.size(); ++t) {
    for (size_t p = 0; p < policies.size(); ++p) {
      std::vector<sim::PlacementCurves> ours, published;
      int matching = 0, with_published = 0;
      for (const auto& c : cells) {
        if (c.trace != static_cast<int>(t) || c.policy != static_cast<int>(p)) continue;
        ours.push_back(c.curves);
        auto key = std::make_tuple(trace_names[t], policies[p], static_cast<int>(c.seed));
        auto pa = pub_alloc.find(key);
        if (pa == pub_alloc.end()) continue;
        sim::PlacementCurves pc;
        pc.allocation = pa->second;
        auto pf = pub_frag.find(key);
        pc.frag_ratio =
            pf != pub_frag.end() ? pf->second : std::vector<double>(pa->second.size(), NAN);
        published.push_back(pc);
        ++with_published;
        bool same = pa->second.size() == c.curves.allocation.size();
        for (size_t x = 0; same && x < pa->second.size(); ++x) {
          same = std::fabs(pa->second[x] - c.curves.allocation[x]) < 0.005;
          if (!same && policies[p] != "random") {
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "  %s %s seed %d: allocation at %zu%%: ours %.2f, published %.2f\n",
                          trace_names[t].c_str(), policies[p].c_str(), static_cast<int>(c.seed), x,
                          c.curves.allocation[x], pa->second[x]);
            mismatches += buf;
          }
        }
        if (policies[p] != "random") {
          ++compared_runs;
          exact_runs += same;
          if (pf != pub_frag.end()) {
            bool frag_same = true;
            for (size_t x = 0; x < pf->second.size() && x < c.curves.frag_ratio.size(); ++x) {
              if (frag_same && std::fabs(pf->second[x] - c.curves.frag_ratio[x]) >= 1e-9) {
                frag_same = false;
                char buf[256];
                std::snprintf(buf, sizeof buf,
                              "  %s %s seed %d: frag ratio at %zu%%: ours %.9f, published %.9f\n",
                              trace_names[t].c_str(), policies[p].c_str(), static_cast<int>(c.seed),
                              x, c.curves.frag_ratio[x], pf->second[x]);
                mismatches += buf;
              }
            }
            ++frag_compared;
            frag_exact += frag_same;
          }
        }
        matching += same;
      }
      const sim::PlacementCurves mean = sim::MeanCurves(ours);
      sim::PlacementCurves pub_mean;
      if (!published.empty()) pub_mean = sim::MeanCurves(published);
      auto pub_at = [&](int x) { return published.empty() ? NAN : pub_mean.allocation[x]; };
      bool random_mean_ok = true;
      if (policies[p] == "random" && !published.empty()) {
        for (size_t x = 0; x < mean.allocation.size(); ++x) {
          if (std::fabs(mean.allocation[x] - pub_mean.allocation[x]) > 1.0) random_mean_ok = false;
        }
        random_ok = random_ok && random_mean_ok;
      }
      const double gpus =
          static_cast<double>(workloads[t].nodes.empty() ? 0 : TotalGpus(workloads[t]));
      std::string matched = "n/a";
      if (with_published > 0) {
        matched = policies[p] == "random"
                      ? std::string("mean within 1.0: ") + (random_mean_ok ? "yes" : "NO")
                      : std::to_string(matching) + "/" + std::to_string(with_published);
      }
      char row[512];
      std::snprintf(row, sizeof row,
                    "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.1f | %s |\n",
                    trace_names[t].c_str(), policies[p].c_str(),
                    Fixed2(mean.allocation[50]).c_str(), Fixed2(pub_at(50)).c_str(),
                    Fixed2(mean.allocation[100]).c_str(), Fixed2(pub_at(100)).c_str(),
                    Fixed2(mean.allocation[130]).c_str(), Fixed2(pub_at(130)).c_str(),
                    (100.0 - mean.allocation[130]) / 100.0 * gpus, mean.failed, matched.c_str());
      table += row;
      for (auto [kind, values] :
           {std::pair{"allocation", &mean.allocation}, std::pair{"frag_ratio", &mean.frag_ratio}}) {
        curves_csv += trace_names[t] + "," + policies[p] + "," + kind;
        for (double v : *values) {
          char buf[32];
          std::snprintf(buf, sizeof buf, ",%.4f", v);
          curves_csv += buf;
        }
        curves_csv += "\n";
      }
      sim::PlotSeries series;
      series.name = policies[p];
      for (size_t x = 0; x < mean.allocation.size(); ++x) {
        series.x.push_back(static_cast<double>(x));
        series.y.push_back(mean.allocation[x]);
      }
      plots[t].push_back(std::move(series));
    }
  }
  double cpu_seconds = 0;
  for (const auto& c : cells) cpu_seconds += c.seconds;

  std::printf("%s\n", table.c_str());
  std::printf(
      "%zu runs (%zu traces x %zu policies x %d seeds) in %.2f s wall, %.2f s of run time\n",
      cells.size(), workloads.size(), policies.size(), o.seeds, wall, cpu_seconds);
  bool ok = true;
  if (real) {
    std::printf(
        "deterministic policies: %d of %d (trace, policy, seed) allocation curves match the "
        "published ones to 2 decimals at every 1%% bucket\n",
        exact_runs, compared_runs);
    std::printf("fragmentation ratio: %d of %d curves within 1e-9 of the published ones\n",
                frag_exact, frag_compared);
    std::printf(
        "random fit: 10-seed mean within 1.0 point of the published mean at every bucket: %s\n",
        random_ok ? "yes" : "NO");
    if (!mismatches.empty()) {
      std::printf("first mismatches:\n%s", mismatches.substr(0, 2000).c_str());
    }
    ok = exact_runs == compared_runs && random_ok && frag_exact == frag_compared;
  }
  if (!o.out_dir.empty()) {
    bool written = WriteFile((fs::path(o.out_dir) / "placement-table.md").string(), table) &&
                   WriteFile((fs::path(o.out_dir) / "placement-curves.csv").string(), curves_csv);
    for (size_t t = 0; t < workloads.size() && written; ++t) {
      sim::PlotSpec spec;
      spec.title = "GPU allocation vs. arrived GPU demand: " + trace_names[t] + " (" +
                   std::to_string(o.seeds) + "-seed mean)";
      spec.x_label = "arrived GPU demand (% of cluster GPUs)";
      spec.y_label = "GPUs allocated (% of cluster)";
      spec.x_min = 0;
      spec.x_max = 130;
      spec.y_min = 0;
      spec.y_max = 100;
      const std::string path =
          (fs::path(o.out_dir) / ("allocation-" + trace_names[t] + ".svg")).string();
      written = WriteFile(path, sim::RenderSvgLineChart(spec, plots[t]));
      // A zoom on the tail, where the policies differ.
      spec.title = "Allocation at high demand: " + trace_names[t];
      spec.x_min = 80;
      spec.y_min = 75;
      const std::string zoom =
          (fs::path(o.out_dir) / ("allocation-" + trace_names[t] + "-zoom.svg")).string();
      written = written && WriteFile(zoom, sim::RenderSvgLineChart(spec, plots[t]));
    }
    if (!written) return 1;
    std::printf("wrote %s/placement-table.md, placement-curves.csv and allocation-*.svg\n",
                o.out_dir.c_str());
  }
  if (o.check && !ok) {
    std::fprintf(stderr, "check failed: published curves not matched\n");
    return 1;
  }
  return 0;
}

}  // namespace gpufleet::cli
