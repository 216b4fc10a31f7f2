#pragma once
// FGD, fragmentation gradient descent (Weng et al., USENIX ATC'23): place the job where the
// node's expected fragmentation, measured against the workload's typical job shapes, grows least.
// A GPU-sharing job also chooses its GPU that way. Shared by `fgd` and `fgd-balance`.

#include "sched/placement_policy.h"

namespace gpufleet::sched {

class FgdPolicy : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "fgd"; }
  void Prepare(const WorkloadProfile& profile) override { profile_ = profile; }
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

  WorkloadProfile profile_;
};

}  // namespace gpufleet::sched
