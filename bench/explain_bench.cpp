// Explaining the queue at fleet scale (GET /v1/queue/explain holds the controller's lock for this
// long): 10,000 waiting jobs of 200 shapes over 1,000 full 8-GPU nodes running 5,000 jobs, the
// scheduling pass the explanation starts from included, as Controller::ExplainQueue runs it.
//  - BM_ExplainQueue/<fits-after searches>: 100 (the controller's bound) and 0 (no "fits after"
//    search: the baseline the search's cost is read against).
//  - BM_SchedulePassAlone: the scheduling pass alone over the same state.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "core/cluster.h"
#include "core/gpu_catalog.h"
#include "core/rng.h"
#include "sched/explain.h"
#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "sched/schedule.h"

namespace {

using namespace gpufleet;

struct World {
  core::ClusterSnapshot cluster;
  std::vector<sched::ExplainRunning> running;
  std::vector<sched::QueuedJob> jobs;
};

World MakeWorld() {
  World w;
  std::vector<core::NodeSpec> nodes;
  const auto model = core::GpuCatalog::Builtin().Find("H100-80GB").value_or(0);
  for (int n = 0; n < 1000; ++n) nodes.push_back({"n" + std::to_string(n), 128000, 1 << 20, 8, model});
  w.cluster = core::ClusterSnapshot(nodes);
  sched::JobId id = 100000;
  for (int n = 0; n < 1000; ++n) {
    // One 4-GPU job and four 1-GPU jobs per node, ending at spread-out times over a day.
    int next_gpu = 0;
    for (int k = 0; k < 5; ++k) {
      const int gpus = k == 0 ? 4 : 1;
      sched::ExplainRunning r;
      r.run.job.id = id++;
      r.run.job.total_gpus = gpus;
      const core::GpuMask mask = ((core::GpuMask{1} << gpus) - 1) << next_gpu;
      next_gpu += gpus;
      r.run.placement.push_back({n, mask});
      r.time_limit_s = k == 0 ? 600.0 + (n * 37) % 86400 : 300.0 + (n * 91 + k) % 86400;
      w.cluster.Allocate(n, sched::SliceSpec(r.run.job, gpus), mask);
      w.running.push_back(std::move(r));
    }
  }
  const int sizes[] = {1, 2, 4, 8, 16};
  for (sched::JobId j = 1; j <= 10000; ++j) {
    sched::QueuedJob q;
    q.id = j;
    q.total_gpus = sizes[j % 5];
    q.priority = static_cast<int>(j % 7);
    if (q.total_gpus == 16) q.nodes = 2;
    q.cpu_milli_per_gpu = 500 * (j % 40);  // 200 distinct shapes
    q.submit_s = j;
    w.jobs.push_back(q);
  }
  return w;
}

void BM_ExplainQueue(benchmark::State& state) {
  const World w = MakeWorld();
  auto policy = sched::MakeQueuePolicy("priority");
  auto placement = sched::MakePlacementPolicy("bestfit");
  sched::Scheduler scheduler(*policy, *placement, false);
  for (const auto& j : w.jobs) scheduler.Enqueue(j);
  std::vector<sched::RunningJob> runs;
  for (const auto& r : w.running) runs.push_back(r.run);
  int64_t explained = 0;
  for (auto _ : state) {
    core::Rng rng(1);
    const auto decisions = scheduler.Schedule(w.cluster, runs, 0, rng);
    const std::vector<sched::QueuedJob> waiting = scheduler.Waiting();
    sched::ExplainInput in;
    in.waiting = waiting;
    in.cluster = &w.cluster;
    in.running = w.running;
    in.decisions = decisions;
    in.queue_policy = policy.get();
    in.placement_policy = placement.get();
    in.max_fits_after_searches = static_cast<int>(state.range(0));
    const auto e = sched::ExplainQueue(in, rng);
    explained = static_cast<int64_t>(e.size());
    benchmark::DoNotOptimize(e);
  }
  state.counters["explained"] = static_cast<double>(explained);
}
BENCHMARK(BM_ExplainQueue)->Arg(100)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_SchedulePassAlone(benchmark::State& state) {
  const World w = MakeWorld();
  auto policy = sched::MakeQueuePolicy("priority");
  auto placement = sched::MakePlacementPolicy("bestfit");
  sched::Scheduler scheduler(*policy, *placement, false);
  for (const auto& j : w.jobs) scheduler.Enqueue(j);
  std::vector<sched::RunningJob> runs;
  for (const auto& r : w.running) runs.push_back(r.run);
  for (auto _ : state) {
    core::Rng rng(1);
    benchmark::DoNotOptimize(scheduler.Schedule(w.cluster, runs, 0, rng));
  }
}
BENCHMARK(BM_SchedulePassAlone)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
