#include "cli/sim_scale_commands.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/file_output.h"
#include "core/gpu_catalog.h"
#include "scale/autoscale_config.h"
#include "sched/policy_registry.h"
#include "sim/compare_html.h"
#include "sim/cost_sweep.h"

namespace gpufleet::cli {
namespace {

std::optional<scale::AutoscaleConfig> LoadAutoscale(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "error: --autoscale: cannot read '%s'\n", path.c_str());
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto config = scale::ParseAutoscaleToml(text.str(), path, core::GpuCatalog::Builtin(),
                                          /*require_provider=*/false);
  if (!config) {
    std::fprintf(stderr, "error: --autoscale: %s\n", config.error().c_str());
    return std::nullopt;
  }
  return std::move(config).value();
}

bool CheckAutoscaleFlags(const SimRunOptions& o) {
  if (!(o.spot_interruptions_per_node_hour >= 0 && o.spot_interruptions_per_node_hour <= 100)) {
    std::fprintf(stderr, "error: --spot-interruptions-per-node-hour must be in 0..100\n");
    return false;
  }
  if (o.checkpoint_interval_s < 0) {
    std::fprintf(stderr, "error: --checkpoint-interval must be 0 (none) or more seconds\n");
    return false;
  }
  if (o.replicate != 1) {
    std::fprintf(stderr, "error: --replicate is not supported with --autoscale\n");
    return false;
  }
  return true;
}

sim::TimeSimConfig ConfigFor(const SimRunOptions& o, const scale::AutoscaleConfig* autoscale) {
  sim::TimeSimConfig config;
  config.spread_slowdown = o.spread_slowdown;
  config.seed = o.seed;
  config.autoscale.config = autoscale;
  // On a fleet that can grow, a job that fits one node waits for one (a boot) instead of running
  // spread and slower on fragments, as a Kubernetes pod does; the planner estimates the same way.
  if (autoscale != nullptr) config.allow_spread = false;
  config.autoscale.jobs_restartable = !o.not_restartable;
  config.autoscale.spot_interruptions_per_node_hour = o.spot_interruptions_per_node_hour;
  config.autoscale.checkpoint_interval_s = o.checkpoint_interval_s;
  return config;
}

struct Replay {
  sim::TimeSimResult result;
  double seconds = 0;
};

std::optional<Replay> RunReplay(const SimInputs& in, const sim::ClusterSpec& cluster,
                                const sched::QueuePolicy& queue,
                                const sched::PlacementPolicy& placement,
                                const sim::TimeSimConfig& config, bool log) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ran = sim::RunTimeSim(in.jobs, cluster, queue, placement, config, log);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ran) {
    std::fprintf(stderr, "error: %s\n", ran.error().c_str());
    return std::nullopt;
  }
  return Replay{std::move(ran).value(), seconds};
}

