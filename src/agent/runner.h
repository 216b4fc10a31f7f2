#pragma once
// `Runner`: starts jobs as processes on this node and watches them.
//  - argv is executed directly (no shell unless the job's argv names one);
//  - each job gets its own process group (signals reach all of its processes), stdin from
//    /dev/null, stdout and stderr appended to its log file;
//  - environment, built from scratch (nothing of the agent's own passes, its credentials above
//    all): PATH, LANG and TZ when the agent has them, HOME, USER and LOGNAME of the job's account,
//    then the job's own variables, then CUDA_VISIBLE_DEVICES (the assigned GPUs), GPUFLEET_JOB_ID
//    and the torchrun variables for a single node (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
//    NODE_RANK, LOCAL_WORLD_SIZE), which the job cannot override;
//  - the job runs as its user's account (agent/run_as.h): a job whose account is missing, or
//    that would run as root without the admin's consent, fails at Launch with the reason;
//  - Stop sends SIGTERM to the group, then SIGKILL after the grace period;
//  - jobs outlive the Runner (and the agent): each runs under a shim process (agent/job_shim.h,
//    started with posix_spawn: launching never forks the agent) that records its exit status in
//    `<log>.exit`, so a restarted agent re-adopts it with `Adopt`.
// A launch that cannot exec (no such program, no permission) is an error at Launch, not a job
// that dies later. Not thread-safe: one owner calls it.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/container_command.h"
#include "agent/run_as.h"
#include "core/result.h"

