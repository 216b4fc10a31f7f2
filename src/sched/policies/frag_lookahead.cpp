// EXPERIMENT (temporary knobs)
#include <cmath>
#include <cstdlib>

#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

int Knob(const char* name, int def) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : def;
}

class FragLookahead final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "fgd-plus"; }
  void Prepare(const WorkloadProfile& profile) override {
    profile_ = profile;
    mode_ = Knob("GF_MODE", 0);
    temp_ = Knob("GF_TEMP", 1000);
    tie_ = Knob("GF_TIE", 0);
  }

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
  double Value(int64_t before, int64_t after, const core::NodeState& node, const core::JobSpec& job) const {
    const double delta = static_cast<double>(before - after) / static_cast<double>(profile_.total_count());
    double score;
    if (mode_ == 0) {
      score = std::trunc(100.0 / (1.0 + std::exp(-delta / temp_)));
    } else {
      score = delta;
    }
    const double left = static_cast<double>(node.gpu_free_total - job.GpuDemandMilli());
    const double cpu_left = static_cast<double>(node.cpu_free - job.cpu_milli);
    if (tie_ == 1) score -= 1e-6 * left;
    if (tie_ == 2) score -= 1e-6 * (left / 8000.0 + cpu_left / 128000.0);
    if (tie_ == 3) score += 1e-6 * left;
    return score;
  }

  double BestScore(const core::NodeState& node, const core::JobSpec& job, int* best_gpu) const {
    const int64_t before = profile_.WeightedFragmentation(node);
    const int64_t cpu_after = node.cpu_free - job.cpu_milli;
    auto gpus = node.gpu_free;
    if (!job.SharesGpu()) {
      if (job.UsesGpu()) {
        const core::GpuMask mask = LowestIndexGpus(node, job.num_gpu, job.gpu_milli);
        for (int g = 0; g < node.num_gpus; ++g) {
          if ((mask >> g) & 1u) gpus[g] -= job.gpu_milli;
        }
      }
      const int64_t after = profile_.WeightedFragmentation(node.model, cpu_after, gpus.data(), node.num_gpus);
      return Value(before, after, node, job);
    }
    double best = -1e300;
    for (int g = 0; g < node.num_gpus; ++g) {
      if (node.gpu_free[g] < job.gpu_milli) continue;
      bool seen = false;
      for (int h = 0; h < g && !seen; ++h) seen = node.gpu_free[h] == node.gpu_free[g];
      if (seen) continue;
      gpus[g] -= job.gpu_milli;
      const int64_t after = profile_.WeightedFragmentation(node.model, cpu_after, gpus.data(), node.num_gpus);
      gpus[g] += job.gpu_milli;
      double score = Value(before, after, node, job);
      if (score > best) {
        best = score;
        *best_gpu = g;
      }
    }
    return best;
  }

  WorkloadProfile profile_;
  int mode_ = 0, tie_ = 0; double temp_ = 1000;
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeFragLookahead() { return std::make_unique<FragLookahead>(); }

}  // namespace gpufleet::sched
