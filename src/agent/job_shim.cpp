#include "agent/job_shim.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/process_tree.h"

namespace gpufleet::agent {
namespace {

constexpr int kFixedArgs = 16;  // before "--" and the job's argv

bool ParseInt(const std::string& text, int64_t lo, int64_t hi, int64_t& out) {
  if (text.empty() || text.size() > 19) return false;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < lo || value > hi) return false;
  out = value;
  return true;
}

// An eventfd that counts OOM events of the v1 memory cgroup at `dir`, or -1.
int WatchOom(const std::string& dir) {
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int control = open((dir + "/memory.oom_control").c_str(), O_RDONLY | O_CLOEXEC);
  const int events = open((dir + "/cgroup.event_control").c_str(), O_WRONLY | O_CLOEXEC);
  bool ok = efd >= 0 && control >= 0 && events >= 0;
  if (ok) {
    char line[32];
    const int n = std::snprintf(line, sizeof line, "%d %d", efd, control);
    ok = n > 0 && write(events, line, static_cast<std::size_t>(n)) == n;
  }
  if (control >= 0) close(control);  // the registration holds its own reference
  if (events >= 0) close(events);
  if (!ok && efd >= 0) {
    close(efd);
    return -1;
  }
  return efd;
}

// One byte and room for one descriptor: a message of SendFd and ReceiveFd.
struct FdMessage {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
};

// Sends descriptor `fd` over the socket `sock` (SCM_RIGHTS); false on failure.
bool SendFd(int sock, int fd) {
  FdMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &m.msg, MSG_NOSIGNAL) == 1;
}

// The descriptor SendFd sent over `sock`, or -1.
int ReceiveFd(int sock) {
  FdMessage m;
  ssize_t got = -1;
  do {
    got = recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got != 1 || (m.msg.msg_flags & MSG_CTRUNC) != 0) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int))) {
    return -1;
  }
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

// In a child with the job's account: each of `spec.mount_checks` opened without following a
// symbolic link anywhere in its path, and readable (and writable for "rw:") by the account;
// true when all pass. A failure is reported over fd 3 as {kShimMountCheck, errno, index}.
// With `pinned` (a root shim), the child hands each checked descriptor back: the caller mounts
// exactly the object checked, so that renaming a directory of the path to a symbolic link after
// the check (the runtime, as root, follows links) reaches nothing the user could not.
bool MountSourcesReachable(const ShimSpec& spec, std::vector<int>* pinned) {
  int channel[2] = {-1, -1};
  if (pinned != nullptr && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    const int report[3] = {kShimMountCheck, errno, -1};
    (void)!write(3, report, sizeof report);
    return false;
  }
  const pid_t checker = fork();
  if (checker < 0) {
    const int err = errno;
    for (int end : channel) {
      if (end >= 0) close(end);
    }
    const int report[2] = {kShimFork, err};
    (void)!write(3, report, sizeof report);
    return false;
  }
  if (checker == 0) {
    // As root (a root agent), become the account; otherwise this already is it.
    if (geteuid() == 0 && (setgroups(spec.groups.size(), spec.groups.data()) != 0 ||
                           setgid(spec.gid) != 0 || setuid(spec.uid) != 0)) {
      const int report[3] = {kShimMountCheck, errno, -1};
      (void)!write(3, report, sizeof report);
      _exit(1);
    }
    for (std::size_t k = 0; k < spec.mount_checks.size(); ++k) {
      const std::string& check = spec.mount_checks[k];
      const char* path = check.c_str() + 3;
      open_how how{};
      how.flags = O_PATH | O_CLOEXEC;
      how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
      const long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
      int failed = fd < 0 ? errno : 0;
      struct stat st {};
      if (failed == 0 && fstat(static_cast<int>(fd), &st) != 0) failed = errno;
      const int mode = R_OK | (S_ISDIR(st.st_mode) ? X_OK : 0) | (check[1] == 'w' ? W_OK : 0);
      if (failed == 0) {
        // On the descriptor just checked, not the path again (kernel 5.8+; else the path).
        long ok = syscall(SYS_faccessat2, static_cast<int>(fd), "", mode, AT_EMPTY_PATH);
        if (ok != 0 && errno == ENOSYS) ok = access(path, mode);
        if (ok != 0) failed = errno;
      }
      if (failed == 0 && channel[1] >= 0 && !SendFd(channel[1], static_cast<int>(fd))) {
        failed = EPIPE;
      }
      if (failed != 0) {
        const int report[3] = {kShimMountCheck, failed, static_cast<int>(k)};
        (void)!write(3, report, sizeof report);
        _exit(1);
      }
      close(static_cast<int>(fd));
    }
    _exit(0);
  }
  if (channel[1] >= 0) close(channel[1]);
  if (checker > 0 && channel[0] >= 0) {
    // One descriptor per check, in order, until the child ends (SEQPACKET: one per message).
    for (std::size_t k = 0; k < spec.mount_checks.size(); ++k) {
      const int fd = ReceiveFd(channel[0]);
      if (fd < 0) break;
      pinned->push_back(fd);
    }
  }
  if (channel[0] >= 0) close(channel[0]);
  int status = 0;
  pid_t done = -1;
  while ((done = waitpid(checker, &status, 0)) < 0 && errno == EINTR) {
  }
  if (done != checker || !WIFEXITED(status)) {
    // Killed (it runs as the user, who may signal it) or lost: it reported nothing.
    const int report[3] = {kShimMountCheck, ECHILD, -1};
    (void)!write(3, report, sizeof report);
    return false;
  }
  if (WEXITSTATUS(status) != 0) return false;
  if (pinned != nullptr && pinned->size() != spec.mount_checks.size()) {
    const int report[3] = {kShimMountCheck, EPROTO, -1};
    (void)!write(3, report, sizeof report);
    return false;
  }
  return true;
}

