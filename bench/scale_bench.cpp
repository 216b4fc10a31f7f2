// The autoscaler's planning pass at fleet scale (issue 14's target: 10,000 waiting jobs and
// 1,000 nodes in 20 groups in at most 50 ms), through the same `scale::PlanScaling` the
// controller and the simulator call:
//  - BM_PlanPass/<jobs>/<nodes>: 20 groups (10 GPU models x 4- and 8-GPU nodes); the nodes ready
//    and 7 in 8 of their GPUs busy; the waiting jobs mixed (1-8 GPUs, a tenth 2-4 node gangs, half
//    tied to one model, half restartable).
//    The third argument is the probe size (16, the default); 0 estimates every offering in
//    full: the baseline the probe's saving is read against.
//  - BM_SchedulePassSameState: one `Scheduler::Schedule` pass (priority, which starts any job that
//    fits) over the same waiting jobs and fleet, for scale: what the controller already pays.
//  - BM_PlanPassConsolidate/<jobs>/<nodes>/16: the same, with `policy.consolidation` on and the
//    busy GPUs held by running jobs (4 + 2 + 1 GPUs on an 8-GPU node, 2 + 1 on a 4-GPU one; 3 in
//    4 restartable), so that every pass also tries to empty nodes.
// Counters: nodes ordered, estimates made, nodes to empty (consolidation).
#include <benchmark/benchmark.h>

#include <bit>
#include <string>

#include "core/cluster.h"
#include "core/gpu_catalog.h"
#include "core/rng.h"
#include "scale/planner.h"
#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "sched/queued_job.h"
#include "sched/schedule.h"

