#pragma once
// `Placer`: runs one placement policy through the filter / score / select stages over one
// cluster snapshot. It caches each node's score per job shape and recomputes it only after the
// node changes, which is what makes replaying a 10,000-job trace over 1,200 nodes take
// milliseconds; nodes in identical states share one computed score. A Placer is bound to the
// snapshot it was made with; it never modifies it.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "sched/placement_policy.h"

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
  // A node state as a policy sees it, for sharing one computed score among identical nodes.
  struct StateKey {
    int shape;
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
  struct CachedScore {
    uint32_t version = 0;  // node version the score was computed at; 0 = none
    double score = 0;
  };

  double PureScore(int shape, const core::NodeState& node, const core::JobSpec& job,
                   core::Rng& rng);

  const core::ClusterSnapshot& snapshot_;
  const PlacementPolicy& policy_;
  std::vector<uint32_t> rank_;  // tie-break rank per node
  std::vector<int> by_rank_;    // nodes in rank order
  std::unordered_map<ShapeKey, int, ShapeKeyHash> shape_ids_;
  // What the Placer knows about one job shape. A node leaves `candidates` when the shape does not
  // fit it, and comes back when the snapshot's change journal says it changed: so nodes that
  // cannot hold the shape cost nothing until they change.
  struct ShapeState {
    std::vector<CachedScore> cache;  // per node
    std::vector<int> candidates;     // nodes that may fit
    std::vector<uint8_t> member;     // per node: in candidates
    size_t journal_read = 0;         // how much of the change journal is applied
  };
  std::vector<ShapeState> shapes_;
  std::unordered_map<StateKey, double, StateKeyHash> memo_;  // score per (shape, node state)
  int64_t scores_computed_ = 0;
};

}  // namespace gpufleet::sched
