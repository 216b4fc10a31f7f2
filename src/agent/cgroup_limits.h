#pragma once
// `CgroupLimits`: one cgroup per job, for its CPU and memory limits and for measuring what it
// used, on cgroup v2 or, where the kernel mounts only v1 hierarchies, on cgroup v1.
//
// Layout: under the agent's own cgroup (or `--cgroup-root`), a `gpufleet-jobs-<instance>` cgroup
// (one per agent: several agents or `up` servers on one machine never share a job's cgroup), and
// one `gpufleet-job-<id>` cgroup per job in it (every job gets one, limited or not, so that every
// job is measured). The job's shim joins it before the job starts, so everything the job forks
// is limited and counted too, and the cgroup path names the job for the GPU process view
// (gpu/process_info). A container job's runtime makes child cgroups in the job's (its own and its
// monitor's): processes, kills and removal cover the job's whole subtree.
//  - v2: the cpu and memory controllers enabled on `gpufleet-jobs`; `cpu.max` (quota per 100 ms)
//    and `memory.max`. Where the hierarchy offers memory but not cpu (a delegation of memory
//    only), memory alone: memory limits hold, --cpus does not, and every figure is still read
//    from the job's cgroup. When the agent's cgroup still holds processes (the agent itself), the
//    agent first moves itself into a `gpufleet-agent` leaf: v2 enables controllers only for
//    cgroups without processes of their own.
//  - v1: the same two levels in each of the cpu, cpuacct, memory and blkio hierarchies (once per
//    hierarchy where controllers share one); `cpu.cfs_quota_us` per `cpu.cfs_period_us` of
//    100 ms, `memory.limit_in_bytes` and, where swap is accounted, `memory.memsw.limit_in_bytes`
//    at the same value (no swap beyond the limit). cpu and memory are required; a missing
//    cpuacct or blkio hierarchy only leaves those figures unmeasured.
//    Where the devices hierarchy is mounted, a job's cgroup there denies it the GPUs of the node it
//    was not given (Slurm's ConstrainDevices): CUDA_VISIBLE_DEVICES alone is a convention a job
//    can ignore. Container jobs are left to the runtime, which passes only their own GPUs.
//    Every hierarchy uses the agent's path in the memory hierarchy, so that a container
//    runtime's --cgroup-parent (one path for all hierarchies) is the job's cgroup in each.
//  - Both: where the pids controller is there (v2: offered; v1: its hierarchy mounted), each job
//    may hold at most `JobPidsMax()` processes and threads (`pids.max`), so that one job (a fork
//    bomb, a runaway loader) cannot take every pid of the node and stop other jobs and the agent
//    from starting processes; and all of the agent's jobs together at most three quarters of
//    pid_max (`pids.max` of the jobs cgroup), so that several jobs cannot either.
//  - Both: all of the agent's jobs together hold at most the node's memory less a reserve
//    (`JobsMemoryCapBytes`): the jobs cgroup's `memory.max` (v2) or `memory.limit_in_bytes`
//    (v1). A job without --memory, or several, then meet the kernel's OOM killer inside that
//    cgroup, not node-wide where it may pick the agent or `up`'s controller; tmpfs pages a job
//    left (/dev/shm) stay charged there after it ends.
//  - v2, where swap is accounted: a job with a memory limit gets no swap (`memory.swap.max` 0),
//    as v1's memory+swap limit at the memory limit.
//  - Stopping what a job left (`Release`) cannot be outrun by a process that keeps forking: on v2
//    the kernel kills the whole cgroup at once (`cgroup.kill`, Linux 5.14+); on v1, where the
//    freezer hierarchy is mounted, each job has a cgroup there too, frozen before its processes
//    are killed (a frozen process cannot fork) and thawed after, so that they die. Elsewhere the
//    pids are killed one by one, again at each later `ReleasePending` until none is left.
// Unavailable (no usable hierarchy, no permission) is not an error: `Detect` says why in one line,
// jobs run unlimited and are measured from /proc (agent/job_usage.h), and the caller says so once.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/host_usage.h"
#include "core/result.h"

