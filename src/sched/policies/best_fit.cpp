// Best fit: the node left with the least free CPU and GPU (each normalised to a 128-core, 8-GPU
// node) after placing the job.
#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

class BestFit final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "bestfit"; }
  // Whole numbers 0..100: trunc(100 (1 - s)), s in [0, 1] for nodes up to 128 cores and 8 GPUs.
  int ScoreLevels() const override { return 101; }
  double Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const override {
    const double s =
        0.5 * static_cast<double>(node.cpu_free - job.cpu_milli) / 128000.0 +
        0.5 * static_cast<double>(int64_t{node.gpu_free_total} - job.GpuDemandMilli()) / 8000.0;
    return static_cast<double>(static_cast<int64_t>(100.0 * (1.0 - s)));
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeBestFit() { return std::make_unique<BestFit>(); }

}  // namespace gpufleet::sched
