#pragma once
// `JobUsageMeter`: what each running job uses of its node's host, for the heartbeat, the job's
// usage summary and the advisor.
//  - With a job cgroup (agent/cgroup_limits.h), its figures come from there, and stay readable
//    after the job ended until the cgroup is removed: read the job's final usage before that.
//  - Run-queue wait (`cpu_wait_us`) comes from /proc/PID/schedstat of the job's processes on every
//    version; the wait of processes that ended between two samples is kept, that of a process
//    that lived and ended between two samples is missed.
//  - On cgroup v1, I/O bytes are the larger of blkio's and the sum of /proc/PID/io over the job's
//    processes: recent kernels count v1 blkio only on devices that have a throttle rule.
//  - I/O stall (`io_blocked_us`) is estimated on every source: a sample that finds one of the
//    job's processes in D state (uninterruptible sleep, mostly I/O) adds the time since the last
//    sample. cgroup v2 also gives real I/O pressure (PSI); v1 and /proc have only this.
//  - Without a cgroup, CPU time, memory (resident set) and I/O bytes are summed over the
//    processes of the job's process group and those below its shim (which keeps what left the
//    group; process_tree.h) from /proc, with the same caveat; the peak is the
//    largest sum seen at a sample; throttling, OOM kills and pressure are not measured.
// Not thread-safe: one owner samples.
#include <sys/types.h>

#include <cstdint>
#include <map>

#include "agent/cgroup_limits.h"
#include "core/host_usage.h"

namespace gpufleet::agent {

class JobUsageMeter {
 public:
  // `cgroups` must outlive the meter (it may be re-detected in place).
  explicit JobUsageMeter(const CgroupLimits& cgroups) : cgroups_(&cgroups) {}

  // Job `id`'s usage now; `leader` is its shim's pid, which leads its process group. Without a
  // cgroup, `leader`'s descendants count too unless `below_leader` is false (a shim already
  // reaped: its pid may be another process's now).
  core::HostUsage Sample(int64_t id, pid_t leader, bool below_leader = true);
  // The last sample of job `id` (unmeasured when there was none).
  core::HostUsage Last(int64_t id) const;
  void Forget(int64_t id) { jobs_.erase(id); }

 private:
  struct PerProcess {
    uint64_t start_ticks = 0;
    int64_t cpu_ticks = 0, wait_ns = 0, read_bytes = 0, write_bytes = 0, rss_bytes = 0;
  };
  struct Track {
    std::map<pid_t, PerProcess> live;
    PerProcess retired;  // sums over processes that have ended
    bool saw_schedstat = false, saw_io = false;
    int64_t peak_rss_bytes = 0;
    int64_t blocked_us = 0;  // estimated time with a process in D state
    int64_t sampled_us = 0;  // steady clock at the previous sample (0: none yet)
    core::HostUsage last;
  };
  const CgroupLimits* cgroups_;
  std::map<int64_t, Track> jobs_;
};

// The processes whose process group is `pgid`, from /proc.
std::vector<pid_t> ProcessGroupMembers(pid_t pgid);

}  // namespace gpufleet::agent
