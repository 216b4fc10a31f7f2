#include "sched/gang_placement.h"

#include <algorithm>

namespace gpufleet::sched {

namespace {

// Whole GPUs of `node` this job's slices may use, as its CPU and memory allow.
int UsableGpus(const core::NodeState& s, const QueuedJob& job) {
  if (!job.gpu_models.Contains(s.model)) return 0;
  int64_t usable = s.full_free_gpus;
  if (job.cpu_milli_per_gpu > 0) usable = std::min(usable, s.cpu_free / job.cpu_milli_per_gpu);
  if (job.memory_mib_per_gpu > 0) {
    usable = std::min(usable, s.memory_free / job.memory_mib_per_gpu);
  }
  return static_cast<int>(usable);
}

// Exactly `job.nodes` nodes with an equal share each, taking the nodes with the fewest usable
// GPUs that still fit (packing: big holes stay free for big jobs; ties to the lower index).
std::optional<std::vector<Allocation>> PlaceOnNodes(const core::ClusterSnapshot& cluster,
                                                    const QueuedJob& job) {
  if (job.gpu_milli < core::kGpuMilli || job.total_gpus % job.nodes != 0) return std::nullopt;
  const int per_node = job.total_gpus / job.nodes;
  std::vector<std::pair<int, int>> fits;  // (usable GPUs, node)
  for (int n = 0; n < cluster.size(); ++n) {
    const int usable = UsableGpus(cluster.state(n), job);
    if (usable >= per_node) fits.emplace_back(usable, n);
  }
  if (static_cast<int>(fits.size()) < job.nodes) return std::nullopt;
  std::stable_sort(fits.begin(), fits.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Allocation> placement;
  for (int k = 0; k < job.nodes; ++k) {
    const int node = fits[k].second;
    placement.push_back({node, LowestIndexGpus(cluster.state(node), per_node, core::kGpuMilli)});
  }
  std::sort(placement.begin(), placement.end(),
            [](const Allocation& a, const Allocation& b) { return a.node < b.node; });
  return placement;
}

}  // namespace

std::optional<std::vector<Allocation>> PlaceGang(const core::ClusterSnapshot& cluster,
                                                 Placer& placer, const QueuedJob& job,
                                                 bool allow_spread, core::Rng& rng) {
  if (job.nodes > 1) return PlaceOnNodes(cluster, job);
  if (!LargerThanEveryNode(job, job.total_gpus, cluster.max_node_gpus())) {
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
    const int usable = UsableGpus(cluster.state(n), job);
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

std::optional<PreemptionPlan> PlanPreemption(core::ClusterSnapshot& work, Placer& placer,
                                             const QueuedJob& job,
                                             std::span<const RunningJob> running,
                                             std::span<const size_t> candidates,
                                             const std::function<bool(size_t)>& may_take,
                                             bool allow_spread, core::Rng& rng) {
  return PlanPreemption(
      work, placer, job, running,
      [&](size_t k) { return k < candidates.size() ? std::optional(candidates[k]) : std::nullopt; },
      may_take, allow_spread, rng);
}

std::optional<PreemptionPlan> PlanPreemption(
    core::ClusterSnapshot& work, Placer& placer, const QueuedJob& job,
    std::span<const RunningJob> running,
    const std::function<std::optional<size_t>(size_t)>& candidate_at,
    const std::function<bool(size_t)>& may_take, bool allow_spread, core::Rng& rng) {
  PreemptionPlan plan;
  const bool whole = job.gpu_milli >= core::kGpuMilli;
  for (size_t k = 0;; ++k) {
    const std::optional<size_t> candidate = candidate_at(k);
    if (!candidate) break;
    const size_t i = *candidate;
    if (!may_take(i)) continue;
    for (const Allocation& a : running[i].placement) {
      work.Release(a.node, SliceSpec(running[i].job, core::GpuCount(a.gpus)), a.gpus);
    }
    plan.victims.push_back(i);
    // Cheap test before any placement work.
    if (whole && work.free_whole_gpus() < job.total_gpus) continue;
    if (auto placement = PlaceGang(work, placer, job, allow_spread, rng)) {
      plan.placement = std::move(*placement);
      return plan;
    }
  }
  // No plan: the candidates go back.
  for (const size_t i : plan.victims) {
    for (const Allocation& a : running[i].placement) {
      work.Allocate(a.node, SliceSpec(running[i].job, core::GpuCount(a.gpus)), a.gpus);
    }
  }
  return std::nullopt;
}

}  // namespace gpufleet::sched
