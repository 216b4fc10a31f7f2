// Time-simulator benchmarks (issue target: the full 82k-job Philly replay in at most 10 s per
// policy on one core, peak memory at most 1 GB):
//  - BM_PhillyReplay/<policy>: the whole Philly trace on philly-512, every queue policy; needs
//    ../shared/traces/philly (reports an error naming the path otherwise);
//  - BM_PhillyReplicated/<policy>/K: the trace replicated K times on K times the nodes;
//  - BM_SyntheticReplay/<policy>: 20,000 generated jobs on philly-512, needs no trace files.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "core/gpu_catalog.h"
#include "core/rng.h"
#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "sim/job_trace.h"
#include "sim/time_sim.h"

namespace {

using namespace gpufleet;

const std::string kPhilly =
    std::string(GPUFLEET_SOURCE_DIR) + "/../shared/traces/philly/philly_pollux_osdi21.csv";

void Replay(benchmark::State& state, const std::vector<sim::TraceJob>& jobs,
            const sim::ClusterSpec& cluster, const std::string& policy_name) {
  auto policy = sched::MakeQueuePolicy(policy_name);
  auto placement = sched::MakePlacementPolicy("bestfit");
  double jct = 0;
  for (auto _ : state) {
    auto result = sim::RunTimeSim(jobs, cluster, *policy, *placement, {}, false);
    if (!result) {
      state.SkipWithError(result.error().c_str());
      return;
    }
    jct = sim::Summarize(result.value()).avg_jct_s;
  }
  state.counters["jobs"] = static_cast<double>(jobs.size());
  state.counters["avg_jct_h"] = jct / 3600;
  state.counters["jobs_per_s"] = benchmark::Counter(static_cast<double>(jobs.size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void BM_PhillyReplay(benchmark::State& state, std::string policy, int replicate) {
  auto trace = sim::ReadJobTrace("philly:" + kPhilly, {}, core::GpuCatalog::Builtin());
  if (!trace) {
    state.SkipWithError(("needs the Philly trace: " + trace.error()).c_str());
    return;
  }
  auto cluster = sim::NamedCluster("philly-512", core::GpuCatalog::Builtin());
  std::vector<sim::TraceJob> jobs = std::move(trace.value().jobs);
  sim::ReplicateTrace(replicate, &jobs, &cluster.value());
  Replay(state, jobs, cluster.value(), policy);
}

void BM_SyntheticReplay(benchmark::State& state, std::string policy) {
  // Poisson arrivals (one every 180 s), log-uniform run times from a minute to a day, and
  // Philly-like GPU counts: about 75% of 512 GPUs on average, with bursts that queue.
  core::Rng rng(42);
  std::vector<sim::TraceJob> jobs;
  int64_t t = 0;
  const int sizes[] = {1, 1, 1, 1, 1, 1, 2, 2, 4, 8, 16, 32};
  for (int i = 0; i < 20000; ++i) {
    t += static_cast<int64_t>(-180.0 * std::log(1.0 - rng.Uniform()));
    sim::TraceJob j;
    j.id = i;
    j.submit_s = t;
    j.duration_s = static_cast<int64_t>(60.0 * std::pow(1440.0, rng.Uniform())) + 1;
    j.num_gpus = sizes[rng.Below(12)];
    j.vc = "vc" + std::to_string(rng.Below(8));
    jobs.push_back(std::move(j));
  }
  auto cluster = sim::NamedCluster("philly-512", core::GpuCatalog::Builtin());
  Replay(state, jobs, cluster.value(), policy);
}

void Register() {
  for (const auto& info : sched::QueuePolicies()) {
    const std::string name(info.name);
    benchmark::RegisterBenchmark(("BM_PhillyReplay/" + name).c_str(), BM_PhillyReplay, name, 1)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark(("BM_SyntheticReplay/" + name).c_str(), BM_SyntheticReplay, name)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  for (const char* name : {"fifo", "tiresias", "las-qssf"}) {
    for (int k : {2, 4}) {
      benchmark::RegisterBenchmark(
          ("BM_PhillyReplicated/" + std::string(name) + "/" + std::to_string(k)).c_str(),
          BM_PhillyReplay, std::string(name), k)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
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
