#include "agent/runner.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

namespace gpufleet::agent {
namespace {

std::string Join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
}

// Variables of the agent's own that a job may see: how to find programs, the locale, the zone.
// Nothing else passes (the agent's GPUFLEET_TOKEN would let any job act as an admin).
constexpr const char* kInheritedVariables[] = {"PATH", "LANG", "LC_ALL", "TZ"};

// The child's environment, from scratch: the allow-listed variables and the account's identity,
// overridden by the job's own, then by gpufleet's (which the job cannot override).
std::vector<std::string> Environment(const LaunchSpec& spec, const UnixAccount& account) {
  std::map<std::string, std::string> env;
  for (const char* name : kInheritedVariables) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["HOME"] = account.home;
  env["USER"] = account.name;
  env["LOGNAME"] = account.name;
  for (const auto& [k, v] : spec.env) env[k] = v;
  env["CUDA_VISIBLE_DEVICES"] = Join(spec.gpu_indices);
  env["GPUFLEET_JOB_ID"] = std::to_string(spec.job_id);
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(29500 + spec.job_id % 1000);
  env["WORLD_SIZE"] = "1";
  env["RANK"] = "0";
  env["NODE_RANK"] = "0";
  env["LOCAL_WORLD_SIZE"] = std::to_string(std::max<std::size_t>(1, spec.gpu_indices.size()));
  for (const auto& [k, v] : spec.launch_env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// "<code> <signal>" from an exit file; nothing when it is absent or unreadable.
std::optional<std::pair<int, int>> ReadExitFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return std::nullopt;
  int code = 0, sig = 0;
  const int n = std::fscanf(f, "%d %d", &code, &sig);
  std::fclose(f);
  if (n != 2) return std::nullopt;
  return std::make_pair(code, sig);
}

}  // namespace

std::string ExitFilePath(const std::string& log_path) { return log_path + ".exit"; }
std::string FencedFilePath(const std::string& log_path) { return log_path + ".fenced"; }

namespace {

// Field 22 of /proc/PID/stat; 0 when there is no such process, or when it is a zombie and
// `zombie_counts` is false.
uint64_t ReadStartTicks(pid_t pid, bool zombie_counts) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char buffer[1024];
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  // Fields after the command name (which may hold spaces) start after the last ')'; the state is
  // field 3 (a zombie counts as gone: it has ended) and the start time field 22.
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr || p[1] == '\0' || (p[2] == 'Z' && !zombie_counts)) return 0;
  for (int field = 0; field < 20 && *p != '\0'; ++p) {
    if (*p == ' ') ++field;
  }
  return std::strtoull(p, nullptr, 10);
}

}  // namespace

uint64_t ProcessStartTicks(pid_t pid) { return ReadStartTicks(pid, false); }
uint64_t ChildStartTicks(pid_t child) { return ReadStartTicks(child, true); }

// Whether `child`'s pid still names its process group: always for our own unreaped child; for an
// adopted one only while its start time matches (an ended job's pid may belong to another now).
bool Runner::MaySignal(const Child& child) {
  if (child.own_child) return true;
  return !child.ended && ProcessStartTicks(child.pid) == child.start_ticks;
}

void Runner::KillAll() {
  for (const auto& [id, child] : jobs_) {
    if (MaySignal(child)) kill(-child.pid, SIGKILL);
    if (child.own_child) waitpid(child.pid, nullptr, 0);
  }
  jobs_.clear();
}

bool Runner::Adopt(int64_t job_id, const Launched& launched, const std::string& log_path) {
  if (jobs_.count(job_id) || launched.pid <= 0) return false;
  Child child;
  child.pid = launched.pid;
  child.start_ticks = launched.start_ticks;
  child.exit_path = ExitFilePath(log_path);
  const bool alive =
      launched.start_ticks != 0 && ProcessStartTicks(launched.pid) == launched.start_ticks;
  if (!alive && !ReadExitFile(child.exit_path)) return false;
  child.ended = !alive;  // how it ended is on record: Reap reports it at once
  jobs_[job_id] = child;
  return true;
}

