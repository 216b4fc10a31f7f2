#include "cloud/detached_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/proc_stat.h"

namespace gpufleet::cloud {
namespace {

struct ProcStat {
  char state = '?';
  int session = 0;
  uint64_t start_ticks = 0;
};

// /proc/PID/stat: "pid (comm) state ppid pgrp session ... starttime ..."; comm may hold spaces
// and parentheses, so the fields are counted from the last ')'.
std::optional<ProcStat> ReadStat(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();  // whole: the name may hold a newline (core/proc_stat.h)
  const std::vector<std::string> f = core::StatFieldsAfterName(text.str());
  if (f.size() < 20) return std::nullopt;
  ProcStat s;
  s.state = f[0].empty() ? '?' : f[0][0];
  s.session = std::atoi(f[3].c_str());
  s.start_ticks = std::strtoull(f[19].c_str(), nullptr, 10);
  return s;
}

bool Dead(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

// Every live process of session `sid`.
std::vector<int> SessionMembers(int sid) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    const auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err != std::errc() || end != name.data() + name.size()) continue;
    const auto stat = ReadStat(pid);
    if (stat && stat->session == sid && !Dead(stat->state)) pids.push_back(pid);
  }
  return pids;
}

// Async-signal-safe helpers for the forked child (no allocation, no locks).
std::size_t FormatInt(long value, char* buf) {
  char digits[24];
  std::size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  for (std::size_t i = 0; i < n; ++i) buf[i] = digits[n - 1 - i];
  return n;
}

