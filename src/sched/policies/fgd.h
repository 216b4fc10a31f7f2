#pragma once
// FGD, fragmentation gradient descent (Weng et al., USENIX ATC'23): place the job where the
// node's expected fragmentation, measured against the workload's typical job shapes, grows least.
// A GPU-sharing job also chooses its GPU that way. Shared by `fgd` and `fgd-balance`.
//
// Fragmentation is memoized per node state as the measure sees it (GPU model, which job types'
// CPU fits, the GPUs' free shares as a multiset), so an FgdPolicy must not be used by two threads
// at once.

#include <array>
#include <cstdint>
#include <vector>

#include "sched/flat_interner.h"
#include "sched/placement_policy.h"

namespace gpufleet::sched {

class FgdPolicy : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "fgd"; }
  void Prepare(const WorkloadProfile& profile) override;
  double Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const override;
  core::GpuMask PickGpus(const core::NodeState& node, const core::JobSpec& job,
                         core::Rng&) const override;
  // The node's fragmentation before a placement: the same for every job shape.
  bool HasStateTerm() const override { return true; }
  double StateTerm(const core::NodeState& node) const override;
  double ScoreWithStateTerm(const core::NodeState& node, const core::JobSpec& job, core::Rng&,
                            double fragmentation_before) const override;
  // trunc(100 * sigmoid(...)): 0..100.
  int ScoreLevels() const override { return 101; }

 private:
  // The node's score for `job` given its fragmentation now; for a sharing job also the GPU that
  // reaches it.
  int BestScore(const core::NodeState& node, const core::JobSpec& job, double before,
                int* best_gpu) const;

  // `profile_.PublishedFragmentation`, memoized for nodes of up to kMemoGpus GPUs.
  double Fragmentation(core::ModelId model, int64_t cpu_free, const int32_t* gpu_free,
                       int num_gpus) const;

  static constexpr int kMemoGpus = 8;
  // Model, CPU level and GPU count in the first word; the free milli per GPU, largest first, 16
  // bits each, in the other two.
  struct FragmentationKey {
    std::array<uint64_t, 3> words;
    bool operator==(const FragmentationKey&) const = default;
  };
  struct FragmentationKeyHash {
    size_t operator()(const FragmentationKey& k) const;
  };

  WorkloadProfile profile_;
  // The distinct CPU requests of the profile's job types, ascending: fragmentation depends on a
  // node's free CPU only through how many of them it covers.
  std::vector<int64_t> type_cpus_;
  mutable FlatInterner<FragmentationKey, FragmentationKeyHash> memo_ids_;
  mutable std::vector<double> memo_;  // fragmentation by memo id
};

}  // namespace gpufleet::sched
