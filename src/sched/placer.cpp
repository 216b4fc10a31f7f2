#include "sched/placer.h"

#include <algorithm>
#include <cmath>
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
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(static_cast<uint64_t>(k.cpu_free));
  mix(static_cast<uint64_t>(k.memory_free));
  mix(uint64_t{k.num_gpus} << 40 | uint64_t{k.model} << 32 | k.job_classes);
  for (int g = 0; g < k.num_gpus; ++g) mix(static_cast<uint64_t>(k.gpu_free[g]));
  return h;
}

Placer::Placer(const core::ClusterSnapshot& snapshot, const PlacementPolicy& policy,
               std::span<const uint32_t> tie_rank)
    : snapshot_(snapshot),
      policy_(policy),
      has_state_term_(policy.ScoreIsPure() && policy.HasStateTerm()),
      score_levels_(policy.ScoreLevels()),
      rank_(snapshot.size()) {
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
  state_version_.assign(n, 0);
  state_id_.assign(n, 0);
  changed_at_.assign(n, 0);
  newer_.assign(n, -1);
  older_.assign(n, -1);
  synced_ = snapshot.change_journal().size();
}

uint32_t Placer::StateId(int node, const core::NodeState& s) {
  if (state_version_[node] == s.version) return state_id_[node];
  // Bounded: a long-lived Placer forgets old states rather than growing without limit. Ids are
  // reissued from zero, so every score learned under the old ids goes too.
  if (state_ids_.size() >= (1u << 20)) {
    state_ids_.clear();
    memo_.Clear();
    state_term_.clear();
    std::fill(state_version_.begin(), state_version_.end(), 0u);
  }
  StateKey key{s.num_gpus, s.model, s.job_classes, s.cpu_free, s.memory_free, s.gpu_free};
  const uint32_t id = state_ids_.Intern(key);
  state_version_[node] = s.version;
  state_id_[node] = id;
  return id;
}

double Placer::PureScore(int shape, int node, const core::NodeState& s, const core::JobSpec& job,
                         core::Rng& rng) {
  const uint64_t key = uint64_t{static_cast<uint32_t>(shape)} << 32 | StateId(node, s);
  if (const double* known = memo_.Find(key)) return *known;
  double score;
  if (has_state_term_) {  // the policy's per-state figure, once per distinct state
    const uint32_t id = static_cast<uint32_t>(key);
    if (id >= state_term_.size()) state_term_.resize(id + 1, kUnknownTerm);
    double& term = state_term_[id];
    if (std::isnan(term)) term = policy_.StateTerm(s);
    score = policy_.ScoreWithStateTerm(s, job, rng, term);
  } else {
    score = policy_.Score(s, job, rng);
  }
  // The heap order needs comparable scores; a pure policy that returns NaN is a bug.
  GPUFLEET_CHECK(!std::isnan(score));
  ++scores_computed_;
  if (memo_.size() >= (1u << 20)) memo_.Clear();  // bounded (32 MiB), like the state ids
  memo_.Insert(key, score);
  return score;
}

void Placer::Hold(ShapeState& st, uint32_t id, double score) {
  if (auto* buckets = std::get_if<NodeRankBuckets>(&st.ranking)) {
    if (buckets->Accepts(score)) {
      buckets->Set(id, score);
      return;
    }
    NodeRankHeap heap(static_cast<uint32_t>(snapshot_.size()));
    buckets->ForEach([&heap](uint32_t held, double s) { heap.AppendUnordered(held, s); });
    heap.Heapify();
    st.ranking = std::move(heap);
  }
  std::get<NodeRankHeap>(st.ranking).Set(id, score);
}

void Placer::Rerank(ShapeState& st, int shape, int node, const core::JobSpec& job, core::Rng& rng) {
  const core::NodeState& s = snapshot_.state(node);
  if (s.Fits(job)) {
    Hold(st, rank_[node], PureScore(shape, node, s, job, rng));
  } else {
    std::visit([&](auto& ranking) { ranking.Remove(rank_[node]); }, st.ranking);
  }
}

void Placer::SyncChanges() {
  const std::span<const int> journal = snapshot_.change_journal();
  // The journal only grows while the snapshot lives; a shorter one means the snapshot was replaced
  // under this Placer, which would then miss changes.
  GPUFLEET_CHECK(journal.size() >= synced_);
  for (; synced_ < journal.size(); ++synced_) {
    const int node = journal[synced_];
    if (changed_at_[node] != 0) {  // unlink
      if (older_[node] >= 0) newer_[older_[node]] = newer_[node];
      if (newer_[node] >= 0) {
        older_[newer_[node]] = older_[node];
      } else {
        newest_ = older_[node];
      }
    }
    older_[node] = newest_;
    newer_[node] = -1;
    if (newest_ >= 0) newer_[newest_] = node;
    newest_ = node;
    changed_at_[node] = synced_ + 1;
  }
}

std::optional<Placement> Placer::ChoosePure(const core::JobSpec& job, core::Rng& rng) {
  const int n = snapshot_.size();
  ShapeKey key{job.cpu_milli, job.memory_mib, job.num_gpu, job.gpu_milli, job.gpu_models.bits()};
  const auto [it, inserted] = shape_ids_.try_emplace(key, static_cast<int>(shapes_.size()));
  const int shape = it->second;
  if (inserted) shapes_.emplace_back(static_cast<uint32_t>(n), score_levels_);
  ShapeState& st = shapes_[shape];
  SyncChanges();
  if (inserted) {
    for (int node = 0; node < n; ++node) {
      const core::NodeState& s = snapshot_.state(node);
      if (!s.Fits(job)) continue;
      const double score = PureScore(shape, node, s, job, rng);
      if (auto* heap = std::get_if<NodeRankHeap>(&st.ranking)) {
        heap->AppendUnordered(rank_[node], score);  // ordered once, below
      } else {
        Hold(st, rank_[node], score);
      }
    }
    if (auto* heap = std::get_if<NodeRankHeap>(&st.ranking)) heap->Heapify();
  } else {
    // Each node changed since this shape last looked, once, newest first.
    int64_t walked = 0;
    for (int node = newest_; node >= 0 && changed_at_[node] > st.journal_read;
         node = older_[node]) {
      Rerank(st, shape, node, job, rng);
      ++walked;
    }
    nodes_reranked_ += walked;
  }
  st.journal_read = synced_;
  return std::visit(
      [&](const auto& ranking) -> std::optional<Placement> {
        if (ranking.empty()) return std::nullopt;
        const auto top = ranking.top();
        Placement best;
        best.node = by_rank_[top.id];
        best.score = top.score;
        return best;
      },
      st.ranking);
}

std::optional<Placement> Placer::Choose(const core::JobSpec& job, core::Rng& rng) {
  std::span<const core::NodeState> states = snapshot_.states();
  Placement best;
  // Highest score wins; ties go to the smaller rank.
  auto consider = [&](int node, double score) {
    if (best.node < 0 || score > best.score ||
        (score == best.score && rank_[node] < rank_[best.node])) {
      best.node = node;
      best.score = score;
    }
  };
  if (policy_.ScoreIsPure()) {
    if (auto pure = ChoosePure(job, rng)) best = *pure;
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
