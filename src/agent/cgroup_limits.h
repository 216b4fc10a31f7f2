#pragma once
// `CgroupLimits`: per-job CPU and memory limits through cgroup v2, when this machine offers it.
//
// Layout: under the agent's own cgroup (or `--cgroup-root`), a `gpufleet-jobs` cgroup with the
// cpu and memory controllers enabled, and one `gpufleet-job-<id>` cgroup per limited job, with
// `cpu.max` (quota per 100 ms period) and `memory.max` set. The job's shim joins it before the
// job starts, so everything the job forks is limited too, and the cgroup path names the job for
// the GPU process view (gpu/process_info). When the agent's cgroup still holds processes (the
// agent itself), the agent first moves itself into a `gpufleet-agent` leaf: cgroup v2 enables
// controllers only for cgroups without processes of their own.
//
// Unavailable (cgroup v1, no cpu/memory controller, no permission) is not an error: `Detect`
// says why in one line, jobs run unlimited, and the caller prints that once.
#include <cstdint>
#include <string>

#include "core/result.h"

namespace gpufleet::agent {

struct JobLimits {
  int64_t cpu_milli = 0;   // 0: no CPU limit
  int64_t memory_mib = 0;  // 0: no memory limit
  bool any() const { return cpu_milli > 0 || memory_mib > 0; }
};

class CgroupLimits {
 public:
  // `root`: a cgroup v2 directory to place job cgroups under; "" finds the agent's own cgroup on
  // the cgroup2 mount (/proc/self/cgroup, /proc/self/mountinfo).
  static CgroupLimits Detect(const std::string& root = "");

  bool available() const { return available_; }
  const std::string& why_unavailable() const { return why_; }
  const std::string& jobs_dir() const { return jobs_dir_; }

  // Creates job `id`'s cgroup with `limits`; returns the path of its `cgroup.procs`, which the
  // job's shim writes itself into. Errors name the file that could not be written.
  core::Result<std::string> Prepare(int64_t id, const JobLimits& limits) const;
  // Removes job `id`'s cgroup once its processes have gone (best effort).
  void Remove(int64_t id) const;
  // For a launch: the cgroup.procs job `id` should join, or "" when it asks no limits or they
  // cannot be applied. The first time limits are asked but unavailable (or fail), says so on
  // stderr, prefixed with `who`; never an error. Not thread-safe.
  std::string ForLaunch(int64_t id, const JobLimits& limits, const char* who) const;

 private:
  bool available_ = false;
  std::string why_ = "not detected";
  std::string jobs_dir_;
  mutable bool said_ = false;
};

}  // namespace gpufleet::agent
