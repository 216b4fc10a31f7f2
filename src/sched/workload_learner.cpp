#include "sched/workload_learner.h"

#include <algorithm>

namespace gpufleet::sched {

WorkloadLearner::WorkloadLearner(size_t window) : window_(std::max<size_t>(1, window)) {}

void WorkloadLearner::Observe(const core::JobSpec& job, const std::string& spec_label) {
  core::JobSpec shape;  // what the profile counts: no name, queue or priority kept
  shape.cpu_milli = job.cpu_milli;
  shape.memory_mib = job.memory_mib;
  shape.num_gpu = job.num_gpu;
  shape.gpu_milli = job.gpu_milli;
  shape.gpu_models = job.gpu_models;
  if (jobs_.size() < window_) {
    jobs_.push_back(shape);
    labels_.push_back(spec_label);
  } else {
    jobs_[next_] = shape;
    labels_[next_] = spec_label;
    next_ = (next_ + 1) % window_;
  }
  ++observed_;
  ++since_build_;
}

bool WorkloadLearner::Refresh() {
  if (since_build_ == 0 || since_build_ * 8 < built_from_) return false;
  profile_ = WorkloadProfile::Build(jobs_, labels_);
  built_from_ = jobs_.size();
  since_build_ = 0;
  return true;
}

}  // namespace gpufleet::sched
