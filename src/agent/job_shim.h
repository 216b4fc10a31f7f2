#pragma once
// The job shim: the small program (`gpufleet-shim`, built static beside `gpufleet-full`) that
// the Runner starts with posix_spawn for each job, so that a launch never forks the server (a
// fork copies its page tables and costs copy-on-write faults while it runs on).
//
// The shim leads the job's process group, joins the job's cgroup, forks the job (switching to the
// job's account, then entering its working directory, then exec'ing argv with PATH searched in
// the job's own environment, which is the shim's), copies its output to the log up to a cap,
// watches the lease, and writes `<code> <signal>` to the exit file when the job ends, so jobs
// outlive the agent and are re-adopted by the shim's pid and start time. The record is
// `<code> <signal> <oom events>` (the third: OOM events seen in `oom_watch_dir`, 0 without one).
//
// The Runner passes: stdin /dev/null, stdout and stderr the log, fd 3 the write end of a status
// pipe, fd 4 the job's environment (kShimEnvFd), nothing else; an empty environment of its own
// (so that the C library of a root process never reads the user's variables); SIGTERM, SIGINT
// and SIGHUP blocked (the shim ignores them, so an early stop cannot kill it before it records
// the job's end). The job's environment never travels on the command line, which every local
// account can read (/proc/PID/cmdline): a user's secrets in `--env` would be public. A failure
// before the job's exec is reported over fd 3 as ints {step, errno[, detail]} (ShimStep); the job's
// successful exec closes fd 3 (close-on-exec), which the Runner reads as "started".
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpufleet::agent {

// What failed before the job's exec, as reported over the status pipe.
enum ShimStep : int {
  kShimChdir = 1,          // entering the working directory
  kShimSetUser = 2,        // setgroups / setgid / setuid
  kShimExec = 3,           // exec of argv[0]
  kShimCgroup = 4,         // joining the cgroup
  kShimPipe = 5,           // making the output pipe
  kShimBadArgs = 6,        // a command line the shim cannot read (a mismatched shim binary)
  kShimFork = 7,           // forking the job
  kShimMountCheck = 8,     // a container's mount source, checked as the job's account (third int:
                           // which mount)
  kShimMountPin = 9,       // mounting a checked source for the runtime (third int: which mount)
  kShimKeyring = 10,       // a session keyring of the job's own
  kShimPrivateShm = 11,    // an IPC namespace and a /dev/shm of the job's own
  kShimCapabilities = 12,  // dropping the agent's capabilities (or a root id left after the switch)
};

// Unmounts and removes what a root shim mounted for a container job beside its exit record
// (`<exit_path>.mount<k>`): the shim does it when the container has ended, the agent again when
// it reaps a shim that was killed. Nothing when there is none.
void ReleasePinnedMounts(const std::string& exit_path);

struct ShimSpec {
  // The job's id, the shim's first argument: the node's GPU sampler attributes a process without
  // a job cgroup to the job whose shim (run by the agent's account) it descends from
  // (gpu/process_info.h), which a job's own processes cannot forge as they can their environment.
  int64_t job_id = 0;
  std::string exit_path;    // where `<code> <signal>\n` goes when the job ends
  std::string fenced_path;  // left when the shim stopped the job because the lease ran out
  std::string lease_path;   // "" : no lease to watch (LaunchSpec::lease_path)
  // The cgroup.procs files of the job's cgroups (one per hierarchy on cgroup v1); none: no cgroup.
  std::vector<std::string> cgroup_procs;
  std::string workdir;
  int64_t lease_grace_ms = 2000;
  int64_t log_limit = 0;  // 0: the job writes the log itself, uncapped
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  // A container job (agent/container_command.h): argv is the runtime's `run`; once it has ended
  // the shim runs `cleanup` (removing the container, killing it if it still runs), and reads an
  // exit status above 128 as the container's death by signal (the runtime reports it so).
  std::vector<std::string> cleanup;
  // A cgroup v1 memory directory whose OOM events the shim counts (cgroup.event_control), for the
  // exit record: the OOM killer's victim may sit in a child cgroup (the container's) that is gone
  // by the time the agent reads the job's figures. "" : none.
  std::string oom_watch_dir;
  // A container's bind-mount sources, "ro:/path" or "rw:/path": before the runtime starts, a child
  // with the job's account (uid, gid, groups below, even when switch_user is false) opens each
  // without following any symbolic link and checks it may read it (and write it, for rw), so that
  // the root runtime never mounts what the user could not reach themselves.
  std::vector<std::string> mount_checks;
  // At least 0 (a root shim's host job): before it takes the job's account, the job gets an IPC
  // namespace and a mount namespace of its own, with a tmpfs of this many MiB on /dev/shm (0:
  // the kernel's default size, half the memory), so that what it leaves there and in System V
  // shared memory goes with its last process, charged to its own cgroup meanwhile, and no other
  // job sees it. -1: the node's /dev/shm and IPC namespace.
  int64_t private_shm_mib = -1;
  std::vector<std::string> env;   // the job's, "NAME=VALUE", passed on kShimEnvFd (see above)
  std::vector<std::string> argv;  // the job's
};

// The shim's command line after its program name: every field but `env`; ParseShimCommandLine
// reads it back (with `env` empty).
std::vector<std::string> ShimCommandLine(const ShimSpec& spec);
core::Result<ShimSpec> ParseShimCommandLine(const std::vector<std::string>& args);

// The descriptor on which the shim finds the job's environment: a memory file (memfd) holding
// ShimEnvironmentBlock(env), read from its start to its end and closed before anything else.
inline constexpr int kShimEnvFd = 4;
// `env`'s entries, each followed by a NUL byte.
std::string ShimEnvironmentBlock(const std::vector<std::string>& env);
// The entries of a block made by ShimEnvironmentBlock; an error for an entry without NAME= or a
// block that does not end in NUL.
core::Result<std::vector<std::string>> ParseShimEnvironmentBlock(const std::string& block);
// Reads the whole block from `fd` (from offset 0 when it can seek) and parses it.
core::Result<std::vector<std::string>> ReadShimEnvironment(int fd);

// Runs the shim for `spec` in this process and exits with the job's status; never returns.
[[noreturn]] void RunShim(const ShimSpec& spec);

}  // namespace gpufleet::agent
