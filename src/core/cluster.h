#pragma once
// `ClusterSnapshot`: the nodes of a cluster and what is free on each. It is the one place that
// changes free resources, and it checks its invariants on every change: nothing is ever
// allocated beyond a node's capacity or released that was not allocated.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/gpu_links.h"
#include "core/job.h"
#include "core/node.h"
#include "core/result.h"

namespace gpufleet::core {

class ClusterSnapshot {
 public:
  ClusterSnapshot() = default;
  // Every node must be valid (see ValidateNodeSpec); invalid ones are a programming error here.
  explicit ClusterSnapshot(std::vector<NodeSpec> nodes);
  // A copy has the same nodes and free resources and an empty change journal: it describes
  // changes made to the copy only (and copying stays cheap however long the original has lived).
  ClusterSnapshot(const ClusterSnapshot& other);
  ClusterSnapshot& operator=(const ClusterSnapshot& other);
  ClusterSnapshot(ClusterSnapshot&&) = default;
  ClusterSnapshot& operator=(ClusterSnapshot&&) = default;

  int size() const { return static_cast<int>(states_.size()); }
  const NodeSpec& spec(int node) const { return (*specs_)[node]; }
  const NodeState& state(int node) const { return states_[node]; }
  std::span<const NodeState> states() const { return states_; }

  // Takes `job`'s resources on `node`, `job.gpu_milli` from each GPU in `gpus`.
  // `gpus` must name exactly `job.num_gpu` GPUs (none for a CPU-only job) that have room.
  void Allocate(int node, const JobSpec& job, GpuMask gpus);
  // Returns what `Allocate` took.
  void Release(int node, const JobSpec& job, GpuMask gpus);

  // Gives `node` its GPU link table (from the node's heartbeat), replacing any earlier one; an
  // empty table removes it. Placement then picks the best-connected free GPUs there for jobs of
  // 2..4 whole GPUs (sched/gpu_topology.h); a node without a table is placed as before. Fails,
  // changing nothing, when the table's GPU count is not the node's. Free resources and the
  // change journal are untouched: links change where jobs go, not what is free.
  Result<bool> SetGpuLinks(int node, GpuLinks links);
  // `node`'s link table, or null when it has none.
  const GpuLinks* gpu_links(int node) const {
    return node < static_cast<int>(links_.size()) ? links_[node].get() : nullptr;
  }

  // Every node changed by Allocate or Release, in order of change. Lets a reader that remembers
  // how far it had read learn which nodes changed since, without scanning them all.
  std::span<const int> change_journal() const { return journal_; }

  int64_t total_gpu_milli() const { return total_gpu_milli_; }
  int64_t used_gpu_milli() const { return used_gpu_milli_; }
  int total_gpus() const { return static_cast<int>(total_gpu_milli_ / kGpuMilli); }
  // Whole GPUs free (all 1000 milli) over every node: the sum of `NodeState::full_free_gpus`,
  // kept as nodes change.
  int64_t free_whole_gpus() const { return free_whole_gpus_; }
  // The most GPUs any one node has (0: no node has any).
  int max_node_gpus() const { return max_node_gpus_; }

 private:
  void Refresh(NodeState& s);
  // The nodes never change after construction: shared, so a copy (a scheduling pass makes one)
  // copies only what is free.
  std::shared_ptr<const std::vector<NodeSpec>> specs_ = NoNodes();
  static const std::shared_ptr<const std::vector<NodeSpec>>& NoNodes();
  std::vector<NodeState> states_;
  std::vector<std::array<uint32_t, 32>> class_counts_;
  std::vector<int> journal_;  // GPU jobs per JobClassBit, per node
  // Per node, or empty while no node has links; shared so that copying a snapshot stays cheap.
  std::vector<std::shared_ptr<const GpuLinks>> links_;
  int64_t total_gpu_milli_ = 0;
  int64_t used_gpu_milli_ = 0;
  int64_t free_whole_gpus_ = 0;
  int max_node_gpus_ = 0;
};

// Checks a node description: non-negative resources and 0..kMaxGpusPerNode GPUs.
Result<bool> ValidateNodeSpec(const NodeSpec& node);

}  // namespace gpufleet::core