// Whether all of `data` was written.
bool WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Writes "gpufleet local provider: WHAT, errno N" to standard error (the launch's log).
void LogErrno(const char* what, std::size_t what_size, int err) {
  static const char kPrefix[] = "gpufleet local provider: ";
  static const char kErrno[] = ", errno ";
  WriteAll(2, kPrefix, sizeof kPrefix - 1);
  WriteAll(2, what, what_size);
  WriteAll(2, kErrno, sizeof kErrno - 1);
  char num[24];
  const std::size_t len = FormatInt(err, num);
  num[len] = '\n';
  WriteAll(2, num, len + 1);
}

struct ChildPlan {
  const DetachedLaunch* launch;
  char* const* argv;
  char* const* envp;
  int sync_fd;
  // pid_path + ".claim.", with room after `claim_prefix` characters for the process's pid and a
  // NUL (made before the fork: the child may not allocate).
  char* claim_path;
  std::size_t claim_prefix;
};

// What the process tells its launcher when the pid file existed already.
constexpr char kClaimed[] = "claimed\n";
constexpr char kCannotWritePid[] = "cannot write the pid file";

// The grandchild: only async-signal-safe calls until execve (the parent may have threads).
[[noreturn]] void RunChild(const ChildPlan& plan) {
  const DetachedLaunch& l = *plan.launch;
  ::setsid();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  const int log_fd = ::open(l.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
  if (null_fd < 0 || log_fd < 0) ::_exit(126);
  ::dup2(null_fd, 0);
  ::dup2(log_fd, 1);
  ::dup2(log_fd, 2);
  char pid_text[32];
  std::size_t n = FormatInt(static_cast<long>(::getpid()), pid_text);
  pid_text[n++] = '\n';
  // The pid file appears whole or not at all, and once: the pid is written to a file of this
  // process's own, which is then linked to the pid file's name. The link fails when the name
  // exists: another launch of this instance got there first, and it runs, not this one. Any
  // other failure runs nothing either: a process the pid file does not name could never be
  // found, or stopped, by a later Delete.
  char* claim = plan.claim_path;
  claim[plan.claim_prefix + FormatInt(static_cast<long>(::getpid()), claim + plan.claim_prefix)] =
      '\0';
  const int claim_fd = ::open(claim, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (claim_fd < 0) {
    LogErrno(kCannotWritePid, sizeof kCannotWritePid - 1, errno);
    ::_exit(126);
  }
  int link_err = WriteAll(claim_fd, pid_text, n) ? 0 : EIO;
  if (::close(claim_fd) != 0 && link_err == 0) link_err = errno;
  if (link_err == 0 && ::link(claim, l.pid_path.c_str()) != 0) link_err = errno;
  ::unlink(claim);
  if (link_err == EEXIST) {
    WriteAll(plan.sync_fd, kClaimed, sizeof kClaimed - 1);
    ::_exit(0);
  }
  if (link_err != 0) {
    LogErrno(kCannotWritePid, sizeof kCannotWritePid - 1, link_err);
    ::_exit(126);
  }
  WriteAll(plan.sync_fd, pid_text, n);
  // Nothing of the starting process (its sockets, its database, the sync pipe) stays open here.
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
    for (int fd = 3; fd < 4096; ++fd) ::close(fd);
  }
  if (l.delay_s > 0) {
    timespec until{};
    ::clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += static_cast<time_t>(l.delay_s);
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
    }
  }
  const int started =
      ::open(l.started_path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (started >= 0) ::close(started);
  if (!l.cwd.empty() && ::chdir(l.cwd.c_str()) != 0) ::_exit(126);
  ::execve(plan.argv[0], plan.argv, plan.envp);
  static const char kWhat[] = "cannot execute the agent program";
  LogErrno(kWhat, sizeof kWhat - 1, errno);
  ::_exit(127);
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

core::Result<std::optional<ProcessId>> LaunchDetached(const DetachedLaunch& launch) {
  if (launch.argv.empty()) return core::Error{"no program to start", core::ErrorCode::kInternal};
  std::vector<char*> argv = CStrings(launch.argv);
  std::vector<char*> envp = CStrings(launch.env);
  int sync[2];
  if (::pipe2(sync, O_CLOEXEC) != 0) {
    return core::Error{std::string("pipe: ") + std::strerror(errno), core::ErrorCode::kInternal};
  }
  std::string claim_path = launch.pid_path + ".claim.";
  const std::size_t claim_prefix = claim_path.size();
  claim_path.append(24, '\0');  // the pid's digits and a NUL
  const ChildPlan plan{&launch, argv.data(), envp.data(), sync[1], claim_path.data(), claim_prefix};
  const pid_t middle = ::fork();
  if (middle < 0) {
    const int err = errno;
    ::close(sync[0]);
    ::close(sync[1]);
    return core::Error{std::string("fork: ") + std::strerror(err), core::ErrorCode::kInternal};
  }
  if (middle == 0) {
    // The middle process only forks the real one and ends, so that init adopts it.
    const pid_t child = ::fork();
    if (child == 0) RunChild(plan);
    ::_exit(child < 0 ? 1 : 0);
  }
  ::close(sync[1]);
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  std::string text;
  pollfd pfd{sync[0], POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (::poll(&pfd, 1, 100) <= 0) continue;
    char buf[64];
    const ssize_t n = ::read(sync[0], buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      if (text.find('\n') != std::string::npos) break;
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(sync[0]);
  if (text == kClaimed) return std::optional<ProcessId>();
  const auto id = ParsePidFile(text);
  if (!id) {
    return core::Error{"the detached process for " + launch.argv[0] + " did not start (see " +
                           launch.log_path + ")",
                       core::ErrorCode::kInternal};
  }
  return std::optional<ProcessId>(ProcessId{id->pid, StartTicks(id->pid)});
}

uint64_t StartTicks(int pid) {
  const auto stat = ReadStat(pid);
  return stat && !Dead(stat->state) ? stat->start_ticks : 0;
}

bool IsAlive(const ProcessId& id) {
  if (id.pid <= 0) return false;
  const auto stat = ReadStat(id.pid);
  if (!stat || Dead(stat->state)) return false;
  return id.start_ticks == 0 || stat->start_ticks == id.start_ticks;
}

core::Result<bool> StopSession(const ProcessId& leader, int64_t grace_ms) {
  if (leader.pid <= 1) return true;
  // A process with the leader's pid but another start time means the pid was reused, which the
  // kernel does only once nothing of the old session (which holds the id) is left.
  if (const auto stat = ReadStat(leader.pid);
      stat && leader.start_ticks != 0 && stat->start_ticks != leader.start_ticks) {
    return true;
  }
  const auto signal_all = [&](int sig) {
    const std::vector<int> members = SessionMembers(leader.pid);
    for (const int pid : members) ::kill(pid, sig);
    return !members.empty();
  };
  const auto wait_empty = [&](int64_t ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!SessionMembers(leader.pid).empty()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  };
  if (!signal_all(SIGTERM) || wait_empty(grace_ms)) return true;
  signal_all(SIGKILL);
  if (wait_empty(2000)) return true;
  return core::Error{"processes of session " + std::to_string(leader.pid) +
                         " survived SIGKILL (stuck in the kernel?)",
                     core::ErrorCode::kUnavailable};
}

std::optional<ProcessId> ParsePidFile(const std::string& text) {
  std::istringstream in(text);
  long long pid = 0;
  if (!(in >> pid) || pid <= 1 || pid > (1 << 22)) return std::nullopt;
  ProcessId id{static_cast<int>(pid), 0};
  unsigned long long ticks = 0;
  if (in >> ticks) id.start_ticks = ticks;
  return id;
}

std::string FormatPidFile(const ProcessId& id) {
  return std::to_string(id.pid) + " " + std::to_string(id.start_ticks) + "\n";
}

}  // namespace gpufleet::cloud
