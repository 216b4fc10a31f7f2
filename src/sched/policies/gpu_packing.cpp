// GPU packing: first GPUs that are already partly used, then nodes that are partly used, and
// whole idle nodes last (smaller idle nodes first). CPU-only jobs score 0 everywhere.
#include <algorithm>
#include <array>

#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

class GpuPacking final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "gpupacking"; }
  // Whole numbers 0..100: its tiers span 0..100.
  int ScoreLevels() const override { return 101; }
  double Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const override {
    if (!job.UsesGpu()) return 0;
    const int n = node.num_gpus;
    if (node.full_free_gpus == n) return std::max(33 - n, n);
    // The first num_gpu GPUs with room, in ascending order of free milli (stable).
    std::array<int32_t, core::kMaxGpusPerNode> order{};
    int count = 0;
    for (int g = 0; g < n; ++g) {
      if (node.gpu_free[g] >= job.gpu_milli) order[count++] = node.gpu_free[g];
    }
    std::stable_sort(order.begin(), order.begin() + count);
    const int take = std::min(count, job.num_gpu);
    int fully_free = 0;
    int64_t tenths = 0;
    for (int i = 0; i < take; ++i) {
      fully_free += order[i] == core::kGpuMilli;
      tenths += order[i] * 100 / core::kGpuMilli;
    }
    if (fully_free > 0) return std::max(50 - fully_free, 33);
    return static_cast<double>(std::max<int64_t>(100 - tenths / 10, 50));
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeGpuPacking() { return std::make_unique<GpuPacking>(); }

}  // namespace gpufleet::sched
