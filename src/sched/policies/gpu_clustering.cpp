// GPU clustering: keeps alike GPU jobs (GPU-sharing, 1-GPU, 2-GPU, ...) on the same nodes, and
// prefers nodes with less free GPU. CPU-only jobs score 0 everywhere.
#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

class GpuClustering final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "gpuclustering"; }
  // Whole numbers 0..100: up to 25 for free GPU plus up to 75 for the classes already there.
  int ScoreLevels() const override { return 101; }
  double Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const override {
    if (!job.UsesGpu()) return 0;
    int64_t score = 25 * (8000 - int64_t{node.gpu_free_total}) / 8000;
    const uint32_t mine = core::JobClassBit(job);
    if (node.job_classes == mine) {
      score += 75;
    } else if (node.job_classes & mine) {
      score += 50;
    } else if (node.job_classes == 0) {
      score += 25;
    }
    return static_cast<double>(score);
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeGpuClustering() { return std::make_unique<GpuClustering>(); }

}  // namespace gpufleet::sched
