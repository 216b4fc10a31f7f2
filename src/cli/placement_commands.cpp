#include "cli/placement_commands.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/file_output.h"
#include "cli/placement_output.h"
#include "core/gpu_catalog.h"
#include "sched/policy_registry.h"
#include "sim/placement_experiment.h"
#include "sim/placement_report.h"

namespace gpufleet::cli {

namespace fs = std::filesystem;

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
      const std::string path = !o.order_path.empty()
                                   ? o.order_path
                                   : sim::PublishedOrderPath(o.orders_dir, o.pods_path, seed);
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
  std::vector<sim::SeedRun> runs(o.seeds);
  std::vector<std::string> errors(o.seeds);
  sim::RunInParallel(o.seeds, o.threads, [&](int i) {
    auto r = sim::RunPlacementSeed(workload, profile, o.policy, orders[i], o.seed + i, o.tune);
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
      !WriteTextFile(o.decisions_path, sim::DecisionLogCsv(workload, orders[0], runs[0].run))) {
    return 1;
  }
  if (o.json) {
    std::fputs(PlacementJson(summary).c_str(), stdout);
  } else if (o.csv) {
    std::fputs(PlacementCsv(summary).c_str(), stdout);
  } else {
    const auto& a = summary.curves.allocation;
    const size_t last = a.size() - 1;
    std::printf("policy %s on %s (%s)\n", o.policy.c_str(),
                fs::path(o.pods_path).stem().string().c_str(), summary.order.c_str());
    std::printf("GPU allocation at 50%% / 100%% / %zu%% of arrived demand: %.2f / %.2f / %.2f %%\n",
                last, a.size() > 50 ? a[50] : NAN, a.size() > 100 ? a[100] : NAN, a[last]);
    std::printf("fragmentation ratio at %zu%%: %.2f %%; failed pods: %.1f of %.1f\n", last,
                summary.curves.frag_ratio[last], summary.curves.failed, summary.curves.pods);
    std::printf("(--json or --csv for every 1%% of demand)\n");
  }
  return 0;
}

int RunSimPlacementReport(const PlacementReportOptions& o) {
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
  if (o.seeds < 1) {
    std::fprintf(stderr, "error: --seeds must be at least 1\n");
    return 2;
  }
  auto inputs = sim::LoadReportInputs(o.traces_dir, o.traces, o.seeds);
  if (!inputs) {
    std::fprintf(stderr, "error: %s\n", inputs.error().c_str());
    return 2;
  }
  if (!inputs.value().real) {
    std::printf(
        "NOTE: %s not found: running on a SYNTHETIC openb-like trace generated by gpufleet "
        "(no published numbers to compare against).\n",
        o.traces_dir.empty() ? "trace folder" : o.traces_dir.c_str());
  }
  auto ran = sim::RunPlacementReport(inputs.value(), policies, o.traces_dir, o.threads);
  if (!ran) {
    std::fprintf(stderr, "error: %s\n", ran.error().c_str());
    return 2;
  }
  const sim::PlacementReport& report = ran.value();
  const std::string table = sim::ReportTable(report);
  std::printf("%s\n", table.c_str());
  std::printf("%d runs (%zu traces x %zu policies x %d seeds) in %.2f s wall, %.2f s of run time\n",
              report.runs, report.traces, report.policies, report.seeds, report.wall_seconds,
              report.run_seconds);
  if (report.real) {
    std::printf(
        "deterministic policies: %d of %d (trace, policy, seed) allocation curves match the "
        "published ones to 2 decimals at every 1%% bucket\n",
        report.exact_runs, report.compared_runs);
    std::printf("fragmentation ratio: %d of %d curves within 1e-9 of the published ones\n",
                report.frag_exact, report.frag_compared);
    std::printf(
        "random fit: 10-seed mean within 1.0 point of the published mean at every bucket: %s\n",
        report.random_ok ? "yes" : "NO");
    if (!report.mismatches.empty()) {
      std::printf("first mismatches:\n%s", report.mismatches.substr(0, 2000).c_str());
    }
  }
  if (!o.out_dir.empty()) {
    const fs::path dir(o.out_dir);
    bool written =
        WriteTextFile((dir / "placement-table.md").string(), table) &&
        WriteTextFile((dir / "placement-curves.csv").string(), sim::ReportCurvesCsv(report));
    for (const auto& [name, svg] : sim::ReportPlots(report)) {
      written = written && WriteTextFile((dir / name).string(), svg);
    }
    if (!written) return 1;
    std::printf("wrote %s/placement-table.md, placement-curves.csv and allocation-*.svg\n",
                o.out_dir.c_str());
  }
  if (o.check && report.real && !report.MatchesPublished()) {
    std::fprintf(stderr, "check failed: published curves not matched\n");
    return 1;
  }
  return 0;
}

}  // namespace gpufleet::cli