namespace gpufleet::agent {

struct LaunchSpec {
  int64_t job_id = 0;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;  // "" : the home directory of the job's account
  std::vector<int> gpu_indices;
  std::vector<std::string> gpu_device_nodes;  // each GPU's device node (ContainerRun's)
  std::string user;  // the job's gpufleet user: it runs as that user's account (RunAsPolicy)
  std::string log_path;
  // gpufleet's variables for one rank of a multi-node job (MASTER_ADDR, RANK, ...); they replace
  // the single-node defaults.
  std::vector<std::pair<std::string, std::string>> launch_env;
  // This node's advertise address. For a rank of a multi-node job, the interface that holds it
  // becomes GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME unless the job sets them: gloo and NCCL
  // otherwise bind the interface of the host name, which Debian maps to a loopback address.
  std::string node_address;
  // Self-fencing: when set, the job's shim reads a deadline (milliseconds since the epoch, as
  // text) from this file every 250 ms; once it has passed, the shim stops the job (SIGTERM, then
  // SIGKILL after `lease_grace_s`) and leaves `<log>.fenced`. It keeps a job that its node's
  // controller will run elsewhere from running twice, even when the agent itself is dead.
  std::string lease_path;
  double lease_grace_s = 2;
  // The `cgroup.procs` files of the job's cgroups (CgroupLimits::Prepare: one per hierarchy on
  // cgroup v1), which the shim joins before starting the job; none: no cgroup. A shim that cannot
  // join fails the launch.
  std::vector<std::string> cgroup_procs;
  // When above 0, the job's output reaches its log through the shim, which keeps the first this
  // many bytes of the log, then writes one line saying the rest was dropped and discards it (the
  // job never blocks on a full pipe). 0: the job writes to its log file directly, without a cap.
  int64_t log_limit_bytes = 0;
  // A container job (agent/container_command.h): `container.image` set. The runtime's `run` is
  // what the shim starts (as root: the container takes the job's account with --user), the job's
  // variables go to a private env file beside the log, and the shim removes the container after.
  core::ContainerSpec container;
  core::PullPolicy pull = core::PullPolicy::kNever;
  std::string container_name;          // ContainerName(id, epoch)
  std::string container_cgroup_parent;  // the job's cgroup as the runtime names it ("" : none)
  std::string oom_watch_dir;            // a v1 memory cgroup whose OOM events the shim counts
  int64_t cpu_milli = 0;                // repeated to the runtime (--cpus)
  int64_t memory_mib = 0;               // sizes the job's own /dev/shm (0: the default)
};

// The name of the network interface holding `address` (an IP address, or a name resolved to
// one), or "" when no interface of this machine holds it.
std::string InterfaceHolding(const std::string& address);

// Left by a shim that stopped its job because the lease ran out (see LaunchSpec::lease_path).
std::string FencedFilePath(const std::string& log_path);

struct JobExit {
  int64_t job_id = 0;
  int exit_code = 0;     // the process's exit status, or 128 + signal
  int signal = 0;        // the signal that ended it, or 0
  bool stopped = false;  // ended after Stop (cancel or preemption)
  int64_t oom_events = 0;  // OOM events the shim saw in LaunchSpec::oom_watch_dir
};

// A container job's id, as its runtime recorded it (ContainerRemoveArgv).
std::string ContainerIdFilePath(const std::string& log_path);
// Where a job's exit status is recorded ("<code> <signal> <oom events>").
std::string ExitFilePath(const std::string& log_path);
// Run as root, why `program` (the shim) must not be run: it or a directory above it belongs to
// another account, or others than root may write there (a sticky directory such as /tmp is
// fine: no one else may replace root's entries in it); nothing when it is safe, or when this
// process is not root.
std::optional<std::string> UnsafeForRoot(const std::string& program);
// A container job's env file (private to the agent; removed with the job's other files).
std::string ContainerEnvFilePath(const std::string& log_path);
// The start time of process `pid` in clock ticks since boot (field 22 of /proc/PID/stat); 0 when
// there is no such process. With the pid it identifies a process even after pid reuse.
uint64_t ProcessStartTicks(pid_t pid);
// The same for this process's own child `child`, also once it has ended and is not yet reaped.
uint64_t ChildStartTicks(pid_t child);
// This boot of the machine (/proc/sys/kernel/random/boot_id), "" when unreadable. Start ticks
// count from boot, so only with it do pid and start time name one process across a reboot.
std::string CurrentBootId();

struct Launched {
  pid_t pid = 0;             // the job's shim, leader of its process group
  uint64_t start_ticks = 0;  // ProcessStartTicks(pid) at launch
  std::string boot_id;       // CurrentBootId() at launch ("": not recorded, any boot)
};

// The job shim's program (agent/job_shim.h): $GPUFLEET_SHIM when set (tests, unusual installs),
// else `gpufleet-shim` beside this process's executable.
std::string DefaultShimPath();

// Whether this process may give each host job an IPC namespace and a /dev/shm of its own
// (ShimSpec::private_shm_mib): root, with mount and IPC namespaces that a child can make. Found
// once, by a child that tries. "" when it can; else why not.
const std::string& PrivateShmUnavailable();

class Runner {
 public:
  explicit Runner(RunAsPolicy run_as = {}, std::string shim_path = DefaultShimPath())
      : run_as_(std::move(run_as)), shim_path_(std::move(shim_path)) {}
  // How container jobs reach the runtime and the GPUs (default: podman, no GPUs).
  void set_container_host(ContainerHost host) { container_host_ = std::move(host); }
  const ContainerHost& container_host() const { return container_host_; }
  // The shim's program path (DefaultShimPath unless given).
  const std::string& shim_path() const { return shim_path_; }
  ~Runner();  // leaves jobs running: a new Runner can Adopt them
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  core::Result<Launched> Launch(const LaunchSpec& spec);
  // Takes over a job another Runner launched: true when it still runs (same boot, pid and start
  // time) or has ended and left its exit file (Reap reports it next); false when neither, i.e. how
  // it ended is unknown. `container`: the job's container name when it is a container job ("" : a
  // host job).
  bool Adopt(int64_t job_id, const Launched& launched, const std::string& log_path,
             const std::string& container = "");
  // SIGKILL to every job's group (tests; an agent stopping for good).
  void KillAll();
  // SIGTERM now, SIGKILL once `grace_s` has passed (checked by Reap); false when not running.
  bool Stop(int64_t job_id, double grace_s);
  // Jobs that ended since the last call; never blocks.
  std::vector<JobExit> Reap();
  // One descriptor per job still running here that becomes readable (poll) when it ends, so a
  // caller can sleep until there is an exit to Reap. Owned by the Runner; valid until Reap.
  std::vector<int> ExitFds() const;
  bool running(int64_t job_id) const { return jobs_.count(job_id) > 0; }
  std::size_t size() const { return jobs_.size(); }

 private:
  struct Child {
    pid_t pid = 0;
    uint64_t start_ticks = 0;
    std::string exit_path;
    bool own_child = false;  // launched here (waitpid works), or adopted
    bool ended = false;      // adopted from its exit record: it had ended already
    bool stopping = false;
    std::chrono::steady_clock::time_point kill_at;
    int pidfd = -1;  // readable once it has ended (-1: none; ExitFds)
    // A container job: what removes its container. Its stop escalates by removing the container
    // (the runtime then returns, and the shim records the end) rather than by killing the shim's
    // group, which would kill the shim and leave the container to run on; the group is killed
    // only if that has not ended it kContainerKillWait later.
    std::vector<std::string> container_cleanup;
    bool cleanup_sent = false;
  };
  // Runs `child`'s container cleanup without waiting (its pid joins helpers_).
  void StartCleanup(Child& child);
  std::vector<pid_t> helpers_;  // cleanup processes not yet reaped
  // Longer than the shim's own cleanup may take (60 s), so a slow removal is not cut short.
  static constexpr std::chrono::seconds kContainerKillWait{75};
  // A pidfd of `pid`, or -1 (an older kernel, or the process is gone).
  static int OpenPidFd(pid_t pid);
  static bool MaySignal(const Child& child);
  RunAsPolicy run_as_;
  std::string shim_path_;
  ContainerHost container_host_;
  std::map<int64_t, Child> jobs_;
};

}  // namespace gpufleet::agent
