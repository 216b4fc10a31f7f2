#include "sched/workload_profile.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <tuple>

#include "core/check.h"

namespace gpufleet::sched {

WorkloadProfile WorkloadProfile::Build(std::span<const core::JobSpec> jobs,
                                       std::span<const std::string> spec_labels, double coverage) {
  GPUFLEET_CHECK(spec_labels.empty() || spec_labels.size() == jobs.size());
  using Key = std::tuple<int64_t, int, int, std::string>;
  std::map<Key, JobType> counted;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const core::JobSpec& job = jobs[i];
    const int milli = job.UsesGpu() ? job.gpu_milli : 0;
    const int count = job.UsesGpu() ? job.num_gpu : 0;
    std::string label =
        spec_labels.empty()
            ? (job.gpu_models.IsAll() ? std::string() : std::to_string(job.gpu_models.bits()))
            : spec_labels[i];
    Key key{job.cpu_milli, milli, count, label};
    JobType& type = counted[key];
    type.cpu_milli = job.cpu_milli;
    type.gpu_milli = milli;
    type.num_gpu = count;
    type.models = job.gpu_models;
    type.spec_label = std::move(label);
    ++type.count;
  }
  std::vector<JobType> all;
  all.reserve(counted.size());
  for (auto& [key, type] : counted) all.push_back(std::move(type));
  // Most frequent first; ties by key, highest first.
  std::sort(all.begin(), all.end(), [](const JobType& a, const JobType& b) {
    return std::tie(a.count, a.cpu_milli, a.gpu_milli, a.num_gpu, a.spec_label) >
           std::tie(b.count, b.cpu_milli, b.gpu_milli, b.num_gpu, b.spec_label);
  });
  WorkloadProfile profile;
  const double total = static_cast<double>(jobs.size());
  const double needed = coverage * 100.0 * total / 100.0;
  for (auto& type : all) {
    if (static_cast<double>(profile.total_count_) >= needed) break;
    profile.total_count_ += type.count;
    profile.types_.push_back(type);
  }
  for (const JobType& t : profile.types_) {
    double w = static_cast<double>(t.count) / total;
    if (profile.types_.size() < all.size()) w /= static_cast<double>(profile.total_count_) / total;
    profile.published_weights_.push_back(w);
    if (t.gpu_milli > 0) profile.thresholds_.push_back(t.gpu_milli);
  }
  std::sort(profile.thresholds_.begin(), profile.thresholds_.end(), std::greater<>());
  profile.thresholds_.erase(std::unique(profile.thresholds_.begin(), profile.thresholds_.end()),
                            profile.thresholds_.end());
  for (const JobType& t : profile.types_) {
    auto it = std::find(profile.thresholds_.begin(), profile.thresholds_.end(), t.gpu_milli);
    profile.threshold_of_type_.push_back(
        t.gpu_milli > 0 ? static_cast<int>(it - profile.thresholds_.begin()) : -1);
  }
  profile.by_model_.resize(core::kMaxModels);
  for (int m = 0; m < core::kMaxModels; ++m) {
    ModelView& view = profile.by_model_[m];
    for (const JobType& t : profile.types_) {
      if (t.num_gpu == 0 || !t.models.Contains(static_cast<core::ModelId>(m))) {
        view.unusable_count += t.count;
      } else {
        view.gpu_types.push_back(t);
      }
    }
  }
  return profile;
}

int64_t WorkloadProfile::WeightedFragmentation(core::ModelId model, int64_t cpu_free,
                                               const int32_t* gpu_free, int num_gpus) const {
  int64_t free_total = 0;
  for (int g = 0; g < num_gpus; ++g) free_total += gpu_free[g];
  const ModelView& view = by_model_[model];
  int64_t sum = view.unusable_count * free_total;
  for (const JobType& t : view.gpu_types) {
    if (cpu_free < t.cpu_milli) {
      sum += t.count * free_total;
      continue;
    }
    int fitting = 0;
    int64_t unusable = 0;
    for (int g = 0; g < num_gpus; ++g) {
      const bool fits = gpu_free[g] >= t.gpu_milli;
      fitting += fits;
      unusable += fits ? 0 : gpu_free[g];
    }
    sum += t.count * (fitting >= t.num_gpu ? unusable : free_total);
  }
  return sum;
}

double WorkloadProfile::PublishedFragmentation(core::ModelId model, int64_t cpu_free,
                                               const int32_t* gpu_free, int num_gpus) const {
  // Categories in the published order: Q1 lack both, Q2 lack GPU (and the unusable part of
  // satisfied types), Q3 satisfied (not fragmentation), Q4 lack CPU, XL and XR (CPU-only types
  // with and without enough CPU), no access (GPU model not allowed).
  enum { kQ1, kQ2, kQ3, kQ4, kXL, kXR, kNoAccess, kCategories };
  double data[kCategories] = {};
  // Per distinct threshold m: how many GPUs have >= m free, and the free milli on the others.
  // GPUs sorted by free milli descending meet the descending thresholds in one merge pass.
  std::array<int32_t, core::kMaxGpusPerNode> sorted{};
  int64_t free_total = 0;
  for (int g = 0; g < num_gpus; ++g) {
    int32_t v = gpu_free[g];
    free_total += v;
    int i = g;
    for (; i > 0 && sorted[i - 1] < v; --i) sorted[i] = sorted[i - 1];
    sorted[i] = v;
  }
  constexpr int kMaxThresholds = 64;
  int fitting_at[kMaxThresholds];
  int64_t unusable_at[kMaxThresholds];
  const int thresholds = static_cast<int>(std::min<size_t>(thresholds_.size(), kMaxThresholds));
  {
    int i = 0;
    int64_t fitting_sum = 0;
    for (int k = 0; k < thresholds; ++k) {
      while (i < num_gpus && sorted[i] >= thresholds_[k]) fitting_sum += sorted[i++];
      fitting_at[k] = i;
      unusable_at[k] = free_total - fitting_sum;
    }
  }
  const double idle = static_cast<double>(free_total);
  for (size_t i = 0; i < types_.size(); ++i) {
    const JobType& t = types_[i];
    const double w = published_weights_[i];
    const bool cpu_ok = cpu_free >= t.cpu_milli;
    if (t.gpu_milli == 0) {
      data[cpu_ok ? kXL : kXR] += w * idle;
      continue;
    }
    if (num_gpus == 0 || !t.models.Contains(model)) {
      data[kNoAccess] += w * idle;
      continue;
    }
    const int k = threshold_of_type_[i];
    int fitting = 0;
    int64_t unusable = 0;
    if (k < kMaxThresholds) {
      fitting = fitting_at[k];
      unusable = unusable_at[k];
    } else {  // more distinct shares than the fast path holds
      for (int g = 0; g < num_gpus; ++g) {
        const bool fits = gpu_free[g] >= t.gpu_milli;
        fitting += fits;
        unusable += fits ? 0 : gpu_free[g];
      }
    }
    if (fitting >= t.num_gpu) {
      if (cpu_ok) {
        data[kQ2] += w * static_cast<double>(unusable);
        data[kQ3] += w * static_cast<double>(free_total - unusable);
      } else {
        data[kQ4] += w * idle;
      }
    } else {
      data[cpu_ok ? kQ2 : kQ1] += w * idle;
    }
  }
  double sum = 0;
  for (int c = 0; c < kCategories; ++c) {
    if (c != kQ3) sum += data[c];
  }
  return sum;
}

}  // namespace gpufleet::sched