namespace {

using namespace gpufleet;

struct World {
  std::vector<scale::NodeGroup> groups;
  core::ClusterSnapshot cluster;
  std::vector<scale::ManagedNode> nodes;
  std::vector<scale::WaitingJob> waiting;
  std::vector<scale::RunningJobView> running;
};

// `with_running`: the busy GPUs are held by running jobs (for consolidation), not anonymously.
World MakeWorld(int jobs, int nodes, bool with_running = false) {
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  const char* models[] = {"T4",   "V100M16",   "V100M32",   "A10",       "L4",
                          "L40S", "A100-40GB", "A100-80GB", "H100-80GB", "H200"};
  World w;
  for (int m = 0; m < 10; ++m) {
    for (int gpus : {4, 8}) {
      scale::NodeGroup g;
      g.name = "g" + std::to_string(m) + "-" + std::to_string(gpus);
      g.model = *catalog.Find(models[m]);
      g.gpus = gpus;
      g.cpu_milli = 12000 * gpus;
      g.memory_mib = 96 * 1024 * gpus;
      g.price_per_hour = catalog.model(g.model).hourly_price_usd * gpus;
      g.spot_price_per_hour = g.price_per_hour * 0.35;
      g.max = nodes / 20 + 100;
      g.boot_s = 180;
      w.groups.push_back(g);
    }
  }
  std::vector<core::NodeSpec> specs;
  for (int n = 0; n < nodes; ++n) {
    const int gi = n % 20;
    const auto& g = w.groups[gi];
    specs.push_back({"n" + std::to_string(n), g.cpu_milli, g.memory_mib, g.gpus, g.model});
    scale::ManagedNode m;
    m.name = specs.back().name;
    m.group = gi;
    m.ready = true;
    m.cluster_index = n;
    m.idle_since_s = -1;
    w.nodes.push_back(m);
  }
  w.cluster = core::ClusterSnapshot(specs);
  core::Rng running_rng(13);
  for (int n = 0; n < nodes && with_running; ++n) {  // 7 in 8 GPUs busy, as jobs
    if (n % 8 == 0) continue;
    int first = 0;
    for (int gpus = specs[n].num_gpus / 2; gpus >= 1; gpus /= 2) {
      scale::RunningJobView v;
      v.run.job.id = 1000000 + static_cast<int64_t>(w.running.size());
      v.run.job.total_gpus = gpus;
      v.run.job.cpu_milli_per_gpu = 4000;
      v.run.job.memory_mib_per_gpu = 32 * 1024;
      const core::GpuMask mask = ((core::GpuMask{1} << gpus) - 1) << first;
      first += gpus;
      v.run.placement = {{n, mask}};
      v.run.started_s = 0;
      v.restartable = running_rng.Below(4) != 0;
      w.cluster.Allocate(n, sched::SliceSpec(v.run.job, gpus), mask);
      w.running.push_back(v);
    }
  }
  for (int n = 0; n < nodes && !with_running; ++n) {  // 7 in 8 GPUs busy
    core::JobSpec busy;
    busy.num_gpu = specs[n].num_gpus - (n % 8 == 0 ? specs[n].num_gpus : 1);
    busy.gpu_milli = core::kGpuMilli;
    if (busy.num_gpu == 0) continue;
    w.cluster.Allocate(n, busy, (core::GpuMask{1} << busy.num_gpu) - 1);
  }
  core::Rng rng(11);
  const int sizes[] = {1, 1, 1, 2, 2, 4, 8, 8};
  for (int i = 0; i < jobs; ++i) {
    scale::WaitingJob j;
    j.job.id = i + 1;
    j.job.total_gpus = sizes[rng.Below(8)];
    if (rng.Below(10) == 0) {
      j.job.nodes = 2 + static_cast<int>(rng.Below(3));
      j.job.total_gpus = 8 * j.job.nodes;
    }
    j.job.cpu_milli_per_gpu = 4000;
    j.job.memory_mib_per_gpu = 32 * 1024;
    if (rng.Below(2) == 0) {
      j.job.gpu_models = core::ModelSet::Of(w.groups[rng.Below(20)].model);
    }
    j.job.priority = static_cast<int>(rng.Below(3));
    j.job.waiting_since_s = static_cast<int64_t>(rng.Below(3600));
    j.restartable = rng.Below(2) == 0;
    w.waiting.push_back(j);
  }
  return w;
}

void RunPlanPass(benchmark::State& state, bool consolidation) {
  const World w =
      MakeWorld(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), consolidation);
  auto placement = sched::MakePlacementPolicy("bestfit");
  scale::PlanInput in;
  in.policy.consolidation = consolidation;
  in.running = w.running;
  in.groups = &w.groups;
  in.cluster = &w.cluster;
  in.nodes = w.nodes;
  in.waiting = w.waiting;
  in.now = 7200;
  in.probe_nodes = static_cast<int>(state.range(2));
  int64_t ordered = 0, estimates = 0, emptied = 0;
  for (auto _ : state) {
    core::Rng rng(3);
    const scale::Plan plan = scale::PlanScaling(in, *placement, rng);
    ordered = 0;
    for (const auto& o : plan.create) ordered += o.count;
    estimates = plan.estimates;
    emptied = static_cast<int64_t>(plan.consolidate.size());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["nodes_ordered"] = static_cast<double>(ordered);
  state.counters["estimates"] = static_cast<double>(estimates);
  if (consolidation) state.counters["nodes_emptied"] = static_cast<double>(emptied);
}

void BM_PlanPass(benchmark::State& state) { RunPlanPass(state, false); }
void BM_PlanPassConsolidate(benchmark::State& state) { RunPlanPass(state, true); }
// Third argument: probe_nodes (16, the default; 0: every estimate in full, the baseline).
BENCHMARK(BM_PlanPass)
    ->Args({1000, 100, 16})
    ->Args({10000, 1000, 16})
    ->Args({10000, 1000, 0})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlanPassConsolidate)
    ->Args({0, 1000, 16})
    ->Args({1000, 1000, 16})
    ->Args({10000, 1000, 16})
    ->Unit(benchmark::kMillisecond);

void BM_SchedulePassSameState(benchmark::State& state) {
  const World w = MakeWorld(10000, 1000);
  auto fifo = sched::MakeQueuePolicy("priority");
  auto placement = sched::MakePlacementPolicy("bestfit");
  sched::Scheduler scheduler(*fifo, *placement, false);
  for (const auto& j : w.waiting) scheduler.Enqueue(j.job);
  for (auto _ : state) {
    core::Rng rng(3);
    auto decisions = scheduler.Schedule(w.cluster, {}, 7200, rng);
    benchmark::DoNotOptimize(decisions);
  }
}
BENCHMARK(BM_SchedulePassSameState)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