// Bind-mounts each pinned source (a descriptor from MountSourcesReachable) on a root-only place
// beside the job's exit record, `<exit_path>.mount<k>`, and points the runtime's matching
// `--mount=type=bind,source=SRC,` argument there (ReleasePinnedMounts removes them). False, having
// reported over fd 3 and removed what it made, on failure.
bool PinMounts(const ShimSpec& spec, const std::vector<int>& pinned,
               std::vector<std::string>& args) {
  ReleasePinnedMounts(spec.exit_path);  // left by a shim that was killed
  for (std::size_t k = 0; k < pinned.size(); ++k) {
    const std::string source = spec.mount_checks[k].substr(3);
    const std::string place = spec.exit_path + ".mount" + std::to_string(k);
    struct stat st {};
    int made = fstat(pinned[k], &st);
    if (made == 0) {
      if (S_ISDIR(st.st_mode)) {
        made = mkdir(place.c_str(), 0700);
      } else {
        const int f =
            open(place.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        made = f >= 0 ? close(f) : -1;
      }
    }
    const std::string from = "/proc/self/fd/" + std::to_string(pinned[k]);
    if (made != 0 || mount(from.c_str(), place.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      const int report[3] = {kShimMountPin, errno, static_cast<int>(k)};
      (void)!write(3, report, sizeof report);
      ReleasePinnedMounts(spec.exit_path);
      return false;
    }
    // The runtime's argument for this mount (agent/container_command.cpp writes it so): fails
    // closed when it is not there, rather than let the runtime mount the unchecked path.
    const std::string was = "--mount=type=bind,source=" + source + ",";
    bool pointed = false;
    for (std::size_t a = 0; a < args.size() && !pointed; ++a) {
      if (args[a].rfind(was, 0) == 0) {
        args[a] = "--mount=type=bind,source=" + place + "," + args[a].substr(was.size());
        pointed = true;
      }
    }
    if (!pointed) {
      const int report[3] = {kShimMountPin, EPROTO, static_cast<int>(k)};
      (void)!write(3, report, sizeof report);
      ReleasePinnedMounts(spec.exit_path);
      return false;
    }
  }
  return true;
}

// Runs `argv` with no input or output and waits for it, at most 60 s (then SIGKILL).
void RunCleanup(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  for (int tick = 0; tick < 600; ++tick) {
    const pid_t done = waitpid(pid, nullptr, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return;
    const timespec pause{0, 100 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

void ReleasePinnedMounts(const std::string& exit_path) {
  for (int k = 0; k < 64; ++k) {
    const std::string place = exit_path + ".mount" + std::to_string(k);
    struct stat st {};
    if (lstat(place.c_str(), &st) != 0) break;  // numbered from 0, without gaps
    umount2(place.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    if (rmdir(place.c_str()) != 0) unlink(place.c_str());
  }
}

std::vector<std::string> ShimCommandLine(const ShimSpec& spec) {
  std::string groups;
  for (gid_t g : spec.groups) groups += (groups.empty() ? "" : ",") + std::to_string(g);
  std::string cgroups;  // one per line: cgroupfs paths hold no newline
  for (const std::string& p : spec.cgroup_procs) cgroups += (cgroups.empty() ? "" : "\n") + p;
  std::string cleanup;  // one argument per line: a container's name and runtime hold no newline
  for (const std::string& c : spec.cleanup) cleanup += (cleanup.empty() ? "" : "\n") + c;
  std::string checks;  // one per line: mount sources hold no control character
  for (const std::string& c : spec.mount_checks) checks += (checks.empty() ? "" : "\n") + c;
  std::vector<std::string> args = {std::to_string(spec.job_id),
                                   spec.exit_path,
                                   spec.fenced_path,
                                   spec.lease_path,
                                   cgroups,
                                   spec.workdir,
                                   std::to_string(spec.lease_grace_ms),
                                   std::to_string(spec.log_limit),
                                   spec.switch_user ? "1" : "0",
                                   std::to_string(spec.uid),
                                   std::to_string(spec.gid),
                                   groups.empty() ? "-" : groups,
                                   cleanup,
                                   spec.oom_watch_dir,
                                   checks,
                                   std::to_string(spec.private_shm_mib),
                                   "--"};
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  return args;
}

core::Result<ShimSpec> ParseShimCommandLine(const std::vector<std::string>& args) {
  if (args.size() < kFixedArgs + 2 || args[kFixedArgs] != "--") {
    return core::Error{"expected " + std::to_string(kFixedArgs) + " fields, --, and argv"};
  }
  ShimSpec spec;
  if (!ParseInt(args[0], 0, INT64_MAX, spec.job_id)) return core::Error{"a malformed job id"};
  spec.exit_path = args[1];
  spec.fenced_path = args[2];
  spec.lease_path = args[3];
  for (std::size_t start = 0; start < args[4].size();) {
    const std::size_t end = std::min(args[4].find('\n', start), args[4].size());
    if (end > start) spec.cgroup_procs.push_back(args[4].substr(start, end - start));
    start = end + 1;
  }
  spec.workdir = args[5];
  int64_t uid = 0, gid = 0, switch_user = 0;
  if (spec.exit_path.empty() || spec.fenced_path.empty() ||
      !ParseInt(args[6], 0, int64_t{1} << 40, spec.lease_grace_ms) ||
      !ParseInt(args[7], 0, int64_t{1} << 62, spec.log_limit) ||
      !ParseInt(args[8], 0, 1, switch_user) || !ParseInt(args[9], 0, 0xfffffffe, uid) ||
      !ParseInt(args[10], 0, 0xfffffffe, gid)) {
    return core::Error{"a malformed field"};
  }
  spec.switch_user = switch_user == 1;
  spec.uid = static_cast<uid_t>(uid);
  spec.gid = static_cast<gid_t>(gid);
  if (args[11] != "-") {
    std::size_t start = 0;
    while (start <= args[11].size()) {
      const std::size_t comma = std::min(args[11].find(',', start), args[11].size());
      int64_t g = 0;
      if (!ParseInt(args[11].substr(start, comma - start), 0, 0xfffffffe, g) ||
          spec.groups.size() >= 65536) {
        return core::Error{"a malformed group list"};
      }
      spec.groups.push_back(static_cast<gid_t>(g));
      start = comma + 1;
    }
  }
  for (std::size_t start = 0; start < args[12].size();) {
    const std::size_t end = std::min(args[12].find('\n', start), args[12].size());
    spec.cleanup.push_back(args[12].substr(start, end - start));
    start = end + 1;
  }
  spec.oom_watch_dir = args[13];
  for (std::size_t start = 0; start < args[14].size();) {
    const std::size_t end = std::min(args[14].find('\n', start), args[14].size());
    const std::string check = args[14].substr(start, end - start);
    if (check.rfind("ro:/", 0) != 0 && check.rfind("rw:/", 0) != 0) {
      return core::Error{"a malformed mount check"};
    }
    spec.mount_checks.push_back(check);
    start = end + 1;
  }
  if (!ParseInt(args[15], -1, int64_t{1} << 40, spec.private_shm_mib)) {
    return core::Error{"a malformed /dev/shm size"};
  }
  spec.argv.assign(args.begin() + kFixedArgs + 1, args.end());
  return spec;
}

std::string ShimEnvironmentBlock(const std::vector<std::string>& env) {
  std::string block;
  for (const std::string& e : env) {
    block += e;
    block += '\0';
  }
  return block;
}

core::Result<std::vector<std::string>> ParseShimEnvironmentBlock(const std::string& block) {
  if (!block.empty() && block.back() != '\0') {
    return core::Error{"an environment not ending in NUL"};
  }
  std::vector<std::string> env;
  for (std::size_t start = 0; start < block.size();) {
    const std::size_t end = block.find('\0', start);
    std::string entry = block.substr(start, end - start);
    if (entry.find('=') == std::string::npos || entry[0] == '=') {
      return core::Error{"an environment entry without NAME="};
    }
    env.push_back(std::move(entry));
    start = end + 1;
  }
  return env;
}

core::Result<std::vector<std::string>> ReadShimEnvironment(int fd) {
  (void)lseek(fd, 0, SEEK_SET);  // a pipe cannot seek, and starts at its start anyway
  std::string block;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return core::Error{std::string("reading the environment: ") + std::strerror(errno)};
    }
    block.append(buffer, static_cast<std::size_t>(n));
  }
  return ParseShimEnvironmentBlock(block);
}

void RunShim(const ShimSpec& spec) {
  // The job's environment becomes the shim's own only now, after the C library has started:
  // started as root with the user's variables, glibc would have read GLIBC_TUNABLES, MALLOC_*
  // and the like (and a dynamic shim, as in sanitized builds, LD_PRELOAD). execvp then searches
  // the job's PATH.
  static std::vector<char*> envp;
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  environ = envp.data();
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string exit_tmp = spec.exit_path + ".tmp";
  const std::string dropped_note = "\n[gpufleet: the log reached its limit of " +
                                   std::to_string(spec.log_limit) +
                                   " bytes; later output is dropped]\n";
  // fd 3 reaches the job only until its exec (which closes it): its exec's outcome.
  fcntl(3, F_SETFD, FD_CLOEXEC);
  // A write to the status pipe after the runner stopped waiting (it closed its end) must fail
  // with EPIPE, not kill the shim before it records anything.
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, SIG_IGN);  // a stop is for the job; the shim must live to record its end
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  // With a lease to watch, SIGCHLD stays blocked so that sigtimedwait wakes on the job's end.
  // (The Runner started the shim with SIGTERM, SIGINT and SIGHUP blocked: ignored now, an early
  // one is discarded as the mask changes.)
  sigprocmask(SIG_SETMASK, spec.lease_path.empty() ? &none : &chld, nullptr);
  for (const std::string& procs : spec.cgroup_procs) {
    // Join the job's cgroups first: the job and everything it forks inherit its limits.
    const int cg = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (cg < 0 || write(cg, "0", 1) != 1) {
      const int report[2] = {kShimCgroup, errno};
      (void)!write(3, report, sizeof report);
      _exit(127);
    }
    close(cg);
  }
  // A root shim mounts what was checked itself (PinMounts); one that is not root runs a rootless
  // runtime, which can reach no more than the user anyway.
  bool pinned_any = false;
  if (!spec.mount_checks.empty()) {
    std::vector<int> pinned;
    const bool as_root = geteuid() == 0;
    if (!MountSourcesReachable(spec, as_root ? &pinned : nullptr)) _exit(127);
    if (as_root) {
      static std::vector<std::string> runtime_args;
      runtime_args = spec.argv;
      const bool made = PinMounts(spec, pinned, runtime_args);
      for (int fd : pinned) close(fd);
      if (!made) _exit(127);
      pinned_any = true;
      argv.clear();
      for (const std::string& a : runtime_args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
    }
  }
  // Counts the OOM events of the job's memory cgroup and below (cgroup v1's notification: the
  // kernel signals it for the cgroup whose limit was hit, and its descendants' listeners).
  int oom_fd = -1;
  if (!spec.oom_watch_dir.empty()) oom_fd = WatchOom(spec.oom_watch_dir);
  // With a log limit, the job writes into a pipe and the shim copies it to the log (fd 1).
  int output[2] = {-1, -1};
  if (spec.log_limit > 0 && pipe2(output, O_CLOEXEC) != 0) {
    const int report[2] = {kShimPipe, errno};
    (void)!write(3, report, sizeof report);
    if (pinned_any) ReleasePinnedMounts(spec.exit_path);
    _exit(127);
  }
  // A host job's processes stay below the shim even when they leave its process group (setsid
  // in a double-forked child): orphaned, they become the shim's children, not init's, so they are
  // found and ended with the job on a node without cgroups. (A container's runtime manages its
  // own processes, and its monitor must be free to leave.)
  const bool own_leftovers = spec.cleanup.empty();
  if (own_leftovers) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  // Nor the agent's I/O priority, for the job and for this shim that writes its log: an agent
  // given a real-time I/O class (a unit's IOSchedulingClass=) would let every job's reads and
  // writes go before the node's own. Class "none" (0) follows the nice value (reset for the job
  // below) and needs no privilege; best effort, as those resets are.
  constexpr int kIoprioWhoProcess = 1;
  syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, 0);
  const pid_t job = fork();
  if (job < 0) {
    const int report[2] = {kShimFork, errno};
    (void)!write(3, report, sizeof report);
    if (pinned_any) ReleasePinnedMounts(spec.exit_path);
    _exit(127);
  }
  if (job == 0) {
    if (output[1] >= 0) {
      dup2(output[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copies
      dup2(output[1], STDERR_FILENO);
    }
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGTERM, SIG_DFL);  // ignored signals survive exec: give the job the defaults
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    umask(022);  // the servers' own umask (077) keeps their files private; jobs get the usual
    int step = 0;
    // The agent's standing is not the job's: an agent made hard to OOM-kill, reniced or given a
    // real-time policy by its service manager would hand that to every job. Best effort (an
    // agent that is not root cannot lower its own score, and then the job keeps it).
    if (const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); fd >= 0) {
      (void)!write(fd, "0", 1);
      close(fd);
    }
    setpriority(PRIO_PROCESS, 0, 0);
    const sched_param normal{};
    sched_setscheduler(0, SCHED_OTHER, &normal);
    // Nor its limits on those: a unit's LimitRTPRIO= or LimitNICE= would let the job take a
    // real-time policy again (and starve the node, its agent too) or raise its priority.
    const rlimit no_raise{0, 0};
    setrlimit(RLIMIT_RTPRIO, &no_raise);
    setrlimit(RLIMIT_NICE, &no_raise);
    // Its own /dev/shm and System V IPC (see ShimSpec::private_shm_mib), made as root. Mounts
    // the node makes later still reach it (slave propagation); its tmpfs never reaches the node.
    if (step == 0 && spec.private_shm_mib >= 0) {
      std::string options = "mode=1777";
      if (spec.private_shm_mib > 0)
        options += ",size=" + std::to_string(spec.private_shm_mib) + "m";
      // As the node's is: a node that mounts /dev/shm noexec keeps jobs from running code there.
      unsigned long flags = MS_NOSUID | MS_NODEV;
      struct statvfs node_shm {};
      if (statvfs("/dev/shm", &node_shm) == 0 && (node_shm.f_flag & ST_NOEXEC) != 0) {
        flags |= MS_NOEXEC;
      }
      if (unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
          mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
          mount("tmpfs", "/dev/shm", "tmpfs", flags, options.c_str()) != 0) {
        step = kShimPrivateShm;
      }
    }
    // The audit login id is the job's account, as a login would set it (pam_loginuid): the
    // agent's (unset for a service, an admin's uid when started from their shell) would credit
    // the job's actions to someone else in the audit log. Set while still root; the job, without
    // CAP_AUDIT_CONTROL, cannot change it. Best effort: a kernel without audit has no such file,
    // and one with immutable login ids refuses.
    if (step == 0 && spec.switch_user) {
      if (const int fd = open("/proc/self/loginuid", O_WRONLY | O_CLOEXEC); fd >= 0) {
        const std::string uid = std::to_string(spec.uid);
        (void)!write(fd, uid.data(), uid.size());
        close(fd);
      }
    }
    // The account first, then the directory: entered as root, a directory below one the user
    // may not pass would still serve relative paths to the job.
    if (step == 0 && spec.switch_user &&
        (setgroups(spec.groups.size(), spec.groups.data()) != 0 || setgid(spec.gid) != 0 ||
         setuid(spec.uid) != 0)) {
      step = kShimSetUser;
    }
    // None of the agent's capabilities: its ambient and inheritable sets (a unit's
    // AmbientCapabilities=, which a non-root agent hands through exec; the inheritable set
    // survives setuid and passes to a binary with file capabilities) are cleared for every job,
    // which needs no privilege. After a switch of account, the permitted and effective sets
    // too (setuid clears them, but not under SECBIT_NO_SETUID_FIXUP), and no id may be left 0.
    // A root runtime (a container job) still gets its capabilities at its exec, as root.
    if (step == 0) {
      if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        step = kShimCapabilities;  // (EINVAL: a kernel without ambient capabilities)
      }
      __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
      if (step == 0 && syscall(SYS_capget, &header, caps) != 0) step = kShimCapabilities;
      for (__user_cap_data_struct& c : caps) {
        c.inheritable = 0;
        if (spec.switch_user) c.permitted = c.effective = 0;
      }
      if (step == 0 && syscall(SYS_capset, &header, caps) != 0) step = kShimCapabilities;
      uid_t ids[3] = {0, 0, 0};
      if (step == 0 && spec.switch_user &&
          (getresuid(&ids[0], &ids[1], &ids[2]) != 0 || ids[0] == 0 || ids[1] == 0 ||
           ids[2] == 0)) {
        step = kShimCapabilities;
        errno = EPERM;
      }
    }
    // A session keyring of its own, the job's account's: it would otherwise possess the
    // agent's (root's, with whatever root keeps there: Kerberos tickets, keys), which setuid and
    // exec keep. A kernel without keys (or a sandbox that forbids keyctl) has none to hand on.
    if (step == 0 && syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, 0) < 0 && errno != ENOSYS &&
        errno != EPERM) {
      step = kShimKeyring;
    }
    if (step == 0 && chdir(spec.workdir.c_str()) != 0) step = kShimChdir;
    if (step == 0) {
      execvp(argv[0], argv.data());  // PATH: the job's (the shim's own environment)
      step = kShimExec;
    }
    const int report[2] = {step, errno};
    (void)!write(3, report, sizeof report);
    _exit(127);
  }
  close(3);  // only the job reports over the pipe
  close(STDIN_FILENO);
  close(STDERR_FILENO);
  int out_fd = output[0];
  if (output[1] >= 0) close(output[1]);
  if (out_fd < 0) close(STDOUT_FILENO);  // the job writes the log itself
  // Copies what the job wrote to the log (fd 1), up to the limit; what read() returned.
  struct stat out_stat {};
  int64_t logged = fstat(STDOUT_FILENO, &out_stat) == 0 ? out_stat.st_size : 0;
  bool noted_drop = false;
  auto copy_output = [&]() -> ssize_t {
    char buffer[65536];
    const ssize_t n = read(out_fd, buffer, sizeof buffer);
    if (n <= 0) return n;
    ssize_t keep = n;
    if (logged + keep > spec.log_limit)
      keep = logged < spec.log_limit ? spec.log_limit - logged : 0;
    for (ssize_t done = 0; done < keep;) {
      const ssize_t w = write(STDOUT_FILENO, buffer + done, static_cast<std::size_t>(keep - done));
      if (w <= 0 && errno != EINTR) break;
      if (w > 0) done += w;
    }
    logged += keep;
    if (keep < n && !noted_drop) {
      noted_drop = true;
      (void)!write(STDOUT_FILENO, dropped_note.data(), dropped_note.size());
    }
    return n;
  };
  // Reads once when output is ready within 250 ms; closes the pipe at its end (every writer
  // gone: the job's own end is near).
  auto pump_output = [&]() {
    pollfd ready{out_fd, POLLIN, 0};
    if (poll(&ready, 1, 250) <= 0) return;
    const ssize_t n = copy_output();
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
      close(out_fd);
      out_fd = -1;
    }
  };
  int status = 0;
  int code = 127;
  int sig = 0;
  bool fenced = false;
  bool job_reaped = false;
  // Reaps every child that has ended (orphans the shim adopted as well: a job that daemonizes a
  // process per step must not fill the node with zombies); whether the job was one of them, or
  // the shim has no children left. With `block`, waits for at least one.
  const auto reap = [&](bool block) {
    for (;;) {
      int child_status = 0;
      const pid_t done = waitpid(-1, &child_status, block ? 0 : WNOHANG);
      if (done == job) {
        status = child_status;
        job_reaped = true;
        return true;
      }
      if (done < 0 && errno == EINTR) continue;
      if (done < 0) return true;  // ECHILD: nothing left to wait for
      if (done == 0) return false;
    }
  };
  if (job > 0 && (!spec.lease_path.empty() || out_fd >= 0)) {
    // Wait for the job, copying its output as it comes and checking the lease every 250 ms.
    int64_t kill_at = 0;
    for (;;) {
      if (reap(false)) break;
      if (spec.lease_path.empty()) {
        if (out_fd >= 0) {
          pump_output();
        } else {
          while (!reap(true)) {
          }
          break;
        }
        continue;
      }
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      const int64_t now_ms = int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
      if (!fenced) {
        char text[32] = {};
        int64_t deadline = 0;
        const int lease_fd = open(spec.lease_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (lease_fd >= 0) {
          const ssize_t n = read(lease_fd, text, sizeof text - 1);
          close(lease_fd);
          for (ssize_t k = 0; k < n && text[k] >= '0' && text[k] <= '9'; ++k) {
            deadline = deadline * 10 + (text[k] - '0');
          }
        }
        if (deadline > 0 && now_ms > deadline) {
          fenced = true;
          const int marker =
              open(spec.fenced_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
          if (marker >= 0) close(marker);
          kill(-getpid(), SIGTERM);  // the whole group; the shim ignores it
          if (own_leftovers) SignalDescendants(getpid(), SIGTERM, getpid());  // and what left it
          kill_at = now_ms + spec.lease_grace_ms;
        }
      } else if (now_ms >= kill_at) {
        kill(job, SIGKILL);
      }
      if (out_fd >= 0) {
        pump_output();
      } else {
        const timespec tick{0, 250 * 1000 * 1000};
        sigtimedwait(&chld, nullptr, &tick);
      }
    }
    if (out_fd >= 0) {
      // What the job wrote before it ended; a child it left behind may keep the pipe open,
      // so take only what is there now.
      // (At most 64 reads: a child still writing cannot hold the shim here.)
      fcntl(out_fd, F_SETFL, O_NONBLOCK);
      for (int reads = 0; reads < 64 && copy_output() > 0; ++reads) {
      }
      close(out_fd);
    }
  } else if (job > 0) {
    while (!reap(true)) {
    }
  }
  // What the job left running ends with it, as its cgroup's processes do where it has one: also
  // what left its process group. As their subreaper the shim is handed every orphan, so killing
  // and reaping until it has no child left misses none (for at most 2 s: a process in D state
  // dies only once it wakes, and init reaps it then).
  if (job > 0 && own_leftovers) {
    timespec began{};
    clock_gettime(CLOCK_MONOTONIC, &began);
    for (;;) {
      SignalDescendants(getpid(), SIGKILL);
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      if (ChildrenOf(getpid()).empty()) break;
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - began.tv_sec >= 2) break;
      usleep(1000);
    }
  }
  if (job_reaped) {
    if (WIFEXITED(status)) code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
      sig = WTERMSIG(status);
      code = 128 + sig;
    }
  }
  int64_t oom_events = 0;
  if (oom_fd >= 0) {
    uint64_t count = 0;
    if (read(oom_fd, &count, sizeof count) == static_cast<ssize_t>(sizeof count)) {
      oom_events = static_cast<int64_t>(count);
    }
  }
  if (!spec.cleanup.empty()) {
    // A container runtime reports the container's death by signal N as status 128 + N.
    if (sig == 0 && code > 128 && code <= 128 + 64) sig = code - 128;
    RunCleanup(spec.cleanup);
  }
  if (pinned_any) ReleasePinnedMounts(spec.exit_path);
  // "<exit code> <signal> <oom events>\n", written to a temporary name and renamed: a reader
  // never sees half.
  char text[80];
  const int len = std::snprintf(text, sizeof text, "%d %d %lld\n", code, sig,
                                static_cast<long long>(oom_events));
  const int fd = open(exit_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    // No fsync: the record must outlive the agent, not the machine (a reboot ends the job
    // too, and a job without a record is then reported lost, which is the truth). An fsync
    // per job end cost a journal commit each and capped job throughput.
    (void)!write(fd, text, static_cast<std::size_t>(len > 0 ? len : 0));
    close(fd);
    rename(exit_tmp.c_str(), spec.exit_path.c_str());
  }
  if (fenced) {
    kill(-getpid(), SIGKILL);  // what the job left in its group (and the shim, last)
  }
  _exit(code & 0xff);
}

}  // namespace gpufleet::agent