void PrintFleet(const SimRunOptions& o, const Replay& r) {
  const sim::JctSummary s = sim::Summarize(r.result);
  const sim::FleetStats& f = r.result.fleet;
  const double bought_h = f.gpu_s_bought / 3600, used_h = r.result.busy_gpu_s / 3600;
  if (o.json) {
    nlohmann::ordered_json j;
    j["policy"] = o.policy;
    j["placement"] = o.placement;
    j["autoscale"] = o.autoscale;
    j["jobs"] = s.jobs;
    j["finished"] = s.finished;
    j["unfinished"] = s.unfinished;
    j["cost_usd"] = f.cost_usd;
    j["spot_cost_usd"] = f.spot_cost_usd;
    j["gpu_hours_bought"] = bought_h;
    j["gpu_hours_used"] = used_h;
    j["used_over_bought"] = bought_h > 0 ? used_h / bought_h : 0.0;
    j["avg_jct_s"] = s.avg_jct_s;
    j["p50_jct_s"] = s.p50_jct_s;
    j["p99_jct_s"] = s.p99_jct_s;
    j["avg_queue_s"] = s.avg_queue_s;
    j["makespan_s"] = r.result.makespan_s;
    j["nodes_created"] = f.nodes_created;
    j["spot_nodes_created"] = f.spot_nodes_created;
    j["nodes_retired"] = f.nodes_retired;
    j["peak_nodes"] = f.peak_nodes;
    j["peak_spend_per_hour"] = f.peak_spend_per_hour;
    j["spot_interruptions_per_node_hour"] = o.spot_interruptions_per_node_hour;
    j["checkpoint_interval_s"] = o.checkpoint_interval_s;
    j["interruptions"] = f.interruptions;
    j["jobs_interrupted"] = f.jobs_interrupted;
    j["gpu_hours_lost"] = f.gpu_s_lost / 3600;
    j["consolidations"] = f.consolidations;
    j["jobs_moved"] = f.jobs_moved;
    j["gpu_hours_lost_moves"] = f.gpu_s_lost_moves / 3600;
    j["preemptions"] = r.result.preemptions;
    j["planner_calls"] = f.planner_calls;
    j["scheduler_calls"] = r.result.scheduler_calls;
    j["replay_s"] = r.seconds;
    std::puts(j.dump(2).c_str());
    return;
  }
  std::printf(
      "policy %s (placement %s) on the fleet of %s: %lld jobs, %lld finished, %lld "
      "unfinished\n",
      o.policy.c_str(), o.placement.c_str(), o.autoscale.c_str(), static_cast<long long>(s.jobs),
      static_cast<long long>(s.finished), static_cast<long long>(s.unfinished));
  std::printf("cost $%.0f (spot $%.0f); GPU-hours bought %.0f, used %.0f (used/bought %.3f)\n",
              f.cost_usd, f.spot_cost_usd, bought_h, used_h, bought_h > 0 ? used_h / bought_h : 0);
  std::printf("JCT avg %.0f s, p50 %.0f s, p99 %.0f s; queueing avg %.0f s\n", s.avg_jct_s,
              s.p50_jct_s, s.p99_jct_s, s.avg_queue_s);
  std::printf("nodes created %lld (spot %lld), retired %lld, peak %lld nodes and $%.2f/h\n",
              static_cast<long long>(f.nodes_created), static_cast<long long>(f.spot_nodes_created),
              static_cast<long long>(f.nodes_retired), static_cast<long long>(f.peak_nodes),
              f.peak_spend_per_hour);
  std::printf(
      "spot interruptions %lld at %.2g per node-hour (%lld job runs stopped), GPU-hours "
      "lost %.1f (checkpoint every %lld s)\n",
      static_cast<long long>(f.interruptions), o.spot_interruptions_per_node_hour,
      static_cast<long long>(f.jobs_interrupted), f.gpu_s_lost / 3600,
      static_cast<long long>(o.checkpoint_interval_s));
  std::printf("consolidations %lld (%lld job runs moved), GPU-hours lost to moves %.1f\n",
              static_cast<long long>(f.consolidations), static_cast<long long>(f.jobs_moved),
              f.gpu_s_lost_moves / 3600);
  std::printf("(simulated in %.2f s, %lld planner calls, %lld scheduler calls)\n", r.seconds,
              static_cast<long long>(f.planner_calls),
              static_cast<long long>(r.result.scheduler_calls));
}

}  // namespace

int RunSimRunAutoscaled(const SimRunOptions& o, const sched::QueuePolicy& queue_policy,
                        sched::PlacementPolicy& placement) {
  if (o.cluster_given) {
    std::fprintf(stderr,
                 "error: --cluster and --autoscale cannot be used together: an autoscaled replay "
                 "runs on the node groups of the --autoscale file\n");
    return 2;
  }
  if (!CheckAutoscaleFlags(o)) return 2;
  auto autoscale = LoadAutoscale(o.autoscale);
  if (!autoscale) return 2;
  auto inputs = LoadSimInputs(o);
  if (!inputs) return 2;
  placement.Prepare(sched::WorkloadProfile());
  const sim::TimeSimConfig config = ConfigFor(o, &*autoscale);
  auto replay = RunReplay(*inputs, {}, queue_policy, placement, config, !o.decisions_path.empty());
  if (!replay) return 2;
  if (!o.decisions_path.empty() &&
      !WriteTextFile(o.decisions_path,
                     "time_s,event,job,placement\n" + replay->result.decision_log)) {
    return 1;
  }
  PrintFleet(o, *replay);
  return 0;
}

