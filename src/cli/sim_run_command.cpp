#include "cli/sim_run_command.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/file_output.h"
#include "cli/sim_scale_commands.h"
#include "core/gpu_catalog.h"
#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "sim/cluster_spec.h"
#include "sim/compare_html.h"
#include "sim/job_trace.h"
#include "sim/synthetic_jobs.h"
#include "sim/time_sim.h"
#include "sim/time_sim_report.h"

namespace gpufleet::cli {

// Reads the trace and the cluster the options name; prints the error and returns nothing.
std::optional<SimInputs> LoadSimInputs(const SimRunOptions& o) {
  if (!(o.spread_slowdown >= 1.0)) {
    std::fprintf(stderr, "error: --spread-slowdown must be at least 1\n");
    return std::nullopt;
  }
  auto cluster = sim::ResolveCluster(o.cluster, core::GpuCatalog::Builtin());
  if (!cluster) {
    std::fprintf(stderr, "error: %s\n", cluster.error().c_str());
    return std::nullopt;
  }
  sim::TraceReadOptions read;
  read.limit = o.limit;
  read.window_start_s = static_cast<int64_t>(std::llround(o.window_start_h * 3600));
  read.window_end_s = static_cast<int64_t>(std::llround(o.window_end_h * 3600));
  auto trace = sim::ReadJobTrace(o.trace, read, core::GpuCatalog::Builtin());
  if (!trace) {
    std::fprintf(stderr, "error: %s\n", trace.error().c_str());
    return std::nullopt;
  }
  if (!trace.value().note.empty()) {
    std::fprintf(stderr, "note: %s\n", trace.value().note.c_str());
  }
  SimInputs in;
  in.cluster = std::move(cluster).value();
  in.jobs = std::move(trace.value().jobs);
  if (o.replicate < 1 || o.replicate > 64) {
    std::fprintf(stderr, "error: --replicate must be in 1..64\n");
    return std::nullopt;
  }
  sim::ReplicateTrace(o.replicate, &in.jobs, &in.cluster);
  if (!(o.elastic_fraction >= 0 && o.elastic_fraction <= 1)) {
    std::fprintf(stderr, "error: --elastic-fraction must be in 0..1\n");
    return std::nullopt;
  }
  if (!(o.elastic_min_factor > 0 && o.elastic_min_factor <= 1) ||
      !(o.elastic_max_factor >= 1 && o.elastic_max_factor <= 64)) {
    std::fprintf(stderr,
                 "error: --elastic-min-factor must be in (0, 1] and --elastic-max-factor in "
                 "[1, 64]\n");
    return std::nullopt;
  }
  if (!(o.elastic_efficiency > 0 && o.elastic_efficiency <= 1) ||
      !(o.elastic_grow_after_s >= 0)) {
    std::fprintf(stderr,
                 "error: --elastic-efficiency must be in (0, 1] and --elastic-grow-after at "
                 "least 0\n");
    return std::nullopt;
  }
  if (o.elastic_fraction > 0) {
    int cluster_gpus = 0;
    for (const auto& n : in.cluster.nodes) cluster_gpus += n.num_gpus;
    in.elastic_jobs = sim::MakeElastic(&in.jobs, o.elastic_fraction, o.elastic_min_factor,
                                       o.elastic_max_factor, cluster_gpus, o.seed);
  }
  return in;
}

int RunSimRun(const SimRunOptions& o) {
  auto queue_policy = sched::MakeQueuePolicy(o.policy);
  if (!queue_policy) {
    std::fprintf(stderr, "error: unknown queue policy '%s'; choose one of %s\n", o.policy.c_str(),
                 sched::QueuePolicyNames().c_str());
    return 2;
  }
  auto placement = sched::MakePlacementPolicy(o.placement);
  if (!placement) {
    std::fprintf(stderr, "error: unknown placement policy '%s'; choose one of %s\n",
                 o.placement.c_str(), sched::PlacementPolicyNames().c_str());
    return 2;
  }
  if (!o.autoscale.empty()) return RunSimRunAutoscaled(o, *queue_policy, *placement);
  auto inputs = LoadSimInputs(o);
  if (!inputs) return 2;
  const std::vector<sim::TraceJob>& jobs = inputs->jobs;
  // A GPU-only cluster: pods carry no CPU or memory, so placement sees GPUs alone.
  placement->Prepare(sched::WorkloadProfile());
  sim::TimeSimConfig config;
  config.spread_slowdown = o.spread_slowdown;
  config.seed = o.seed;
  config.elastic_efficiency = o.elastic_efficiency;
  config.elastic_grow_after_s = o.elastic_grow_after_s;
  const auto t0 = std::chrono::steady_clock::now();
  auto ran = sim::RunTimeSim(jobs, inputs->cluster, *queue_policy, *placement, config,
                             !o.decisions_path.empty());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ran) {
    std::fprintf(stderr, "error: %s\n", ran.error().c_str());
    return 2;
  }
  const sim::TimeSimResult& result = ran.value();
  const sim::JctSummary s = sim::Summarize(result);
  if (!o.decisions_path.empty() &&
      !WriteTextFile(o.decisions_path, "time_s,event,job,placement\n" + result.decision_log)) {
    return 1;
  }
  const sched::Estimates kind = queue_policy->estimates();
  const char* estimates = kind == sched::Estimates::kOracle      ? "true run times (oracle)"
                          : kind == sched::Estimates::kPredicted ? "predicted from finished jobs"
                                                                 : "none";
  if (o.json) {
    nlohmann::ordered_json j;
    j["policy"] = o.policy;
    j["placement"] = o.placement;
    j["cluster"] = o.cluster;
    j["jobs"] = s.jobs;
    j["finished"] = s.finished;
    j["unfinished"] = s.unfinished;
    j["avg_jct_s"] = s.avg_jct_s;
    j["p50_jct_s"] = s.p50_jct_s;
    j["p95_jct_s"] = s.p95_jct_s;
    j["p99_jct_s"] = s.p99_jct_s;
    j["avg_queue_s"] = s.avg_queue_s;
    j["makespan_s"] = result.makespan_s;
    j["utilization"] = s.utilization;
    j["preemptions"] = result.preemptions;
    j["elastic_jobs"] = inputs->elastic_jobs;
    j["grows"] = result.grows;
    j["shrinks"] = result.shrinks;
    j["jain_index"] = s.jain_index;
    nlohmann::ordered_json vcs = nlohmann::ordered_json::object();
    for (const auto& [vc, slowdown] : s.vc_slowdown) vcs[vc] = slowdown;
    j["vc_avg_slowdown"] = std::move(vcs);
    j["estimates"] = estimates;
    if (s.predicted_jobs > 0) {
      j["prediction_median_rel_error"] = s.prediction_median_rel_error;
      j["prediction_mae_s"] = s.prediction_mae_s;
    }
    std::puts(j.dump(2).c_str());
  } else {
    std::printf("policy %s (placement %s) on %s: %lld jobs, %lld finished, %lld unfinished\n",
                o.policy.c_str(), o.placement.c_str(), o.cluster.c_str(),
                static_cast<long long>(s.jobs), static_cast<long long>(s.finished),
                static_cast<long long>(s.unfinished));
    std::printf("JCT avg %.0f s, p50 %.0f s, p95 %.0f s, p99 %.0f s; queueing avg %.0f s\n",
                s.avg_jct_s, s.p50_jct_s, s.p95_jct_s, s.p99_jct_s, s.avg_queue_s);
    std::printf("makespan %lld s, GPU utilization %.1f%%, preemptions %lld; estimates: %s\n",
                static_cast<long long>(result.makespan_s), 100 * s.utilization,
                static_cast<long long>(result.preemptions), estimates);
    if (inputs->elastic_jobs > 0) {
      std::printf("elastic jobs %lld: %lld grows, %lld shrinks\n",
                  static_cast<long long>(inputs->elastic_jobs),
                  static_cast<long long>(result.grows), static_cast<long long>(result.shrinks));
    }
    if (s.predicted_jobs > 0) {
      std::printf("run-time predictor: median relative error %.2f, mean absolute error %.0f s\n",
                  s.prediction_median_rel_error, s.prediction_mae_s);
    }
    std::printf("(simulated in %.2f s, %lld scheduler calls)\n", seconds,
                static_cast<long long>(result.scheduler_calls));
  }
  return 0;
}

