#pragma once
// Least-attained-service priority classes, shared by `tiresias` and `las-qssf`: a job's class is
// the number of thresholds (GPU-seconds, ascending) its attained service has passed, so class 0
// holds the jobs that have received the least service.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace gpufleet::sched {

class LasClasses {
 public:
  explicit LasClasses(std::vector<double> thresholds_gpu_s)
      : thresholds_(std::move(thresholds_gpu_s)) {}
  int ClassOf(double attained_gpu_s) const {
    return static_cast<int>(
        std::upper_bound(thresholds_.begin(), thresholds_.end(), attained_gpu_s) -
        thresholds_.begin());
  }
  // The attained service at which the class changes next (infinity: never).
  double NextChange(double attained_gpu_s) const {
    auto it = std::upper_bound(thresholds_.begin(), thresholds_.end(), attained_gpu_s);
    return it == thresholds_.end() ? HUGE_VAL : *it;
  }

 private:
  std::vector<double> thresholds_;
};

}  // namespace gpufleet::sched
