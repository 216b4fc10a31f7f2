// Random fit: a uniformly random feasible node; a GPU-sharing job takes a uniformly random GPU
// that has room, other jobs the lowest-index free GPUs. The published baseline.
#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

class RandomFit final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "random"; }
  bool ScoreIsPure() const override { return false; }
  // The largest of independent uniform scores falls on a uniformly random node.
  double Score(const core::NodeState&, const core::JobSpec&, core::Rng& rng) const override {
    return rng.Uniform();
  }
  core::GpuMask PickGpus(const core::NodeState& node, const core::JobSpec& job,
                         core::Rng& rng) const override {
    if (!job.SharesGpu()) return DefaultGpuPick(node, job);
    const int fitting = node.CountGpusWithFree(job.gpu_milli);
    int pick = static_cast<int>(rng.Below(fitting));
    for (int g = 0; g < node.num_gpus; ++g) {
      if (node.gpu_free[g] >= job.gpu_milli && pick-- == 0) return 1u << g;
    }
    return 0;  // unreachable: the job fits
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeRandomFit() { return std::make_unique<RandomFit>(); }

}  // namespace gpufleet::sched
