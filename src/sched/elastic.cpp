#include "sched/elastic.h"

#include <algorithm>
#include <bit>

#include "sched/gang_placement.h"

namespace gpufleet::sched {

int64_t ShrinkableGpus(std::span<const RunningJob> running, std::span<const ElasticView> views) {
  int64_t gpus = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    if (views[i].touched || !IsElastic(running[i].job)) continue;
    gpus += std::max(0, GpusOf(views[i].placement) - running[i].job.min_gpus);
  }
  return gpus;
}

std::optional<ShrinkPlan> PlanShrink(const core::ClusterSnapshot& work,
                                     const PlacementPolicy& placement_policy, const QueuedJob& job,
                                     std::span<const RunningJob> running,
                                     std::span<const ElasticView> views, bool allow_spread,
                                     core::Rng& rng) {
  struct Candidate {
    int surplus;
    JobId id;
    size_t index;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < views.size(); ++i) {
    if (views[i].touched || !IsElastic(running[i].job)) continue;
    const int surplus = GpusOf(views[i].placement) - running[i].job.min_gpus;
    if (surplus > 0) candidates.push_back({surplus, running[i].job.id, i});
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.surplus != b.surplus ? a.surplus > b.surplus : a.id < b.id;
  });
  const bool whole = job.gpu_milli >= core::kGpuMilli;
  const int need = !whole ? 1 : FewestGpus(job);
  core::ClusterSnapshot trial = work;
  int64_t free = 0;
  for (const auto& s : trial.states()) free += s.full_free_gpus;
  ShrinkPlan plan;
  for (const Candidate& c : candidates) {
    const RunningJob& r = running[c.index];
    std::vector<Allocation> place = views[c.index].placement;
    for (int gpus = GpusOf(place); gpus > r.job.min_gpus; --gpus) {
      // The job's node with the most free GPUs gives one up (ties: the one holding fewest of it).
      size_t from = 0;
      for (size_t k = 1; k < place.size(); ++k) {
        const int fk = trial.state(place[k].node).full_free_gpus;
        const int fb = trial.state(place[from].node).full_free_gpus;
        if (fk > fb ||
            (fk == fb && core::GpuCount(place[k].gpus) < core::GpuCount(place[from].gpus))) {
          from = k;
        }
      }
      const core::GpuMask bit = core::GpuMask{1} << (31 - std::countl_zero(place[from].gpus));
      const int node = place[from].node;
      const int before = trial.state(node).full_free_gpus;
      // The node's slice is released whole and taken again one GPU smaller, so the cluster's
      // bookkeeping (job classes per node) sees one slice per job and node, as a caller's would.
      trial.Release(node, SliceSpec(r.job, core::GpuCount(place[from].gpus)), place[from].gpus);
      place[from].gpus &= ~bit;
      if (place[from].gpus != 0) {
        trial.Allocate(node, SliceSpec(r.job, core::GpuCount(place[from].gpus)), place[from].gpus);
      }
      free += trial.state(node).full_free_gpus - before;
      if (place[from].gpus == 0) place.erase(place.begin() + static_cast<std::ptrdiff_t>(from));
      if (free < need) continue;  // cheap test before any placement work
      Placer placer(trial, placement_policy, std::span<const uint32_t>());
      auto placement =
          PlaceGang(trial, placer, IsElastic(job) ? SizedTo(job, need) : job, allow_spread, rng);
      if (placement) {
        // The job gives back everything above its min at once: one restart now, rather than one
        // at each later arrival (a placement found stays valid as more GPUs free up).
        while (GpusOf(place) > r.job.min_gpus) {
          Allocation& a = place.back();
          const core::GpuMask top = core::GpuMask{1} << (31 - std::countl_zero(a.gpus));
          trial.Release(a.node, SliceSpec(r.job, core::GpuCount(a.gpus)), a.gpus);
          a.gpus &= ~top;
          if (a.gpus != 0) {
            trial.Allocate(a.node, SliceSpec(r.job, core::GpuCount(a.gpus)), a.gpus);
          } else {
            place.pop_back();
          }
        }
        plan.resized.emplace_back(c.index, std::move(place));
        plan.placement = std::move(*placement);
        return plan;
      }
    }
    plan.resized.emplace_back(c.index, std::move(place));
  }
  return std::nullopt;
}

}  // namespace gpufleet::sched
