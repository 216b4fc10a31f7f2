#pragma once
// `Placer`: runs one placement policy through the filter / score / select stages over one
// cluster snapshot. For a policy with pure scores it keeps, per job shape, the feasible nodes
// ranked by score, and re-ranks a node only after the snapshot's change journal says it changed:
// a placement costs the nodes changed since that shape was last placed, not a scan of every node,
// so replaying a trace grows about linearly with its size. Nodes in identical states share one
// computed score. A Placer is bound to the
// snapshot it was made with; it never modifies it.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "sched/flat_interner.h"
#include "sched/node_rank_buckets.h"
#include "sched/node_rank_heap.h"
#include "sched/placement_policy.h"
#include "sched/score_memo.h"

namespace gpufleet::sched {

struct Placement {
  int node = -1;
  core::GpuMask gpus = 0;
  double score = 0;
};

class Placer {
 public:
  // `tie_rank[i]` orders node i among equally scored nodes (smaller wins); it must be a
  // permutation of 0..n-1. Empty means node index order. `policy` must outlive the Placer and
  // must already be prepared.
  Placer(const core::ClusterSnapshot& snapshot, const PlacementPolicy& policy,
         std::span<const uint32_t> tie_rank);

  // The node and GPUs for `job`, or nothing when no node can hold it now. On a node with a link
  // table (`ClusterSnapshot::SetGpuLinks`), a job of 2..4 whole GPUs gets the set
  // `PickConnectedGpus` chooses; otherwise the policy's `PickGpus` picks.
  std::optional<Placement> Choose(const core::JobSpec& job, core::Rng& rng);

  // How many node scores were computed rather than reused (for benchmarks).
  int64_t scores_computed() const { return scores_computed_; }
  // How many times a shape looked again at a node that changed since it last placed a job (for
  // benchmarks): the work that grows with the cluster, beside the first look of each new shape.
  int64_t nodes_reranked() const { return nodes_reranked_; }

 private:
  struct ShapeKey {
    int64_t cpu, memory;
    int32_t num_gpu, gpu_milli;
    uint64_t models;
    bool operator==(const ShapeKey&) const = default;
  };
  struct ShapeKeyHash {
    size_t operator()(const ShapeKey& k) const;
  };
  // A node state as a policy sees it: identical nodes get one state id, so they share one
  // computed score per shape.
  struct StateKey {
    uint8_t num_gpus;
    core::ModelId model;
    uint32_t job_classes;
    int64_t cpu_free, memory_free;
    std::array<int32_t, core::kMaxGpusPerNode> gpu_free;
    bool operator==(const StateKey&) const = default;
  };
  struct StateKeyHash {
    size_t operator()(const StateKey& k) const;
  };
  // What the Placer knows about one job shape: the nodes that fit it, best first (by tie-break
  // rank, `by_rank_` names the node). A node is re-scored only when the snapshot's change journal
  // says it changed, so a placement costs the nodes that changed since this shape was last
  // placed, not a scan of the cluster.
  // Nodes are ranked in buckets when the policy's scores are small whole numbers, else in a heap
  // (and in a heap from the first score that is not, `Hold`).
  struct ShapeState {
    ShapeState(uint32_t nodes, int score_levels)
        : ranking(score_levels > 0
                      ? Ranking(std::in_place_type<NodeRankBuckets>, nodes, score_levels)
                      : Ranking(std::in_place_type<NodeRankHeap>, nodes)) {}
    using Ranking = std::variant<NodeRankHeap, NodeRankBuckets>;
    Ranking ranking;
    size_t journal_read = 0;  // how much of the change journal is applied
  };

  // Applies the snapshot's new journal entries to the recency list.
  void SyncChanges();

  // The id of node `node`'s current state, shared by identical states.
  uint32_t StateId(int node, const core::NodeState& s);
  // The score of `job` (shape `shape`) on node `node`, computed once per distinct state.
  double PureScore(int shape, int node, const core::NodeState& s, const core::JobSpec& job,
                   core::Rng& rng);
  // Holds rank `id` with `score` in `st`'s ranking; a score the buckets cannot hold turns them
  // into a heap first.
  void Hold(ShapeState& st, uint32_t id, double score);
  // Ranks `node`, as it is now, for shape `st`: holds it with its score when `job` fits, drops
  // it otherwise.
  void Rerank(ShapeState& st, int shape, int node, const core::JobSpec& job, core::Rng& rng);
  std::optional<Placement> ChoosePure(const core::JobSpec& job, core::Rng& rng);

  const core::ClusterSnapshot& snapshot_;
  const PlacementPolicy& policy_;
  const bool has_state_term_;   // the policy's HasStateTerm, asked once
  const int score_levels_;      // the policy's ScoreLevels, asked once
  std::vector<uint32_t> rank_;  // tie-break rank per node
  std::vector<int> by_rank_;    // nodes in rank order
  std::unordered_map<ShapeKey, int, ShapeKeyHash> shape_ids_;
  std::vector<ShapeState> shapes_;
  // State interning: per node the version its id was taken at (0 = none) and the id.
  std::vector<uint32_t> state_version_;
  std::vector<uint32_t> state_id_;
  FlatInterner<StateKey, StateKeyHash> state_ids_;
  ScoreMemo memo_;  // score per (shape, state id)
  // The policy's StateTerm per state id (kUnknownTerm: not computed yet).
  static constexpr double kUnknownTerm = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> state_term_;
  // The nodes that ever changed, newest change first (a doubly linked list through `older_` and
  // `newer_`), each with the journal length just after its last change (0 = never changed). A
  // shape catches up by walking it until the changes it has already seen: each changed node once,
  // however often it changed.
  std::vector<size_t> changed_at_;
  std::vector<int> newer_, older_;
  int newest_ = -1;
  size_t synced_ = 0;  // journal entries applied to the list
  int64_t scores_computed_ = 0;
  int64_t nodes_reranked_ = 0;
};

}  // namespace gpufleet::sched
