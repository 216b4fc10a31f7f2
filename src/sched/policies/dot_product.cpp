// Dot product: prefers the node whose free CPU and GPU vector has the smallest dot product with
// the request (normalised to a 128-core, 8-GPU node), as in the FGD paper's baseline.
#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

class DotProduct final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "dotprod"; }
  // Whole numbers 0..100: trunc(100 (1 - d / 2)), d in [0, 2] for nodes and jobs up to 128 cores
  // and 8 GPUs.
  int ScoreLevels() const override { return 101; }
  double Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const override {
    const double d = (static_cast<double>(node.cpu_free) / 128000.0) *
                         (static_cast<double>(job.cpu_milli) / 128000.0) +
                     (static_cast<double>(node.gpu_free_total) / 8000.0) *
                         (static_cast<double>(job.GpuDemandMilli()) / 8000.0);
    return static_cast<double>(static_cast<int64_t>(100.0 * (1.0 - d / 2.0)));
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeDotProduct() { return std::make_unique<DotProduct>(); }

}  // namespace gpufleet::sched
