#include "sched/gang_placement.h"

#include <algorithm>

namespace gpufleet::sched {

std::optional<std::vector<Allocation>> PlaceGang(const core::ClusterSnapshot& cluster,
                                                 Placer& placer, const QueuedJob& job,
                                                 bool allow_spread, core::Rng& rng) {
  int largest = 0;
  for (const auto& s : cluster.states()) largest = std::max<int>(largest, s.num_gpus);
  if (job.total_gpus <= largest || job.gpu_milli < core::kGpuMilli) {
    if (auto one = placer.Choose(SliceSpec(job, job.total_gpus), rng)) {
      return std::vector<Allocation>{{one->node, one->gpus}};
    }
    if (!allow_spread || job.gpu_milli < core::kGpuMilli || job.total_gpus == 1) {
      return std::nullopt;
    }
  }
  // Whole GPUs from the nodes with the most fully free GPUs first.
  std::vector<std::pair<int, int>> free;  // (free GPUs usable by one slice, node)
  int available = 0;
  for (int n = 0; n < cluster.size(); ++n) {
    const core::NodeState& s = cluster.state(n);
    if (s.full_free_gpus == 0 || !job.gpu_models.Contains(s.model)) continue;
    // As many GPUs as the node's CPU and memory allow for this job.
    int usable = s.full_free_gpus;
    if (job.cpu_milli_per_gpu > 0) {
      usable = std::min<int64_t>(usable, s.cpu_free / job.cpu_milli_per_gpu);
    }
    if (job.memory_mib_per_gpu > 0) {
      usable = std::min<int64_t>(usable, s.memory_free / job.memory_mib_per_gpu);
    }
    if (usable <= 0) continue;
    free.emplace_back(usable, n);
    available += usable;
  }
  if (available < job.total_gpus) return std::nullopt;
  std::stable_sort(free.begin(), free.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Allocation> placement;
  int needed = job.total_gpus;
  for (const auto& [usable, node] : free) {
    const int take = std::min(usable, needed);
    placement.push_back({node, LowestIndexGpus(cluster.state(node), take, core::kGpuMilli)});
    needed -= take;
    if (needed == 0) break;
  }
  return placement;
}

std::optional<PreemptionPlan> PlanPreemption(const core::ClusterSnapshot& work,
                                             const PlacementPolicy& placement_policy,
                                             const QueuedJob& job,
                                             std::span<const RunningJob> running,
                                             const std::vector<size_t>& candidates,
                                             const std::function<bool(size_t)>& may_take,
                                             bool allow_spread, core::Rng& rng) {
  PreemptionPlan plan;
  plan.cluster = work;
  const bool whole = job.gpu_milli >= core::kGpuMilli;
  for (size_t i : candidates) {
    if (!may_take(i)) continue;
    for (const Allocation& a : running[i].placement) {
      plan.cluster.Release(a.node, SliceSpec(running[i].job, std::popcount(a.gpus)), a.gpus);
    }
    plan.victims.push_back(i);
    if (whole) {
      int64_t free = 0;
      for (const auto& s : plan.cluster.states()) free += s.full_free_gpus;
      if (free < job.total_gpus) continue;  // cheap test before any placement work
    }
    Placer placer(plan.cluster, placement_policy, std::span<const uint32_t>());
    if (auto placement = PlaceGang(plan.cluster, placer, job, allow_spread, rng)) {
      plan.placement = std::move(*placement);
      return plan;
    }
  }
  return std::nullopt;
}

}  // namespace gpufleet::sched
