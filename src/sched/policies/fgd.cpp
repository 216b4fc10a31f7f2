// FGD, fragmentation gradient descent (Weng et al., USENIX ATC'23): place the job where the
// node's expected fragmentation, measured against the workload's typical job shapes, grows least.
// A GPU-sharing job also chooses its GPU that way.
#include <cmath>

#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

// trunc(100 * sigmoid(delta / 1000)), with the published simulator's float operations.
int Sigmoid100(double delta) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-(delta / 1000.0)));
  return static_cast<int>(sigmoid * 100.0);
}

class Fgd final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "fgd"; }
  void Prepare(const WorkloadProfile& profile) override { profile_ = profile; }

  double Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const override {
    int best_gpu = -1;
    return BestScore(node, job, &best_gpu);
  }

  core::GpuMask PickGpus(const core::NodeState& node, const core::JobSpec& job,
                         core::Rng&) const override {
    if (!job.SharesGpu()) return DefaultGpuPick(node, job);
    int best_gpu = -1;
    BestScore(node, job, &best_gpu);
    return 1u << best_gpu;
  }

 private:
  // The node's score for `job`; for a sharing job also the lowest GPU index reaching it.
  double BestScore(const core::NodeState& node, const core::JobSpec& job, int* best_gpu) const {
    const double before = Frag(node.model, node.cpu_free, node.gpu_free.data(), node.num_gpus);
    const int64_t cpu_after = node.cpu_free - job.cpu_milli;
    auto gpus = node.gpu_free;
    if (!job.SharesGpu()) {
      if (job.UsesGpu()) {
        const core::GpuMask mask = LowestIndexGpus(node, job.num_gpu, job.gpu_milli);
        for (int g = 0; g < node.num_gpus; ++g) {
          if ((mask >> g) & 1u) gpus[g] -= job.gpu_milli;
        }
      }
      const double after = Frag(node.model, cpu_after, gpus.data(),
                                                           node.num_gpus);
      return Sigmoid100(before - after);
    }
    int best = -1;
    for (int g = 0; g < node.num_gpus; ++g) {
      if (node.gpu_free[g] < job.gpu_milli) continue;
      // GPUs with equal free milli give equal scores; only the lowest index counts.
      bool seen = false;
      for (int h = 0; h < g && !seen; ++h) seen = node.gpu_free[h] == node.gpu_free[g];
      if (seen) continue;
      gpus[g] -= job.gpu_milli;
      const double after = Frag(node.model, cpu_after, gpus.data(),
                                                           node.num_gpus);
      gpus[g] += job.gpu_milli;
      const int score = Sigmoid100(before - after);
      if (score > best) {
        best = score;
        *best_gpu = g;
      }
    }
    return best;
  }

  // Scores follow the published simulator's float arithmetic, so that even a zero change whose
  // float rounding decides between scores 49 and 50 goes the way it went there.
  double Frag(core::ModelId model, int64_t cpu, const int32_t* gpus, int n) const {
    return profile_.PublishedFragmentation(model, cpu, gpus, n);
  }

  WorkloadProfile profile_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeFgd() { return std::make_unique<Fgd>(); }

}  // namespace gpufleet::sched
