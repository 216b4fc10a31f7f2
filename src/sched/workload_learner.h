#pragma once
// `WorkloadLearner`: the workload profile a live controller places by, learnt from the jobs it is
// given. Fragmentation-aware placement (fgd, fgd-balance) measures a node against the typical job
// shapes of the workload; the simulator knows the whole trace in advance, a controller only the
// jobs submitted so far. The learner keeps the shapes of the last `window` jobs and rebuilds the
// profile from them once the jobs observed since the last build reach an eighth of those it was
// built from (at least one): early jobs reshape it quickly, and over a long run a rebuild costs
// O(log window) per job. Pure: no clock, no I/O.

#include <cstddef>
#include <string>
#include <vector>

#include "core/job.h"
#include "sched/workload_profile.h"

namespace gpufleet::sched {

class WorkloadLearner {
 public:
  explicit WorkloadLearner(size_t window = 20000);

  // One arriving job: its shape on one node (CPU, memory, GPUs, share, allowed models) and its
  // GPU-model spec as written ("" for any; it orders equally frequent types).
  void Observe(const core::JobSpec& job, const std::string& spec_label);
  // Rebuilds the profile when enough jobs arrived since the last build; true when it did.
  bool Refresh();
  const WorkloadProfile& profile() const { return profile_; }
  size_t observed() const { return observed_; }

 private:
  size_t window_;
  std::vector<core::JobSpec> jobs_;  // a ring of the last `window_` jobs
  std::vector<std::string> labels_;
  size_t next_ = 0;      // where the next job goes once the ring is full
  size_t observed_ = 0;  // jobs ever observed
  size_t built_from_ = 0;
  size_t since_build_ = 0;
  WorkloadProfile profile_;
};

}  // namespace gpufleet::sched
