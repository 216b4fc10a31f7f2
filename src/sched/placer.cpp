#include "sched/placer.h"

#include <numeric>

#include "core/check.h"
#include "sched/gpu_topology.h"

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
      if (node.gpu_free[g] >= job.gpu_milli &&
          (best < 0 || node.gpu_free[g] < node.gpu_free[best])) {
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
  h ^= (static_cast<uint64_t>(k.num_gpu) << 32 | static_cast<uint32_t>(k.gpu_milli)) + (h << 6) +
       (h >> 2);
  h ^= k.models + (h << 6) + (h >> 2);
  return h;
}

size_t Placer::StateKeyHash::operator()(const StateKey& k) const {
  uint64_t h = static_cast<uint64_t>(k.shape) * 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(static_cast<uint64_t>(k.cpu_free));
  mix(static_cast<uint64_t>(k.memory_free));
  mix(uint64_t{k.num_gpus} << 40 | uint64_t{k.model} << 32 | k.job_classes);
  for (int g = 0; g < k.num_gpus; ++g) mix(static_cast<uint64_t>(k.gpu_free[g]));
  return h;
}

Placer::Placer(const core::ClusterSnapshot& snapshot, const PlacementPolicy& policy,
               std::span<const uint32_t> tie_rank)
    : snapshot_(snapshot), policy_(policy), rank_(snapshot.size()) {
  const int n = snapshot.size();
  if (tie_rank.empty()) {
    std::iota(rank_.begin(), rank_.end(), 0u);
  } else {
    GPUFLEET_CHECK(static_cast<int>(tie_rank.size()) == n);
    std::vector<char> seen(n, 0);
    for (int i = 0; i < n; ++i) {
      GPUFLEET_CHECK(tie_rank[i] < static_cast<uint32_t>(n) && !seen[tie_rank[i]]);
      seen[tie_rank[i]] = 1;
      rank_[i] = tie_rank[i];
    }
  }
  by_rank_.resize(n);
  for (int node = 0; node < n; ++node) by_rank_[rank_[node]] = node;
}

double Placer::PureScore(int shape, const core::NodeState& s, const core::JobSpec& job,
                         core::Rng& rng) {
  StateKey key{shape, s.num_gpus, s.model, s.job_classes, s.cpu_free, s.memory_free, s.gpu_free};
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  const double score = policy_.Score(s, job, rng);
  ++scores_computed_;
  // Bounded: a long-lived Placer forgets old states rather than growing without limit.
  if (memo_.size() > (1u << 20)) memo_.clear();
  memo_.emplace(key, score);
  return score;
}

std::optional<Placement> Placer::Choose(const core::JobSpec& job, core::Rng& rng) {
  std::span<const core::NodeState> states = snapshot_.states();
  const int n = static_cast<int>(states.size());
  Placement best;
  // Nodes are visited in index order (memory order); ties go to the smaller rank.
  auto consider = [&](int node, double score) {
    if (best.node < 0 || score > best.score ||
        (score == best.score && rank_[node] < rank_[best.node])) {
      best.node = node;
      best.score = score;
    }
  };
  if (policy_.ScoreIsPure()) {
    ShapeKey key{job.cpu_milli, job.memory_mib, job.num_gpu, job.gpu_milli, job.gpu_models.bits()};
    auto [it, inserted] = shape_ids_.try_emplace(key, static_cast<int>(shapes_.size()));
    const std::span<const int> journal = snapshot_.change_journal();
    if (inserted) {
      ShapeState fresh;
      fresh.cache.resize(n);
      fresh.candidates.resize(n);
      std::iota(fresh.candidates.begin(), fresh.candidates.end(), 0);
      fresh.member.assign(n, 1);
      fresh.journal_read = journal.size();
      shapes_.push_back(std::move(fresh));
    }
    const int shape = it->second;
    ShapeState& st = shapes_[shape];
    for (size_t i = st.journal_read; i < journal.size(); ++i) {
      const int node = journal[i];
      if (!st.member[node]) {
        st.member[node] = 1;
        st.candidates.push_back(node);
      }
    }
    st.journal_read = journal.size();
    for (size_t i = 0; i < st.candidates.size();) {
      const int node = st.candidates[i];
      const core::NodeState& s = states[node];
      if (!s.Fits(job)) {
        st.member[node] = 0;
        st.candidates[i] = st.candidates.back();
        st.candidates.pop_back();
        continue;
      }
      CachedScore& c = st.cache[node];
      if (c.version != s.version) {
        c.score = PureScore(shape, s, job, rng);
        c.version = s.version;
      }
      consider(node, c.score);
      ++i;
    }
  } else {
    // Randomized policies draw in rank order, so a seed gives the same run on any node order.
    for (int node : by_rank_) {
      const core::NodeState& s = states[node];
      if (!s.Fits(job)) continue;
      ++scores_computed_;
      consider(node, policy_.Score(s, job, rng));
    }
  }
  if (best.node < 0) return std::nullopt;
  const core::NodeState& chosen = states[best.node];
  const core::GpuLinks* links = snapshot_.gpu_links(best.node);
  if (links != nullptr && job.gpu_milli == core::kGpuMilli && job.num_gpu >= kMinTopologyGpus &&
      job.num_gpu <= kMaxTopologyGpus) {
    // A node that reported its links: the best-connected free set, whatever the policy.
    best.gpus = PickConnectedGpus(*links, WholeFreeGpus(chosen), job.num_gpu);
  } else {
    best.gpus = policy_.PickGpus(chosen, job, rng);
  }
  return best;
}

}  // namespace gpufleet::sched
