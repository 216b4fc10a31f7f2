#pragma once
// The placement comparison behind `gpufleet sim placement-report`: every chosen policy on every
// chosen openb pod list for seeds 42.., with the published orders where they exist, compared
// with the published per-seed curves. Also the helpers both placement commands share.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "sched/workload_profile.h"
#include "sim/openb_trace.h"
#include "sim/placement_experiment.h"

namespace gpufleet::sim {

// Runs task(0..count-1) on `threads` threads (0 = all cores). Tasks must be independent.
void RunInParallel(int count, int threads, const std::function<void(int)>& task);

// The published order file of `pods_path` for `seed` in `dir`: DIR/<pods stem>.seed<N>.txt.
std::string PublishedOrderPath(const std::string& dir, const std::string& pods_path, uint64_t seed);

struct SeedRun {
  PlacementRun run;
  PlacementCurves curves;
};
// One placement run with the named policy, prepared with `profile`; the policy's random draws are
// seeded with `seed`. Curves run from 0 to round(100 * tune) %.
core::Result<SeedRun> RunPlacementSeed(const OpenbWorkload& workload,
                                       const sched::WorkloadProfile& profile,
                                       const std::string& policy, const PlacementOrder& order,
                                       uint64_t seed, double tune);

// "event,pod,node,gpus" rows: where each arriving pod went ("-" when it failed).
std::string DecisionLogCsv(const OpenbWorkload& workload, const PlacementOrder& order,
                           const PlacementRun& run);

struct ReportInputs {
  bool real = false;  // false: a synthetic trace stands in for missing trace files
  std::vector<std::string> trace_names;
  std::vector<OpenbWorkload> workloads;
  std::vector<std::vector<PlacementOrder>> orders;  // [trace][seed - 42]
};
// Reads the node list, each pod list in `trace_names` (all four shipped ones when empty) and the
// published orders for seeds 42..41+seeds from `traces_dir` (an order file that is missing is
// generated with the same seed). When `traces_dir` has no node list, a synthetic trace is used.
core::Result<ReportInputs> LoadReportInputs(const std::string& traces_dir,
                                            std::vector<std::string> trace_names, int seeds);

struct ReportRow {  // one (trace, policy)
  std::string trace, policy;
  int64_t gpus = 0;
  PlacementCurves mean;            // over the seeds
  PlacementCurves published_mean;  // empty when nothing was published
  int seeds_matching = 0;          // allocation curves equal to the published ones
  int seeds_published = 0;
  bool random_mean_ok = true;  // random fit: mean within 1.0 point at every bucket
};

struct PlacementReport {
  bool real = false;
  int seeds = 0;
  size_t traces = 0, policies = 0;
  std::vector<ReportRow> rows;
  int exact_runs = 0, compared_runs = 0;  // deterministic policies' allocation curves
  int frag_exact = 0, frag_compared = 0;  // their fragmentation-ratio curves
  bool random_ok = true;
  std::string mismatches;  // one line per first difference
  double wall_seconds = 0, run_seconds = 0;
  int runs = 0;

  // Every deterministic curve matches, fragmentation included, and random fit's mean is close.
  bool MatchesPublished() const {
    return exact_runs == compared_runs && frag_exact == frag_compared && random_ok;
  }
};

// Runs `policies` (all must exist) on the inputs, on `threads` threads, and compares with the
// published curves in `traces_dir` when the inputs are real.
core::Result<PlacementReport> RunPlacementReport(const ReportInputs& inputs,
                                                 const std::vector<std::string>& policies,
                                                 const std::string& traces_dir, int threads);

// The comparison as a Markdown table: 50/100/130% ours vs. published, GPUs left idle, failures.
std::string ReportTable(const PlacementReport& report);
// Every row's mean allocation and fragmentation curves, one CSV line each.
std::string ReportCurvesCsv(const PlacementReport& report);
// (file name, SVG) plots of allocation vs. arrived demand per trace: full range and the tail.
std::vector<std::pair<std::string, std::string>> ReportPlots(const PlacementReport& report);

}  // namespace gpufleet::sim