core::Result<Launched> Runner::Launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) return core::Error{"job " + std::to_string(spec.job_id) + ": empty argv"};
  if (jobs_.count(spec.job_id)) {
    return core::Error{"job " + std::to_string(spec.job_id) + " is already running here"};
  }
  auto identity = ResolveRunAs(run_as_, spec.user, geteuid());
  if (!identity) return core::Error{"job " + std::to_string(spec.job_id) + ": " + identity.error()};
  const UnixAccount& account = identity.value().account;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(spec.log_path).parent_path(), ec);
  const int log =
      open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log < 0) {
    return core::Error{"cannot open log " + spec.log_path + ": " + std::strerror(errno)};
  }
  // A planted link (hard or symbolic) must not make the agent hand another file to the job.
  struct stat log_stat {};
  if (fstat(log, &log_stat) != 0 || !S_ISREG(log_stat.st_mode) || log_stat.st_nlink != 1) {
    close(log);
    return core::Error{"job " + std::to_string(spec.job_id) + ": log " + spec.log_path +
                       " is not a regular file of its own; refusing to use it"};
  }
  // The job's user owns its log (and may read it); other local users may not.
  if (identity.value().switch_user) (void)!fchown(log, account.uid, account.gid);
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  const std::vector<std::string> env_strings = Environment(spec, account);
  std::vector<char*> envp;
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Without a working directory of its own, a job starts in its account's home (the log's folder
  // belongs to the agent and is not the job's to enter).
  const std::string workdir = spec.workdir.empty() ? account.home : spec.workdir;
  const uid_t uid = account.uid;
  const gid_t gid = account.gid;
  const bool switch_user = identity.value().switch_user;
  // The account's groups, looked up here: after fork only async-signal-safe calls may run, and
  // initgroups (NSS, malloc) in a child of a multi-threaded process can deadlock on a lock
  // another thread held at the fork.
  std::vector<gid_t> groups;
  if (switch_user) {
    int count = 32;
    groups.resize(static_cast<std::size_t>(count));
    while (getgrouplist(account.name.c_str(), gid, groups.data(), &count) < 0) {
      if (count <= static_cast<int>(groups.size()) || count > 65536) {
        count = 1;  // the primary group alone, rather than nothing
        groups.assign(1, gid);
        break;
      }
      groups.resize(static_cast<std::size_t>(count));
    }
    groups.resize(static_cast<std::size_t>(count));
  }
  const std::string user_name = account.name;
  // Exec failures travel back over a close-on-exec pipe: an empty read means exec succeeded.
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(log);
    return core::Error{std::string("pipe: ") + std::strerror(errno)};
  }
  const std::string exit_path = ExitFilePath(spec.log_path);
  const std::string exit_tmp = exit_path + ".tmp";
  std::filesystem::remove(exit_path, ec);
  const std::string fenced_path = FencedFilePath(spec.log_path);
  std::filesystem::remove(fenced_path, ec);
  const std::string lease_path = spec.lease_path;
  const std::string cgroup_procs = spec.cgroup_procs;
  const int64_t lease_grace_ms = static_cast<int64_t>(spec.lease_grace_s * 1000);
  const int64_t log_limit = spec.log_limit_bytes;
  char dropped_note[96];
  std::snprintf(dropped_note, sizeof dropped_note,
                "\n[gpufleet: the log reached its limit of %lld bytes; later output is dropped]\n",
                static_cast<long long>(log_limit));
  // The job runs under a small shim (a forked copy of this process, which execs nothing): the
  // shim leads the job's process group, waits for the job and writes its exit status to
  // `<log>.exit`. The agent can therefore die and come back: the job keeps running, and the new
  // agent re-adopts it by pid and start time, then reads how it ended (see Adopt).
  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    close(status_pipe[0]);
    close(status_pipe[1]);
    return core::Error{std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    // The shim. Only async-signal-safe calls from here on.
    setpgid(0, 0);
    // Keep only what the job needs: stdin from /dev/null, stdout and stderr to the log, the
    // status pipe as fd 3 (close-on-exec). Every other descriptor of the agent (its listening
    // socket above all) must not live on in the shim, or a restarted agent could not bind again.
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    dup2(status_pipe[1], 3);
    fcntl(3, F_SETFD, FD_CLOEXEC);
    if (close_range(4, ~0U, 0) != 0) {
      for (int fd = 4; fd < 65536; ++fd) close(fd);
    }
    signal(SIGTERM, SIG_IGN);  // a stop is for the job; the shim must live to record its end
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    // With a lease to watch, SIGCHLD stays blocked so that sigtimedwait wakes on the job's end.
    sigprocmask(SIG_SETMASK, lease_path.empty() ? &none : &chld, nullptr);
    if (!cgroup_procs.empty()) {
      // Join the job's cgroup first: the job and everything it forks inherit its limits.
      const int cg = open(cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (cg < 0 || write(cg, "0", 1) != 1) {
        const int report[2] = {4, errno};
        (void)!write(3, report, sizeof report);
        _exit(127);
      }
      close(cg);
    }
    // With a log limit, the job writes into a pipe and the shim copies it to the log (fd 1).
    int output[2] = {-1, -1};
    if (log_limit > 0 && pipe2(output, O_CLOEXEC) != 0) {
      const int report[2] = {5, errno};
      (void)!write(3, report, sizeof report);
      _exit(127);
    }
    const pid_t job = fork();
    if (job == 0) {
      if (output[1] >= 0) {
        dup2(output[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copies
        dup2(output[1], STDERR_FILENO);
      }
      sigprocmask(SIG_SETMASK, &none, nullptr);
      signal(SIGTERM, SIG_DFL);  // ignored signals survive exec: give the job the defaults
      signal(SIGINT, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      umask(022);    // the servers' own umask (077) keeps their files private; jobs get the usual
      int step = 0;  // 1 chdir, 2 setuid, 3 exec
      // The account first, then the directory: entered as root, a directory below one the user
      // may not pass would still serve relative paths to the job.
      if (switch_user &&
          (setgroups(groups.size(), groups.data()) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) {
        step = 2;
      }
      if (step == 0 && chdir(workdir.c_str()) != 0) step = 1;
      if (step == 0) {
        execvpe(argv[0], argv.data(), envp.data());
        step = 3;
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
      if (logged + keep > log_limit) keep = logged < log_limit ? log_limit - logged : 0;
      for (ssize_t done = 0; done < keep;) {
        const ssize_t w =
            write(STDOUT_FILENO, buffer + done, static_cast<std::size_t>(keep - done));
        if (w <= 0 && errno != EINTR) break;
        if (w > 0) done += w;
      }
      logged += keep;
      if (keep < n && !noted_drop) {
        noted_drop = true;
        (void)!write(STDOUT_FILENO, dropped_note, strlen(dropped_note));
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
    if (job > 0 && (!lease_path.empty() || out_fd >= 0)) {
      // Wait for the job, copying its output as it comes and checking the lease every 250 ms.
      int64_t kill_at = 0;
      for (;;) {
        const pid_t done = waitpid(job, &status, WNOHANG);
        if (done == job || (done < 0 && errno != EINTR)) break;
        if (lease_path.empty()) {
          if (out_fd >= 0) {
            pump_output();
          } else {
            while (waitpid(job, &status, 0) < 0 && errno == EINTR) {
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
          const int lease_fd = open(lease_path.c_str(), O_RDONLY | O_CLOEXEC);
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
                open(fenced_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
            if (marker >= 0) close(marker);
            kill(-getpid(), SIGTERM);  // the whole group; the shim ignores it
            kill_at = now_ms + lease_grace_ms;
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
      while (waitpid(job, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (job > 0) {
      if (WIFEXITED(status)) code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) {
        sig = WTERMSIG(status);
        code = 128 + sig;
      }
    }
    // "<exit code> <signal>\n", written to a temporary name and renamed: a reader never sees half.
    char text[32];
    int len = 0;
    for (int value : {code, sig}) {
      char digits[12];
      int n = 0;
      unsigned v = static_cast<unsigned>(value);
      do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
      } while (v > 0);
      while (n > 0) text[len++] = digits[--n];
      text[len++] = value == sig ? '\n' : ' ';
    }
    const int fd = open(exit_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      // No fsync: the record must outlive the agent, not the machine (a reboot ends the job
      // too, and a job without a record is then reported lost, which is the truth). An fsync
      // per job end cost a journal commit each and capped job throughput.
      (void)!write(fd, text, static_cast<std::size_t>(len));
      close(fd);
      rename(exit_tmp.c_str(), exit_path.c_str());
    }
    if (fenced) {
      kill(-getpid(), SIGKILL);  // what the job left in its group (and the shim, last)
    }
    _exit(code & 0xff);
  }
  close(status_pipe[1]);
  close(log);
  setpgid(pid, pid);  // also from the parent, so Stop never races the shim's own call
  int report[2] = {0, 0};
  ssize_t n = 0;
  // The exec's outcome, waited for at most kExecWaitMs: an exec that hangs (argv[0] on a dead
  // NFS or FUSE mount the job's user controls) must not hold the launcher. Past that the job
  // counts as started; if its exec fails later, the shim records exit 127.
  constexpr int kExecWaitMs = 5000;
  pollfd status_ready{status_pipe[0], POLLIN, 0};
  int polled;
  do {
    polled = poll(&status_ready, 1, kExecWaitMs);
  } while (polled < 0 && errno == EINTR);
  if (polled > 0) {
    do {
      n = read(status_pipe[0], report, sizeof report);
    } while (n < 0 && errno == EINTR);
  }
  close(status_pipe[0]);
  if (n > 0) {
    waitpid(pid, nullptr, 0);
    std::filesystem::remove(exit_path, ec);
    std::string what = report[0] == 1   ? "cannot enter the working directory " + workdir
                       : report[0] == 2 ? "cannot switch to account " + user_name
                       : report[0] == 4 ? "cannot join its cgroup (" + spec.cgroup_procs + ")"
                       : report[0] == 5 ? std::string("cannot make its output pipe")
                                        : "cannot run '" + spec.argv[0] + "'";
    return core::Error{"job " + std::to_string(spec.job_id) + ": " + what + ": " +
                       std::strerror(report[1])};
  }
  Child child;
  child.pid = pid;
  // A job as short as `true` may already have ended: the shim is then a zombie, still ours and
  // still identified by its start time (a 0 here made a re-adopted job look alive forever).
  child.start_ticks = ChildStartTicks(pid);
  child.exit_path = exit_path;
  child.own_child = true;
  jobs_[spec.job_id] = child;
  return Launched{pid, child.start_ticks};
}

bool Runner::Stop(int64_t job_id, double grace_s) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  Child& child = it->second;
  if (!child.stopping) {
    child.stopping = true;
    child.kill_at = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(std::max(0.0, grace_s)));
    if (MaySignal(child)) kill(-child.pid, SIGTERM);
  }
  return true;
}

std::vector<JobExit> Runner::Reap() {
  std::vector<JobExit> exits;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Child& child = it->second;
    bool ended = false;
    int status = 0;
    bool have_status = false;
    if (child.own_child) {
      const pid_t r = waitpid(child.pid, &status, WNOHANG);
      ended = r == child.pid || (r < 0 && errno == ECHILD);
      have_status = r == child.pid;
    } else {
      // Gone, or the pid reused; or it had ended before it was adopted.
      ended = child.ended || ProcessStartTicks(child.pid) != child.start_ticks;
    }
    if (ended) {
      JobExit e;
      e.job_id = it->first;
      e.stopped = child.stopping;
      if (auto recorded = ReadExitFile(child.exit_path)) {
        e.exit_code = recorded->first;
        e.signal = recorded->second;
      } else if (have_status && WIFSIGNALED(status)) {  // the shim itself was killed
        e.signal = WTERMSIG(status);
        e.exit_code = 128 + e.signal;
      } else if (have_status && WIFEXITED(status)) {
        e.exit_code = WEXITSTATUS(status);
      } else {
        e.signal = SIGKILL;  // ended unseen, with no record: it was killed
        e.exit_code = 128 + SIGKILL;
      }
      // Nothing of the job's group may outlive it after a stop. (The group id cannot be reused
      // while members are left; a job that ended before it was adopted is not signalled.)
      if (child.stopping && !child.ended) kill(-child.pid, SIGKILL);
      exits.push_back(e);
      it = jobs_.erase(it);
      continue;
    }
    if (child.stopping && now >= child.kill_at && MaySignal(child)) kill(-child.pid, SIGKILL);
    ++it;
  }
  return exits;
}

}  // namespace gpufleet::agent
