// One scheduling pass at fleet scale (issue 5's target: 10,000 GPUs on 1,250 nodes and 100,000
// pending jobs in at most 100 ms), through the same Scheduler the controller calls:
//  - BM_SchedulePass/<policy>/empty: the fleet idle, so the pass fills it (thousands of starts);
//  - BM_SchedulePass/<policy>/busy: every GPU but 64 busy, the usual steady state, where a pass
//    must find the few jobs that fit;
//  - BM_SchedulePass/<policy>/busy-indexed (preemptive policies): the same, with the running jobs
//    read from a `RunningIndex` kept across passes, as the replay keeps one (built untimed).
// Counters: the pass's decisions (starts and preemptions), and a hash of them (kind, job, node
// and GPUs, in order) so that a change meant to keep every decision can be checked by comparing
// the hash before and after. Peak RSS: /usr/bin/time -f %M on the benchmark.
#include <benchmark/benchmark.h>

#include <bit>
#include <string>

#include "core/cluster.h"
#include "core/gpu_catalog.h"
#include "core/rng.h"
#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "sched/running_index.h"
#include "sched/schedule.h"

namespace {

using namespace gpufleet;

constexpr int kNodes = 1250, kGpusPerNode = 8, kPending = 100000;

std::vector<core::NodeSpec> Fleet() {
  const auto model = core::GpuCatalog::Builtin().Find("H100-80GB");
  std::vector<core::NodeSpec> nodes;
  for (int i = 0; i < kNodes; ++i) {
    core::NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.cpu_milli = 128000;
    n.memory_mib = 1 << 20;
    n.num_gpus = kGpusPerNode;
    n.model = model.value_or(0);
    nodes.push_back(n);
  }
  return nodes;
}

void BM_SchedulePass(benchmark::State& state, std::string policy_name, bool busy, bool indexed) {
  auto policy = sched::MakeQueuePolicy(policy_name);
  auto placement = sched::MakePlacementPolicy("gpupacking");
  sched::Scheduler scheduler(*policy, *placement, /*allow_spread=*/false);
  core::Rng rng(7);
  const int sizes[] = {1, 1, 1, 1, 2, 2, 4, 8};
  for (int i = 0; i < kPending; ++i) {
    sched::QueuedJob j;
    j.id = i;
    j.total_gpus = sizes[rng.Below(8)];
    j.submit_s = i;
    j.priority = static_cast<int>(rng.Below(3));
    j.queue = "team" + std::to_string(rng.Below(10));
    j.estimate_s = 600 + static_cast<double>(rng.Below(86400));  // time limits up to a day
    scheduler.Enqueue(j);
  }
  core::ClusterSnapshot cluster(Fleet());
  std::vector<sched::RunningJob> running;
  if (busy) {
    // Whole nodes busy with 8-GPU jobs, but for the last 8 nodes (64 GPUs).
    for (int n = 0; n < kNodes - 8; ++n) {
      sched::RunningJob r;
      r.job.id = 1000000 + n;
      r.job.total_gpus = 8;
      r.job.estimate_s = 600 + static_cast<double>(rng.Below(86400));
      r.placement = {{n, 0xffu}};
      cluster.Allocate(n, sched::SliceSpec(r.job, 8), 0xffu);
      running.push_back(r);
    }
  }
  sched::RunningIndex index(*policy);
  for (size_t i = 0; i < running.size(); ++i) {
    index.Append(std::span(running).first(i + 1), running[i].started_s);
  }
  index.AdvanceTo(running, 1000000);
  std::size_t started = 0;
  uint64_t hash = 0;
  for (auto _ : state) {
    const auto decisions =
        scheduler.Schedule(cluster, running, 1000000, rng, indexed ? &index : nullptr);
    started = decisions.size();
    benchmark::DoNotOptimize(decisions.data());
    state.PauseTiming();
    hash = 1469598103934665603ULL;  // FNV-1a over the decisions
    auto mix = [&hash](uint64_t v) {
      for (int b = 0; b < 8; ++b) hash = (hash ^ ((v >> (8 * b)) & 0xff)) * 1099511628211ULL;
    };
    for (const auto& d : decisions) {
      mix(static_cast<uint64_t>(d.kind));
      mix(static_cast<uint64_t>(d.job));
      for (const auto& a : d.placement) mix(static_cast<uint64_t>(a.node) << 32 | a.gpus);
    }
    state.ResumeTiming();
  }
  state.counters["started"] = static_cast<double>(started);
  // Low 32 bits only: counters are doubles, and the number must print exactly.
  state.counters["decision_hash"] = static_cast<double>(hash & 0xffffffffULL);
}

void Register() {
  for (const char* policy :
       {"priority-backfill", "priority", "fifo", "tiresias", "las-qssf", "gittins", "fairshare"}) {
    const bool preemptive = sched::MakeQueuePolicy(policy)->Preemptive();
    for (const char* fleet : {"empty", "busy", "busy-indexed"}) {
      const bool indexed = std::string(fleet) == "busy-indexed";
      if (indexed && !preemptive) continue;
      benchmark::RegisterBenchmark((std::string("BM_SchedulePass/") + policy + "/" + fleet).c_str(),
                                   BM_SchedulePass, std::string(policy),
                                   std::string(fleet) != "empty", indexed)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
