#include "sched/placer.h"

#include <numeric>

#include "core/check.h"

namespace gpufleet::sched {

core::GpuMask LowestIndexGpus(const core::NodeState& node, int count, int32_t milli) {
  core::GpuMask mask = 0;
  for (int g = 0; g < node.num_gpus && count > 0; ++g) {
    if (node.gpu_free[g] >= milli) {
      mask |= 1u << g;
      --count;
    }
  }
  GPUFLEET_CHECK(count == 0);
  return mask;
}

core::GpuMask DefaultGpuPick(const core::NodeState& node, const core::JobSpec& job) {
  if (!job.UsesGpu()) return 0;
  if (job.SharesGpu()) {
    int best = -1;
    for (int g = 0; g < node.num_gpus; ++g) {
      if (node.gpu_free[g] >= job.gpu_milli && (best < 0 || node.gpu_free[g] < node.gpu_free[best])) {
        best = g;
      }
    }
    GPUFLEET_CHECK(best >= 0);
    return 1u << best;
  }
  return LowestIndexGpus(node, job.num_gpu, job.gpu_milli);
}

size_t Placer::ShapeKeyHash::operator()(const ShapeKey& k) const {
  uint64_t h = static_cast<uint64_t>(k.cpu) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(k.memory) + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
  h ^= (static_cast<uint64_t>(k.num_gpu) << 32 | static_cast<uint32_t>(k.gpu_milli)) + (h << 6) + (h >> 2);
  h ^= k.models + (h << 6) + (h >> 2);
  return h;
}

Placer::Placer(const core::ClusterSnapshot& snapshot, const PlacementPolicy& policy,
               std::span<const uint32_t> tie_rank)
    : snapshot_(snapshot), policy_(policy), nodes_by_rank_(snapshot.size()) {
  const int n = snapshot.size();
  if (tie_rank.empty()) {
    std::iota(nodes_by_rank_.begin(), nodes_by_rank_.end(), 0);
  } else {
    GPUFLEET_CHECK(static_cast<int>(tie_rank.size()) == n);
    std::vector<int> seen(n, 0);
    for (int i = 0; i < n; ++i) {
      GPUFLEET_CHECK(tie_rank[i] < static_cast<uint32_t>(n) && !seen[tie_rank[i]]);
      seen[tie_rank[i]] = 1;
      nodes_by_rank_[tie_rank[i]] = i;
    }
  }
}

std::optional<Placement> Placer::Choose(const core::JobSpec& job, core::Rng& rng) {
  std::span<const core::NodeState> states = snapshot_.states();
  Placement best;
  if (policy_.ScoreIsPure()) {
    ShapeKey key{job.cpu_milli, job.memory_mib, job.num_gpu, job.gpu_milli, job.gpu_models.bits()};
    auto [it, inserted] = shape_ids_.try_emplace(key, static_cast<int>(cache_.size()));
    if (inserted) cache_.emplace_back(states.size());
    std::vector<CachedScore>& cache = cache_[it->second];
    for (int node : nodes_by_rank_) {
      const core::NodeState& s = states[node];
      if (!s.Fits(job)) continue;
      CachedScore& c = cache[node];
      if (c.version != s.version) {
        c.score = policy_.Score(s, job, rng);
        c.version = s.version;
        ++scores_computed_;
      }
      if (best.node < 0 || c.score > best.score) {
        best.node = node;
        best.score = c.score;
      }
    }
  } else {
    for (int node : nodes_by_rank_) {
      const core::NodeState& s = states[node];
      if (!s.Fits(job)) continue;
      const double score = policy_.Score(s, job, rng);
      ++scores_computed_;
      if (best.node < 0 || score > best.score) {
        best.node = node;
        best.score = score;
      }
    }
  }
  if (best.node < 0) return std::nullopt;
  best.gpus = policy_.PickGpus(states[best.node], job, rng);
  return best;
}

}  // namespace gpufleet::sched
