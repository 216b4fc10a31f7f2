#include "sched/policies/fgd.h"

#include <algorithm>
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

void FgdPolicy::Prepare(const WorkloadProfile& profile) {
  profile_ = profile;
  type_cpus_.clear();
  for (const JobType& t : profile_.types()) type_cpus_.push_back(t.cpu_milli);
  std::sort(type_cpus_.begin(), type_cpus_.end());
  type_cpus_.erase(std::unique(type_cpus_.begin(), type_cpus_.end()), type_cpus_.end());
  memo_ids_.clear();
  memo_.clear();
}

size_t FgdPolicy::FragmentationKeyHash::operator()(const FragmentationKey& k) const {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (uint64_t w : k.words) h = (h ^ w) * 0xff51afd7ed558ccdULL + (h >> 29);
  return h;
}

double FgdPolicy::Fragmentation(core::ModelId model, int64_t cpu_free, const int32_t* gpu_free,
                                int num_gpus) const {
  if (num_gpus > kMemoGpus) {
    return profile_.PublishedFragmentation(model, cpu_free, gpu_free, num_gpus);
  }
  // The measure reads the GPUs only as a multiset (counts and sums per share threshold), and the
  // CPU only as which types' requests it covers.
  std::array<uint32_t, kMemoGpus> sorted{};
  for (int g = 0; g < num_gpus; ++g) {
    const int32_t v = gpu_free[g];
    if (v < 0 || v > 0xffff) {
      return profile_.PublishedFragmentation(model, cpu_free, gpu_free, num_gpus);
    }
    int i = g;
    for (; i > 0 && sorted[i - 1] < static_cast<uint32_t>(v); --i) sorted[i] = sorted[i - 1];
    sorted[i] = static_cast<uint32_t>(v);
  }
  const auto cpu_level = static_cast<uint64_t>(
      std::upper_bound(type_cpus_.begin(), type_cpus_.end(), cpu_free) - type_cpus_.begin());
  FragmentationKey key{};
  key.words[0] = uint64_t{model} | cpu_level << 8 | uint64_t(num_gpus) << 48;
  for (int g = 0; g < kMemoGpus; ++g) key.words[1 + g / 4] |= uint64_t{sorted[g]} << (16 * (g % 4));
  // Bounded like the placer's tables: forget everything rather than grow without limit.
  if (memo_.size() >= (1u << 20)) {
    memo_ids_.clear();
    memo_.clear();
  }
  const uint32_t id = memo_ids_.Intern(key);
  if (id == memo_.size()) {
    memo_.push_back(profile_.PublishedFragmentation(model, cpu_free, gpu_free, num_gpus));
  }
  return memo_[id];
}

double FgdPolicy::Score(const core::NodeState& node, const core::JobSpec& job, core::Rng&) const {
  int best_gpu = -1;
  return BestScore(node, job, StateTerm(node), &best_gpu);
}

double FgdPolicy::StateTerm(const core::NodeState& node) const {
  return Fragmentation(node.model, node.cpu_free, node.gpu_free.data(), node.num_gpus);
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
    const double after = Fragmentation(node.model, cpu_after, gpus.data(), node.num_gpus);
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
    const double after = Fragmentation(node.model, cpu_after, gpus.data(), node.num_gpus);
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
