#include "sched/policies/fgd.h"

#include <cmath>

#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

// trunc(100 * sigmoid(delta / 1000)), with the published simulator's float operations.
int Sigmoid100(double delta) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-(delta / 1000.0)));
  return static_cast<int>(sigmoid * 100.0);
}

}  // namespace

double FgdPolicy::Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const {
  int best_gpu = -1;
  return BestScore(node, job, StateTerm(node), &best_gpu);
}

double FgdPolicy::StateTerm(const core::NodeState& node) const {
  return profile_.PublishedFragmentation(node.model, node.cpu_free, node.gpu_free.data(),
                                         node.num_gpus);
}

double FgdPolicy::ScoreWithStateTerm(const core::NodeState& node, const core::JobSpec& job,
                                     core::Rng&, double fragmentation_before) const {
  int best_gpu = -1;
  return BestScore(node, job, fragmentation_before, &best_gpu);
}

core::GpuMask FgdPolicy::PickGpus(const core::NodeState& node, const core::JobSpec& job,
                                  core::Rng&) const {
  if (!job.SharesGpu()) return DefaultGpuPick(node, job);
  int best_gpu = -1;
  BestScore(node, job, StateTerm(node), &best_gpu);
  return 1u << best_gpu;
}

// Fragmentation is computed with the published simulator's float arithmetic
// (`PublishedFragmentation`), not the exact integer form: where a placement leaves the
// fragmentation unchanged in exact arithmetic, the float rounding decides between scores 49 and
// 50, and reproducing the published decisions needs the same rounding.
int FgdPolicy::BestScore(const core::NodeState& node, const core::JobSpec& job, double before,
                         int* best_gpu) const {
  const int64_t cpu_after = node.cpu_free - job.cpu_milli;
  auto gpus = node.gpu_free;
  if (!job.SharesGpu()) {
    if (job.UsesGpu()) {
      const core::GpuMask mask = LowestIndexGpus(node, job.num_gpu, job.gpu_milli);
      for (int g = 0; g < node.num_gpus; ++g) {
        if ((mask >> g) & 1u) gpus[g] -= job.gpu_milli;
      }
    }
    const double after =
        profile_.PublishedFragmentation(node.model, cpu_after, gpus.data(), node.num_gpus);
    return Sigmoid100(before - after);
  }
  int best = -1;
  for (int g = 0; g < node.num_gpus; ++g) {
    if (node.gpu_free[g] < job.gpu_milli) continue;
    // GPUs with equal free milli give equal scores; only the first needs computing.
    bool seen = false;
    for (int h = 0; h < g && !seen; ++h) seen = node.gpu_free[h] == node.gpu_free[g];
    if (seen) continue;
    gpus[g] -= job.gpu_milli;
    const double after =
        profile_.PublishedFragmentation(node.model, cpu_after, gpus.data(), node.num_gpus);
    gpus[g] += job.gpu_milli;
    const int score = Sigmoid100(before - after);
    if (score > best) {
      best = score;
      *best_gpu = g;
    }
  }
  return best;
}

std::unique_ptr<PlacementPolicy> MakeFgd() { return std::make_unique<FgdPolicy>(); }

}  // namespace gpufleet::sched
