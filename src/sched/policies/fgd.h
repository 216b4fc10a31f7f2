#pragma once
// FGD, fragmentation gradient descent (Weng et al., USENIX ATC'23): place the job where the
// node's expected fragmentation, measured against the workload's typical job shapes, grows least.
// A GPU-sharing job also chooses its GPU that way. Shared by `fgd` and its variants.

#include <string>

#include "sched/placement_policy.h"

namespace gpufleet::sched {

class FgdPolicy : public PlacementPolicy {
 public:
  // `tight_gpu_ties`: when several GPUs of a node give a sharing job the same score, take the one
  // with the least free milli (FGD as published takes the lowest index).
  FgdPolicy(std::string name, bool tight_gpu_ties)
      : name_(std::move(name)), tight_gpu_ties_(tight_gpu_ties) {}

  std::string_view Name() const override { return name_; }
  void Prepare(const WorkloadProfile& profile) override { profile_ = profile; }
  double Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const override;
  core::GpuMask PickGpus(const core::NodeState& node, const core::JobSpec& job,
                         core::Rng&) const override;

 private:
  // The node's score for `job`; for a sharing job also the GPU that reaches it.
  int BestScore(const core::NodeState& node, const core::JobSpec& job, int* best_gpu) const;

  std::string name_;
  bool tight_gpu_ties_;
  WorkloadProfile profile_;
};

}  // namespace gpufleet::sched