namespace gpufleet::agent {

struct JobLimits {
  int64_t cpu_milli = 0;   // 0: no CPU limit
  int64_t memory_mib = 0;  // 0: no memory limit
  bool any() const { return cpu_milli > 0 || memory_mib > 0; }
};

enum class CgroupVersion { kNone, kV1, kV2 };

// The devices-cgroup rule for the character device at `path` ("c 195:3"); "" when `path` is not
// a character device (absent, a link to nothing, a plain file).
std::string DeviceRule(const std::string& path);

class CgroupLimits {
 public:
  // Finds the agent's own cgroup: on the cgroup2 mount when it offers the memory controller (and
  // cpu, for CPU limits), else on the v1 hierarchies (/proc/self/mountinfo, /proc/self/cgroup).
  // `root`: a cgroup v2 directory to use instead (tests, `--cgroup-root`); v1 is not tried then.
  // `instance` names this agent's jobs cgroup (InstanceTag; "" : plain `gpufleet-jobs`).
  static CgroupLimits Detect(const std::string& root = "", const std::string& instance = "");
  // v1 with the agent's cgroup directory in each hierarchy, by controller name ("cpu",
  // "cpuacct", "memory", "blkio"; controllers sharing a hierarchy name the same directory).
  static CgroupLimits DetectV1(const std::map<std::string, std::string>& own_dirs,
                               const std::string& instance = "");
  // A short tag that tells this agent from others on the machine and stays the same across its
  // restarts (so it re-adopts its jobs' cgroups): 8 hex digits of a hash of its data directory.
  static std::string InstanceTag(const std::string& data_dir);

  CgroupVersion version() const { return version_; }
  bool available() const { return version_ != CgroupVersion::kNone; }
  // Why not cgroups (unavailable); why no CPU limits ("cgroup-v2-memory"); else empty.
  const std::string& why_unavailable() const { return why_; }
  // What this node enforces and measures with, for the heartbeat and `gpufleet nodes`:
  // "cgroup-v2", "cgroup-v2-memory" (v2 without the cpu controller: memory limits, no CPU
  // limits), "cgroup-v1" or "none".
  std::string_view Kind() const;
  // Whether a job's --cpus is enforced here.
  bool CpuLimited() const { return available() && (version_ != CgroupVersion::kV2 || v2_cpu_); }
  // The job's cgroup directories (one per hierarchy; empty when unavailable).
  std::vector<std::string> JobDirs(int64_t id) const;
  // The jobs that have a cgroup here now (whether or not anything runs in it).
  std::vector<int64_t> JobIds() const;

  // Creates job `id`'s cgroups with `limits` (none asked: unlimited, still measured); returns the
  // `cgroup.procs` files the job's shim writes itself into. A cgroup of the same name left from
  // before (a crash; a store reset) is emptied and made anew, so no count carries over. Errors
  // name the file at fault.
  // `runtime_leaf` (a container job): on v2 the shim and the container runtime join a leaf
  // `runtime` below the job's cgroup instead, so that the job's cgroup holds no process of its own
  // and the runtime may enable controllers for the container's cgroup beside it (v2's rule: a
  // cgroup that hands controllers to children holds no processes). v1: no difference.
  // `denied_devices`: device rules ("c MAJ:MIN", DeviceRule) the job may not open, read or
  // write (the GPUs it was not given), where ConfinesDevices(); ignored elsewhere.
  core::Result<std::vector<std::string>> Prepare(
      int64_t id, const JobLimits& limits, bool runtime_leaf = false,
      const std::vector<std::string>& denied_devices = {}) const;
  // Once job `id`'s main process has ended: SIGKILLs what is left of it (the processes in its
  // cgroups; without cgroups on the node or of this job, its process group `pgid`, when that
  // still has members and the
  // group's id is not another process's now: one whose start time differs from `pgid_start`),
  // then removes its cgroups. A cgroup whose killed processes have not gone yet is removed by a
  // later call.
  void Release(int64_t id, pid_t pgid, uint64_t pgid_start = 0);
  // Kills and removes again what earlier Release calls left (call it now and then).
  void ReleasePending();
  // v1, where an older agent made job cgroups at its own path of each hierarchy (before one path
  // served all, see above) and that path differs: thaws any left frozen there (an agent that
  // died mid-release) and removes those that are empty, then their jobs cgroup. Never kills: a
  // re-adopted job still running there is left alone (its CPU is then measured and limited
  // there, as before). Called by ReleasePending.
  void TidyOtherPaths() const;
  // When the agent stops for good: removes its jobs cgroup if no job cgroup is left in it (a job
  // still running keeps it, for the next start to re-adopt).
  void RemoveJobsCgroupIfEmpty() const;
  // For a launch: the cgroup.procs files job `id` joins, or none when cgroups are unavailable or
  // could not be prepared. When limits were asked and cannot be applied, says so on stderr once,
  // prefixed with `who`; never an error. Not thread-safe.
  std::vector<std::string> ForLaunch(int64_t id, const JobLimits& limits, const char* who,
                                     bool runtime_leaf = false,
                                     const std::vector<std::string>& denied_devices = {}) const;
  // Whether Prepare can keep a job off devices: v1's devices hierarchy, or on v2 a BPF device
  // program attached to the job's cgroup (agent/device_filter.h; root, and a kernel with BPF
  // cgroup programs). When not, a job reaches every GPU it opens, whatever CUDA_VISIBLE_DEVICES
  // says.
  // Why not, on v2 ("" where it does, or where nothing was tried).
  const std::string& devices_unconfined_why() const { return devices_why_; }
  bool ConfinesDevices() const {
    return (version_ == CgroupVersion::kV1 && v1_jobs_.count("devices") > 0) ||
           (version_ == CgroupVersion::kV2 && v2_devices_);
  }