int RunSimCompare(const SimCompareOptions& o) {
  if (!o.static_sizes.empty() || !o.autoscale_files.empty()) return RunSimCostSweep(o);
  auto inputs = LoadSimInputs(o.run);
  if (!inputs) return 2;
  std::vector<std::string> policies = o.policies;
  if (policies.empty()) {
    for (const auto& info : sched::QueuePolicies()) policies.emplace_back(info.name);
  }
  sim::TimeSimConfig config;
  config.spread_slowdown = o.run.spread_slowdown;
  config.elastic_efficiency = o.run.elastic_efficiency;
  config.elastic_grow_after_s = o.run.elastic_grow_after_s;
  config.seed = o.run.seed;
  auto runs = sim::ComparePolicies(inputs->jobs, inputs->cluster, policies, o.run.placement, config,
                                   o.threads);
  if (!runs) {
    std::fprintf(stderr, "error: %s\n", runs.error().c_str());
    return 2;
  }
  const std::string table = sim::CompareTable(runs.value());
  std::printf("%zu jobs on %s, placement %s\n%s", inputs->jobs.size(), o.run.cluster.c_str(),
              o.run.placement.c_str(), table.c_str());
  if (!o.out_dir.empty()) {
    const std::filesystem::path dir(o.out_dir);
    const sim::CompareContext context{.trace = o.run.trace,
                                      .cluster = o.run.cluster,
                                      .placement = o.run.placement,
                                      .policy = "",
                                      .jobs = static_cast<int64_t>(inputs->jobs.size())};
    bool ok = WriteTextFile((dir / "compare-table.md").string(), table) &&
              WriteTextFile((dir / "compare.csv").string(), sim::CompareCsv(runs.value()));
    for (const auto& [name, svg] : sim::ComparePlots(runs.value())) {
      ok = ok && WriteTextFile((dir / name).string(), svg);
    }
    ok =
        ok && WriteTextFile((dir / "index.html").string(), sim::CompareHtml(context, runs.value()));
    if (!ok) return 1;
    std::printf(
        "wrote %s/compare-table.md, compare.csv, jct-cdf.svg, utilization.svg, index.html\n",
        o.out_dir.c_str());
  }
  return 0;
}

int RunSimGenerate(const SimGenerateOptions& o) {
  sim::SyntheticJobsSpec spec;
  spec.durations = o.durations;
  spec.sizes = o.sizes;
  spec.jobs = o.jobs;
  spec.cluster_gpus = o.cluster_gpus;
  spec.load = o.load;
  spec.queues = o.queues;
  spec.seed = o.seed;
  auto jobs = sim::GenerateSyntheticJobs(spec);
  if (!jobs) {
    std::fprintf(stderr, "error: %s\n", jobs.error().c_str());
    return 2;
  }
  const std::string csv = sim::SyntheticJobsCsv(jobs.value());
  if (o.out.empty()) {
    std::fwrite(csv.data(), 1, csv.size(), stdout);
    return 0;
  }
  return WriteTextFile(o.out, csv) ? 0 : 1;
}

}  // namespace gpufleet::cli
