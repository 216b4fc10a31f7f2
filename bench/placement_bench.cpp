// Benchmarks of the openb placement experiment (issue: FGD run <= 0.15 s, full sweep <= 2 min).
// Each iteration is one whole run: build the cluster, place every pod of the order, record the
// metrics; loading the CSV files is outside the timed loop. Real traces are read from
// ../shared/traces when present; the synthetic scaling benchmarks need nothing.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "core/gpu_catalog.h"
#include "sched/policy_registry.h"
#include "sim/placement_experiment.h"
#include "sim/synthetic_openb.h"

namespace {

using namespace gpufleet;
namespace fs = std::filesystem;

const fs::path kTraces =
    fs::path(GPUFLEET_SOURCE_DIR) / ".." / "shared" / "traces" / "alibaba-openb-2023";

struct Loaded {
  sim::OpenbWorkload workload;
  sim::PlacementOrder order;
  sched::WorkloadProfile profile;
};

// The default trace with the published seed-42 order, or nullptr when the traces are absent.
const Loaded* DefaultTrace() {
  static std::unique_ptr<Loaded> loaded = []() -> std::unique_ptr<Loaded> {
    if (!fs::exists(kTraces / "openb_pod_list_default.csv")) return nullptr;
    auto w = sim::ReadOpenbWorkload((kTraces / "openb_node_list_gpu_node.csv").string(),
                                    (kTraces / "openb_pod_list_default.csv").string(),
                                    core::GpuCatalog::Builtin());
    if (!w) return nullptr;
    auto out = std::make_unique<Loaded>();
    out->workload = std::move(w).value();
    auto order = sim::ReadOrderFile(
        (kTraces / "orders" / "openb_pod_list_default.seed42.txt").string(), out->workload);
    if (!order) return nullptr;
    out->order = std::move(order).value();
    out->profile = sim::ProfileOf(out->workload);
    return out;
  }();
  return loaded.get();
}

void RunOnce(benchmark::State& state, const Loaded& data, const std::string& policy_name) {
  if (!sched::MakePlacementPolicy(policy_name)) {
    state.SkipWithError(("unknown placement policy '" + policy_name + "'").c_str());
    return;
  }
  int64_t scores = 0;
  int64_t reranked = 0;
  for (auto _ : state) {
    // A fresh policy every iteration, as every run of the process has: a policy may keep caches
    // (FGD memoizes fragmentation), and one warm from the last iteration would flatter the time.
    state.PauseTiming();
    auto policy = sched::MakePlacementPolicy(policy_name);
    sim::PreparePlacementPolicy(*policy, data.profile, data.workload);
    state.ResumeTiming();
    core::Rng rng(42);
    auto run = sim::RunPlacement(data.workload, data.order, *policy, data.profile, rng);
    auto curves = sim::SummarizeCurves(run, 130);
    benchmark::DoNotOptimize(curves.allocation.data());
    scores = run.scores_computed;
    reranked = run.nodes_reranked;
  }
  state.counters["pods"] = static_cast<double>(data.order.pods.size());
  state.counters["nodes"] = static_cast<double>(data.workload.nodes.size());
  state.counters["scores_computed"] = static_cast<double>(scores);
  state.counters["nodes_reranked"] = static_cast<double>(reranked);
}

void BM_OpenbDefault(benchmark::State& state, std::string policy) {
  const Loaded* data = DefaultTrace();
  if (!data) {
    state.SkipWithError("../shared/traces not found: real-trace benchmark skipped");
    return;
  }
  RunOnce(state, *data, policy);
}

// What `gpufleet sim placement` does before its run: read the node and pod CSV files, profile the
// workload, read the published order (the part of the whole-process time that RunOnce leaves out).
void BM_OpenbLoad(benchmark::State& state) {
  if (!fs::exists(kTraces / "openb_pod_list_default.csv")) {
    state.SkipWithError("../shared/traces not found: real-trace benchmark skipped");
    return;
  }
  for (auto _ : state) {
    auto w = sim::ReadOpenbWorkload((kTraces / "openb_node_list_gpu_node.csv").string(),
                                    (kTraces / "openb_pod_list_default.csv").string(),
                                    core::GpuCatalog::Builtin());
    if (!w) {
      state.SkipWithError(w.error().c_str());
      return;
    }
    const sched::WorkloadProfile profile = sim::ProfileOf(w.value());
    auto order = sim::ReadOrderFile(
        (kTraces / "orders" / "openb_pod_list_default.seed42.txt").string(), w.value());
    if (!order) {
      state.SkipWithError(order.error().c_str());
      return;
    }
    benchmark::DoNotOptimize(profile.total_count());
    benchmark::DoNotOptimize(order.value().pods.data());
  }
}

// The default trace replicated `factor` times (nodes and pods), with a seeded order.
void BM_OpenbReplicated(benchmark::State& state, std::string policy) {
  const Loaded* base = DefaultTrace();
  if (!base) {
    state.SkipWithError("../shared/traces not found: real-trace benchmark skipped");
    return;
  }
  const int factor = static_cast<int>(state.range(0));
  static std::map<int, std::unique_ptr<Loaded>> cache;
  auto& slot = cache[factor];
  if (!slot) {
    slot = std::make_unique<Loaded>();
    slot->workload = sim::ReplicateWorkload(base->workload, factor);
    slot->order = sim::GenerateOrder(slot->workload, 42, 1.3);
    slot->profile = sim::ProfileOf(slot->workload);
  }
  RunOnce(state, *slot, policy);
}

// A synthetic openb-like cluster of 1,200 x factor nodes; needs no trace files.
void BM_Synthetic(benchmark::State& state, std::string policy) {
  const int factor = static_cast<int>(state.range(0));
  static std::map<int, std::unique_ptr<Loaded>> cache;
  auto& slot = cache[factor];
  if (!slot) {
    slot = std::make_unique<Loaded>();
    slot->workload =
        sim::GenerateSyntheticOpenb(core::GpuCatalog::Builtin(), 1200 * factor, 1.0, 7);
    slot->order = sim::GenerateOrder(slot->workload, 42, 1.3);
    slot->profile = sim::ProfileOf(slot->workload);
  }
  RunOnce(state, *slot, policy);
}

}  // namespace

// Registered here rather than with BENCHMARK_CAPTURE so that BM_OpenbDefault follows the policy
// registry: a policy added or removed there needs no edit here. Names keep BENCHMARK_CAPTURE's
// identifier form (`fgd_balance` for fgd-balance).
int main(int argc, char** argv) {
  using gpufleet::sched::PlacementPolicies;
  for (const auto& info : PlacementPolicies()) {
    const std::string name(info.name);
    std::string id = name;
    std::replace(id.begin(), id.end(), '-', '_');
    benchmark::RegisterBenchmark(("BM_OpenbDefault/" + id).c_str(), BM_OpenbDefault, name)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_OpenbLoad", BM_OpenbLoad)->Unit(benchmark::kMillisecond);
  for (const std::string name : {"fgd", "bestfit"}) {
    benchmark::RegisterBenchmark(("BM_OpenbReplicated/" + name).c_str(), BM_OpenbReplicated, name)
        ->Arg(1)
        ->Arg(2)
        ->Arg(4)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_Synthetic/fgd", BM_Synthetic, std::string("fgd"))
      ->Arg(1)
      ->Arg(2)
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
