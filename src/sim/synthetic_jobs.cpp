#include "sim/synthetic_jobs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "core/rng.h"

namespace gpufleet::sim {
namespace {

constexpr int64_t kMinRunS = 30;
constexpr int64_t kMaxRunS = 30LL * 24 * 3600;  // a month

double StandardNormal(core::Rng& rng) {
  // Box-Muller; 1 - U keeps the logarithm finite.
  const double u1 = 1.0 - rng.Uniform();
  const double u2 = rng.Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double LogNormal(core::Rng& rng, double median_s, double sigma) {
  return median_s * std::exp(sigma * StandardNormal(rng));
}

// Run time in seconds of one job of shape `durations` (already validated).
double DrawRunTime(std::string_view durations, core::Rng& rng) {
  if (durations == "heavy") return LogNormal(rng, 1200, 2.0);
  if (durations == "bimodal") {
    return rng.Uniform() < 0.8 ? LogNormal(rng, 600, 0.5) : LogNormal(rng, 8 * 3600, 0.5);
  }
  if (durations == "narrow") return LogNormal(rng, 7200, 0.2);
  // pareto: x_m / U^(1/alpha)
  return 300.0 / std::pow(1.0 - rng.Uniform(), 1.0 / 1.3);
}

constexpr std::array<int, 6> kSizes = {1, 2, 4, 8, 16, 32};

const std::array<double, 6>* SizeMix(std::string_view sizes) {
  static constexpr std::array<double, 6> kSmall = {70, 15, 10, 5, 0, 0};
  static constexpr std::array<double, 6> kMixed = {50, 15, 15, 15, 4, 1};
  static constexpr std::array<double, 6> kLarge = {20, 10, 20, 30, 15, 5};
  if (sizes == "small") return &kSmall;
  if (sizes == "mixed") return &kMixed;
  if (sizes == "large") return &kLarge;
  return nullptr;
}

int DrawGpus(const std::array<double, 6>& mix, core::Rng& rng) {
  double u = rng.Uniform() * 100.0;
  for (size_t i = 0; i < mix.size(); ++i) {
    if (u < mix[i]) return kSizes[i];
    u -= mix[i];
  }
  return kSizes[0];
}

}  // namespace

std::string_view SyntheticDurationNames() { return "heavy, bimodal, narrow, pareto"; }
std::string_view SyntheticSizeNames() { return "small, mixed, large"; }

core::Result<std::vector<TraceJob>> GenerateSyntheticJobs(const SyntheticJobsSpec& spec) {
  const std::string_view d = spec.durations;
  if (d != "heavy" && d != "bimodal" && d != "narrow" && d != "pareto") {
    return core::Error{"durations: unknown shape '" + spec.durations + "'; known: " +
                       std::string(SyntheticDurationNames())};
  }
  const auto* mix = SizeMix(spec.sizes);
  if (mix == nullptr) {
    return core::Error{"sizes: unknown mix '" + spec.sizes + "'; known: " +
                       std::string(SyntheticSizeNames())};
  }
  if (spec.jobs < 1 || spec.jobs > 10'000'000) return core::Error{"jobs: must be 1..10000000"};
  if (spec.cluster_gpus < 1 || spec.cluster_gpus > 1'000'000) {
    return core::Error{"cluster-gpus: must be 1..1000000"};
  }
  if (!(spec.load > 0.0 && spec.load <= 100.0)) return core::Error{"load: must be in (0, 100]"};
  if (spec.queues < 1 || spec.queues > 1000) return core::Error{"queues: must be 1..1000"};
  core::Rng rng(spec.seed);
  // Each VC runs its jobs somewhat longer or shorter than another (a factor drawn once per VC),
  // so a predictor that learns by VC has something to learn, as on real clusters.
  std::vector<double> vc_factor(static_cast<size_t>(spec.queues));
  for (double& f : vc_factor) f = std::exp(0.25 * StandardNormal(rng));
  std::vector<TraceJob> jobs(static_cast<size_t>(spec.jobs));
  double demand_gpu_s = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    TraceJob& j = jobs[i];
    j.id = static_cast<int64_t>(i) + 1;
    const size_t vc = rng.Below(static_cast<uint64_t>(spec.queues));
    j.vc = "vc" + std::to_string(vc);
    j.num_gpus = std::min<int64_t>(DrawGpus(*mix, rng), spec.cluster_gpus);
    const double run_s = DrawRunTime(d, rng) * vc_factor[vc];
    j.duration_s = std::clamp<int64_t>(std::llround(run_s), kMinRunS, kMaxRunS);
    demand_gpu_s += static_cast<double>(j.duration_s) * j.num_gpus;
  }
  // Poisson arrivals at the rate that offers `load` x the cluster over the trace's span.
  const double mean_gap_s =
      demand_gpu_s / static_cast<double>(jobs.size()) /
      (spec.load * static_cast<double>(spec.cluster_gpus));
  double t = 0;
  for (TraceJob& j : jobs) {
    j.submit_s = std::llround(t);
    t += -std::log(1.0 - rng.Uniform()) * mean_gap_s;
  }
  return jobs;
}

std::string SyntheticJobsCsv(const std::vector<TraceJob>& jobs) {
  std::string out = "id,submit_s,duration_s,num_gpus,queue\n";
  for (const TraceJob& j : jobs) {
    out += std::to_string(j.id) + ',' + std::to_string(j.submit_s) + ',' +
           std::to_string(j.duration_s) + ',' + std::to_string(j.num_gpus) + ',' + j.vc + '\n';
  }
  return out;
}

}  // namespace gpufleet::sim
