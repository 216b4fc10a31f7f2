#pragma once
// `RuntimePredictor`: predicts a job's run time from the jobs that have already finished, by
// (queue, GPU count), falling back to the queue alone, then the GPU count alone, then all jobs,
// then a fixed prior. It learns only from what it is told has finished, so it never looks ahead
// (QSSF, Helios SC'21, uses predictions of this kind). Pure data; no clock.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace gpufleet::sched {

class RuntimePredictor {
 public:
  // `prior_s`: the prediction before anything has finished.
  explicit RuntimePredictor(double prior_s = 3600.0) : prior_s_(prior_s) {}

  void Observe(const std::string& queue, int gpus, double runtime_s);
  double Predict(const std::string& queue, int gpus) const;
  int64_t observed() const { return all_.count; }

 private:
  struct Mean {
    int64_t count = 0;
    double sum = 0;
    double value() const { return sum / static_cast<double>(count); }
  };
  // A class needs this many finished jobs before its mean is trusted over the fallbacks.
  static constexpr int64_t kMinSamples = 3;
  double prior_s_;
  std::map<std::pair<std::string, int>, Mean> by_queue_gpus_;
  std::map<std::string, Mean> by_queue_;
  std::map<int, Mean> by_gpus_;
  Mean all_;
};

}  // namespace gpufleet::sched
