#include "sched/gittins_index.h"

#include <algorithm>
#include <cmath>

namespace gpufleet::sched {
namespace {

constexpr double kFirstEdgeGpuS = 60.0;        // one GPU-minute
constexpr double kBinsPerDoubling = 4.0;
constexpr int kBins = 1 + 4 * 28;              // up to about 1.6e10 GPU-seconds
constexpr double kPriorWeightPerBin = 0.05;    // about 5 jobs in all, log-uniform

}  // namespace

GittinsIndex::GittinsIndex()
    : lower_edge_(kBins), count_(kBins), sum_(kBins), index_(kBins), class_(kBins),
      next_change_(kBins) {
  lower_edge_[0] = 0;
  for (int k = 1; k < kBins; ++k) {
    lower_edge_[k] = kFirstEdgeGpuS * std::exp2((k - 1) / kBinsPerDoubling);
  }
  for (int k = 0; k < kBins; ++k) {
    const double upper = k + 1 < kBins ? lower_edge_[k + 1] : lower_edge_[k] * 2;
    const double middle = k == 0 ? upper / 2 : std::sqrt(lower_edge_[k] * upper);
    count_[k] = kPriorWeightPerBin;
    sum_[k] = kPriorWeightPerBin * middle;
  }
  Rebuild();
}

size_t GittinsIndex::BinOf(double gpu_s) const {
  const auto it = std::upper_bound(lower_edge_.begin(), lower_edge_.end(), gpu_s);
  return it == lower_edge_.begin() ? 0 : static_cast<size_t>(it - lower_edge_.begin()) - 1;
}

void GittinsIndex::Observe(double service_gpu_s) {
  if (!(service_gpu_s > 0) || !std::isfinite(service_gpu_s)) return;
  const size_t k = BinOf(service_gpu_s);
  count_[k] += 1;
  sum_[k] += service_gpu_s;
  ++observed_;
}

void GittinsIndex::Rebuild() {
  built_from_ = observed_;
  // Suffix counts: how many observations lie at or beyond each bin.
  std::vector<double> tail(kBins + 1, 0.0);
  for (int k = kBins - 1; k >= 0; --k) tail[k] = tail[k + 1] + count_[k];
  for (int k = 0; k < kBins; ++k) {
    const double a = lower_edge_[k];
    double done = 0, done_service = 0, best = 0;
    for (int m = k; m < kBins; ++m) {
      done += count_[m];
      done_service += sum_[m] - a * count_[m];
      if (done <= 0) continue;
      // Serve until the end of bin m (the last bin: until the job ends).
      const double beyond = tail[m + 1];
      const double spend =
          m + 1 < kBins ? done_service + beyond * (lower_edge_[m + 1] - a) : done_service;
      if (spend > 0) best = std::max(best, done / spend);
    }
    index_[k] = best;
  }
  for (int k = 0; k < kBins; ++k) {
    class_[k] = index_[k] > 0 ? std::clamp(static_cast<int>(std::floor(-std::log2(index_[k]))), 0,
                                           1 << 20)
                              : 1 << 20;
  }
  // A job doing at least as well as when it started (its index not below its first) is on
  // track: class 0, with every newcomer. Only a job whose prospects fell is demoted.
  const int start = class_[0];
  for (int& c : class_) {
    if (c <= start) c = 0;
  }
  double change = HUGE_VAL;
  for (int k = kBins - 1; k >= 0; --k) {
    next_change_[k] = change;
    if (k > 0 && class_[k - 1] != class_[k]) change = lower_edge_[k];
  }
}

double GittinsIndex::Index(double attained_gpu_s) const { return index_[BinOf(attained_gpu_s)]; }

int GittinsIndex::Class(double attained_gpu_s) const { return class_[BinOf(attained_gpu_s)]; }

double GittinsIndex::NextClassChange(double attained_gpu_s) const {
  return next_change_[BinOf(attained_gpu_s)];
}

}  // namespace gpufleet::sched