int RunSimCostSweep(const SimCompareOptions& o) {
  if (o.policies.size() > 1) {
    std::fprintf(stderr,
                 "error: --policies: the cost sweep (--static, --autoscale) runs every "
                 "point under one queue policy; give at most one\n");
    return 2;
  }
  const std::string policy = o.policies.empty() ? "priority" : o.policies.front();
  auto queue_policy = sched::MakeQueuePolicy(policy);
  if (!queue_policy) {
    std::fprintf(stderr, "error: --policies: unknown queue policy '%s'; choose one of %s\n",
                 policy.c_str(), sched::QueuePolicyNames().c_str());
    return 2;
  }
  auto placement = sched::MakePlacementPolicy(o.run.placement);
  if (!placement) {
    std::fprintf(stderr, "error: --placement: unknown placement policy '%s'\n",
                 o.run.placement.c_str());
    return 2;
  }
  placement->Prepare(sched::WorkloadProfile());
  if (!CheckAutoscaleFlags(o.run)) return 2;
  for (int n : o.static_sizes) {
    if (n < 1 || n > 100000) {
      std::fprintf(stderr, "error: --static: a size must be in 1..100000 (got %d)\n", n);
      return 2;
    }
  }
  std::vector<scale::AutoscaleConfig> configs;
  for (const std::string& file : o.autoscale_files) {
    auto c = LoadAutoscale(file);
    if (!c) return 2;
    configs.push_back(std::move(*c));
  }
  auto inputs = LoadSimInputs(o.run);
  if (!inputs) return 2;
  // The static clusters' node: the first autoscale file's first group, or philly-512's node.
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  core::NodeSpec node;
  double price = 0;
  if (!configs.empty()) {
    const scale::NodeGroup& g = configs.front().groups.front();
    node = {g.name, g.cpu_milli, g.memory_mib, g.gpus, g.model};
    price = g.price_per_hour;
  } else {
    node = sim::NamedCluster("philly-512", catalog).value().nodes.front();
    price = catalog.model(node.model).hourly_price_usd * node.num_gpus;
  }
  std::vector<sim::CostPoint> points;
  for (int n : o.static_sizes) {
    sim::ClusterSpec cluster;
    cluster.name = "static-" + std::to_string(n);
    for (int i = 0; i < n; ++i) {
      cluster.nodes.push_back(node);
      cluster.nodes.back().name = "s" + std::to_string(i);
    }
    auto r =
        RunReplay(*inputs, cluster, *queue_policy, *placement, ConfigFor(o.run, nullptr), false);
    if (!r) return 2;
    points.push_back(
        sim::StaticCostPoint(cluster.name, n, node.num_gpus, price, r->result, r->seconds));
    std::fprintf(stderr, "%s: %.2f s\n", cluster.name.c_str(), r->seconds);
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string label = std::filesystem::path(o.autoscale_files[i]).stem().string();
    auto r =
        RunReplay(*inputs, {}, *queue_policy, *placement, ConfigFor(o.run, &configs[i]), false);
    if (!r) return 2;
    points.push_back(sim::FleetCostPoint(label, r->result, r->seconds));
    std::fprintf(stderr, "%s: %.2f s\n", label.c_str(), r->seconds);
  }
  const std::string table = sim::CostTable(points);
  std::printf("%zu jobs, policy %s, placement %s; static node %d x %s at $%.2f/h\n%s",
              inputs->jobs.size(), policy.c_str(), o.run.placement.c_str(), node.num_gpus,
              catalog.model(node.model).name.c_str(), price, table.c_str());
  if (!o.out_dir.empty()) {
    const std::filesystem::path dir(o.out_dir);
    const std::string title = "Cost against average JCT (" + policy + ", " +
                              std::to_string(inputs->jobs.size()) + " jobs)";
    char node_text[160];
    std::snprintf(node_text, sizeof node_text, "%d x %s at $%.2f/h", node.num_gpus,
                  catalog.model(node.model).name.c_str(), price);
    const sim::CompareContext context{.trace = o.run.trace,
                                      .cluster = node_text,
                                      .placement = o.run.placement,
                                      .policy = policy,
                                      .jobs = static_cast<int64_t>(inputs->jobs.size())};
    if (!WriteTextFile((dir / "cost-table.md").string(), table) ||
        !WriteTextFile((dir / "cost.csv").string(), sim::CostCsv(points)) ||
        !WriteTextFile((dir / "cost-jct.svg").string(), sim::CostPlot(points, title)) ||
        !WriteTextFile((dir / "index.html").string(), sim::CostSweepHtml(context, points))) {
      return 1;
    }
    std::printf("wrote %s/cost-table.md, cost.csv, cost-jct.svg, index.html\n", o.out_dir.c_str());
  }
  return 0;
}

}  // namespace gpufleet::cli
