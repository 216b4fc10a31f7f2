#include "sim/placement_experiment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"
#include "core/cluster.h"
#include "sched/placer.h"
#include "sim/numerics.h"

namespace gpufleet::sim {

sched::WorkloadProfile ProfileOf(const OpenbWorkload& workload) {
  std::vector<core::JobSpec> jobs;
  std::vector<std::string> labels;
  jobs.reserve(workload.pods.size());
  labels.reserve(workload.pods.size());
  for (const auto& pod : workload.pods) {
    jobs.push_back(pod.job);
    labels.push_back(pod.spec_label);
  }
  return sched::WorkloadProfile::Build(jobs, labels);
}

PlacementOrder GenerateOrder(const OpenbWorkload& workload, uint64_t seed, double tune) {
  core::Rng rng(seed);
  PlacementOrder order;
  order.source = "seed " + std::to_string(seed);
  const int n = static_cast<int>(workload.pods.size());
  order.pods.resize(n);
  std::iota(order.pods.begin(), order.pods.end(), 0);
  for (int i = n - 1; i > 0; --i) std::swap(order.pods[i], order.pods[rng.Below(i + 1)]);
  int64_t capacity = 0;
  for (const auto& node : workload.nodes) capacity += int64_t{node.num_gpus} * core::kGpuMilli;
  int64_t demand = 0;
  for (const auto& pod : workload.pods) demand += pod.job.GpuDemandMilli();
  const double limit = tune * static_cast<double>(capacity);
  if (n > 0) {
    while (true) {
      const int pick = static_cast<int>(rng.Below(n));
      const core::JobSpec& job = workload.pods[pick].job;
      if (static_cast<double>(demand + job.gpu_milli) > limit) break;
      order.pods.push_back(pick);
      demand += job.GpuDemandMilli();
    }
  }
  const int m = static_cast<int>(workload.nodes.size());
  std::vector<uint32_t> perm(m);
  std::iota(perm.begin(), perm.end(), 0u);
  for (int i = m - 1; i > 0; --i) std::swap(perm[i], perm[rng.Below(i + 1)]);
  order.node_rank = std::move(perm);
  return order;
}

void PreparePlacementPolicy(sched::PlacementPolicy& policy, const sched::WorkloadProfile& profile,
                            const OpenbWorkload& workload) {
  policy.Prepare(profile);
  policy.PrepareCluster(workload.nodes);
}

PlacementRun RunPlacement(const OpenbWorkload& workload, const PlacementOrder& order,
                          const sched::PlacementPolicy& policy,
                          const sched::WorkloadProfile& profile, core::Rng& rng) {
  core::ClusterSnapshot cluster(workload.nodes);
  sched::Placer placer(cluster, policy, order.node_rank);
  PlacementRun run;
  run.capacity_milli = cluster.total_gpu_milli();
  const size_t events = order.pods.size();
  run.arrived_milli.reserve(events);
  run.used_milli.reserve(events);
  run.frag_ratio.reserve(events);
  run.node.reserve(events);
  run.gpus.reserve(events);

  // Fragmentation is kept per node as an exact weighted integer, so the cluster sum never drifts.
  std::vector<int64_t> node_frag(cluster.size());
  int64_t frag_sum = 0;
  for (int i = 0; i < cluster.size(); ++i) {
    node_frag[i] = profile.WeightedFragmentation(cluster.state(i));
    frag_sum += node_frag[i];
  }
  const double weight_total = static_cast<double>(profile.total_count());
  int64_t arrived = 0;
  // The order picks pods anywhere in the list: each one's spec is fetched a few pods early, so the
  // run does not wait on memory for every pod of a large trace.
  constexpr size_t kPodsAhead = 4;
  for (size_t i = 0; i < events; ++i) {
    if (i + kPodsAhead < events) {  // the fields a placement reads may span two cache lines
      const core::JobSpec& ahead = workload.pods[order.pods[i + kPodsAhead]].job;
      __builtin_prefetch(&ahead.cpu_milli);
      __builtin_prefetch(&ahead.gpu_models);
    }
    const core::JobSpec& job = workload.pods[order.pods[i]].job;
    arrived += job.GpuDemandMilli();
    auto placement = placer.Choose(job, rng);
    if (placement) {
      cluster.Allocate(placement->node, job, placement->gpus);
      const int64_t updated = profile.WeightedFragmentation(cluster.state(placement->node));
      frag_sum += updated - node_frag[placement->node];
      node_frag[placement->node] = updated;
      run.node.push_back(placement->node);
      run.gpus.push_back(placement->gpus);
    } else {
      ++run.failed;
      run.node.push_back(-1);
      run.gpus.push_back(0);
    }
    const int64_t idle = cluster.total_gpu_milli() - cluster.used_gpu_milli();
    const double frag = idle == 0 ? 0.0
                                  : 100.0 * (static_cast<double>(frag_sum) / weight_total) /
                                        static_cast<double>(idle);
    run.arrived_milli.push_back(arrived);
    run.used_milli.push_back(cluster.used_gpu_milli());
    run.frag_ratio.push_back(PythonRound2(frag));
  }
  run.scores_computed = placer.scores_computed();
  run.nodes_reranked = placer.nodes_reranked();
  return run;
}

PlacementCurves SummarizeCurves(const PlacementRun& run, int max_percent) {
  const double gpus = static_cast<double>(run.capacity_milli) / core::kGpuMilli;
  const size_t events = run.arrived_milli.size();
  std::vector<int64_t> bucket(events);
  std::vector<double> alloc(events);
  for (size_t i = 0; i < events; ++i) {
    bucket[i] = RoundHalfEven(static_cast<double>(run.arrived_milli[i]) / gpus / 10.0);
    alloc[i] = PythonRound2(static_cast<double>(run.used_milli[i]) / (10.0 * gpus));
  }
  PlacementCurves curves;
  curves.failed = run.failed;
  curves.pods = static_cast<double>(events);
  // Events grouped by bucket once, in event order (the order numpy sums them in).
  std::vector<std::vector<size_t>> by_bucket(max_percent + 2);
  for (size_t i = 0; i < events; ++i) {
    if (bucket[i] >= 0 && bucket[i] <= max_percent + 1) by_bucket[bucket[i]].push_back(i);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<size_t> chosen;
  std::vector<double> a, f;
  for (int x = 0; x <= max_percent; ++x) {
    chosen = by_bucket[x];
    if (chosen.empty()) {  // the events of both neighbours, merged back into event order
      if (x > 0) chosen = by_bucket[x - 1];
      chosen.insert(chosen.end(), by_bucket[x + 1].begin(), by_bucket[x + 1].end());
      std::sort(chosen.begin(), chosen.end());
    }
    if (chosen.empty()) {
      curves.allocation.push_back(nan);
      curves.frag_ratio.push_back(nan);
      continue;
    }
    a.clear();
    f.clear();
    for (size_t i : chosen) {
      a.push_back(alloc[i]);
      f.push_back(run.frag_ratio[i]);
    }
    const double count = static_cast<double>(a.size());
    curves.allocation.push_back(NumpyRound2(NumpyPairwiseSum(a) / count));
    curves.frag_ratio.push_back(NumpyPairwiseSum(f) / count);
  }
  return curves;
}

PlacementCurves MeanCurves(const std::vector<PlacementCurves>& runs) {
  GPUFLEET_CHECK(!runs.empty());
  PlacementCurves mean;
  const size_t buckets = runs.front().allocation.size();
  mean.allocation.assign(buckets, 0.0);
  mean.frag_ratio.assign(buckets, 0.0);
  const double n = static_cast<double>(runs.size());
  for (const auto& run : runs) {
    GPUFLEET_CHECK(run.allocation.size() == buckets);
    for (size_t b = 0; b < buckets; ++b) {
      mean.allocation[b] += run.allocation[b] / n;
      mean.frag_ratio[b] += run.frag_ratio[b] / n;
    }
    mean.failed += run.failed / n;
    mean.pods += run.pods / n;
  }
  for (auto& v : mean.allocation) v = NumpyRound2(v);
  return mean;
}

}  // namespace gpufleet::sim
