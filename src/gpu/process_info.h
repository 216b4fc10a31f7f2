#pragma once
// `ProcessInspector`: who runs a GPU process. Reads /proc/<pid> for the owner's uid (mapped to a
// user name), the command line, and the gpufleet job it belongs to: the cgroup path the agent
// created (".../gpufleet-job-<id>..." or ".../gpufleet/job-<id>..."), which a process cannot
// leave; else (nodes without job cgroups) the job shim it descends from (a child subreaper, so a
// job's processes stay below it), whose first argument is the job's id; else the
// `GPUFLEET_JOB_ID` variable the runner sets, which any process can set (an ssh session's). A pid
// that cannot be read (gone, or another user's environment without privileges) yields what could be
// read; never an error.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gpufleet::gpu {

struct ProcessOwner {
  std::int64_t uid = -1;
  std::string user;
  std::string command;
  std::string job_id;
};

// The job id in a /proc/<pid>/cgroup file's text, or "" (exposed for tests).
std::string JobIdFromCgroup(std::string_view cgroup_text);
// The value of GPUFLEET_JOB_ID in a NUL-separated environment block, or "" (exposed for tests).
std::string JobIdFromEnviron(std::string_view environ_block);

class ProcessInspector {
 public:
  // `proc_root` is "/proc" except in tests.
  explicit ProcessInspector(std::string proc_root = "/proc", double cache_seconds = 30.0);

  // What /proc says about `pid`, cached for `cache_seconds` (of the caller's clock `now_s`) so a
  // 1 Hz sampler reads each process's files about once a minute rather than every second.
  const ProcessOwner& Lookup(std::uint32_t pid, double now_s);

 private:
  ProcessOwner Read(std::uint32_t pid) const;
  // The id of the job whose shim, run by this process's account, `pid` descends from; "" when
  // none is, with `outside_every_job` true only when the walk reached init.
  std::string JobOfShimAbove(std::uint32_t pid, bool& outside_every_job) const;
  std::string UserName(std::int64_t uid) const;

  struct Entry {
    ProcessOwner owner;
    double read_at_s = 0;
  };
  std::string proc_root_;
  double cache_seconds_;
  std::unordered_map<std::uint32_t, Entry> cache_;
  double last_sweep_s_ = 0;
};

}  // namespace gpufleet::gpu