  // Job `id`'s cgroup as a container runtime names it for --cgroup-parent: its path from the root
  // of the cgroup2 hierarchy or, on v1, of the memory hierarchy (the runtime makes the container's
  // cgroup below it in every hierarchy); "" when unknown (no cgroups, or a --cgroup-root).
  std::string ContainerParent(int64_t id) const;
  // Job `id`'s v1 memory cgroup directory, whose OOM events a container job's shim counts ("" on
  // v2, where memory.events counts the whole subtree, or without cgroups).
  std::string OomWatchDir(int64_t id) const;

  // What job `id` has used so far, from its cgroups (source kNone when it has none). Run-queue
  // wait is not a cgroup figure: agent/job_usage.h adds it from /proc.
  core::HostUsage ReadUsage(int64_t id) const;
  // The processes in job `id`'s cgroup (empty when it has none).
  std::vector<pid_t> Processes(int64_t id) const;
  // The most processes and threads one job may hold: a quarter of the kernel's pid_max, at least
  // 1024 (0: the pids controller is not available, so there is no such limit).
  int64_t JobPidsMax() const { return pids_max_; }
  // What all jobs together may hold on a node of `mem_total_bytes`: that less a twentieth of it,
  // the reserve within 512 MiB..8 GiB (the agent, a controller beside it, the system's daemons).
  static int64_t JobsMemoryCapBytes(int64_t mem_total_bytes);

 private:
  CgroupVersion version_ = CgroupVersion::kNone;
  std::string why_ = "not detected";
  std::string jobs_dir_;                         // v2: the gpufleet-jobs cgroup
  bool v2_devices_ = false;  // v2: job cgroups take a BPF device program (ConfinesDevices)
  std::string devices_why_;  // v2: why not
  std::map<std::string, std::string> v1_jobs_;  // v1: controller -> its gpufleet-jobs cgroup
  std::vector<std::string> v1_disks_;           // v1: MAJ:MIN of the disks (blkio rules)
  std::string relative_jobs_;  // the jobs cgroup from its hierarchy's root (ContainerParent)
  // v1: jobs cgroups at older paths, until TidyOtherPaths has removed them.
  mutable std::vector<std::string> v1_other_jobs_;
  // Released jobs whose cgroups are still there (a launch of the same job again takes it back).
  mutable std::set<int64_t> unremoved_;
  // Jobs ForLaunch launched without their cgroup (Prepare failed): Release kills their group.
  mutable std::set<int64_t> launched_without_;
  // v1 with a freezer hierarchy: freezes job `id`'s cgroup there (waiting up to 100 ms for it to
  // take, the first time for this job only) and returns its freezer.state file to thaw after the
  // kill; "" when there is none, or it holds no process.
  std::string FreezeJob(int64_t id) const;
  mutable std::set<int64_t> freeze_waited_;  // jobs FreezeJob waited for once already
  mutable bool said_ = false;
  mutable bool said_cpu_ = false;
  mutable bool said_tree_ = false;
  bool v2_cpu_ = true;  // v2: the cpu controller is enabled for job cgroups
  int64_t pids_max_ = 0;  // per job (JobPidsMax); 0: no pids controller
};

}  // namespace gpufleet::agent
