#include "cloud/run_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

extern char** environ;

namespace gpufleet::cloud {
namespace {

using Clock = std::chrono::steady_clock;

// Closes the descriptors it holds on every path out of RunProgram.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct Stream {
  Fd fd;
  std::string* sink = nullptr;
};

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Reads what is there from each open stream, up to `cap` bytes kept per stream; closes a stream
// at its end. Waits at most `wait_ms` for something to read.
void Drain(Stream (&streams)[2], int wait_ms, std::size_t cap) {
  pollfd fds[2];
  int n = 0;
  Stream* which[2];
  for (Stream& s : streams) {
    if (s.fd.fd < 0) continue;
    fds[n] = pollfd{s.fd.fd, POLLIN, 0};
    which[n++] = &s;
  }
  if (n == 0) {
    ::poll(nullptr, 0, wait_ms);
    return;
  }
  if (::poll(fds, static_cast<nfds_t>(n), wait_ms) <= 0) return;
  for (int i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    char buf[16384];
    const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
    if (got > 0) {
      std::string& sink = *which[i]->sink;
      if (sink.size() < cap)
        sink.append(buf, std::min(static_cast<std::size_t>(got), cap - sink.size()));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      which[i]->fd.Close();
    }
  }
}

bool Exited(pid_t pid) {
  siginfo_t info{};
  // WNOWAIT: the child stays a zombie, so its pid (the group's id) cannot be reused while we
  // still signal the group.
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid == pid;
}

}  // namespace

core::Result<ProgramOutcome> RunProgram(const ProgramRun& run) {
  if (run.argv.empty()) return core::Error{"no program to run", core::ErrorCode::kInternal};
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return core::Error{std::string("pipe: ") + std::strerror(errno), core::ErrorCode::kInternal};
  }
  Stream streams[2];
  Fd out_w, err_w;
  streams[0].fd.fd = out_pipe[0];
  out_w.fd = out_pipe[1];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    return core::Error{std::string("pipe: ") + std::strerror(errno), core::ErrorCode::kInternal};
  }
  streams[1].fd.fd = err_pipe[0];
  err_w.fd = err_pipe[1];

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);
  // Nothing else of the controller's (its sockets, its database) reaches the script.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attrs;
  posix_spawnattr_init(&attrs);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attrs, &none);
  posix_spawnattr_setsigdefault(&attrs, &all);
  posix_spawnattr_setpgroup(&attrs, 0);
  posix_spawnattr_setflags(&attrs,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv = CStrings(run.argv);
  std::vector<char*> envp = CStrings(run.env);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, argv[0], &actions, &attrs, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attrs);
  if (spawned != 0) {
    return core::Error{"cannot run " + run.argv[0] + ": " + std::strerror(spawned),
                       core::ErrorCode::kInternal};
  }
  out_w.Close();
  err_w.Close();

  ProgramOutcome outcome;
  streams[0].sink = &outcome.out;
  streams[1].sink = &outcome.err;
  const auto deadline = Clock::now() + std::chrono::seconds(run.timeout_s);
  std::optional<Clock::time_point> kill_at;
  std::optional<Clock::time_point> exited_at;
  while (true) {
    const bool open = streams[0].fd.fd >= 0 || streams[1].fd.fd >= 0;
    if (!exited_at && Exited(pid)) exited_at = Clock::now();
    // Done once it exited and its output ended; a child of it still holding the pipes open gets
    // a second, then is killed with the group below.
    if (exited_at && (!open || Clock::now() - *exited_at > std::chrono::seconds(1))) break;
    const auto now = Clock::now();
    if (!exited_at && !kill_at && now >= deadline) {
      outcome.timed_out = true;
      ::kill(-pid, SIGTERM);
      kill_at = now + std::chrono::milliseconds(run.kill_grace_ms);
    }
    if (kill_at && now >= *kill_at) {
      ::kill(-pid, SIGKILL);
      kill_at = now + std::chrono::hours(1);  // once
    }
    Drain(streams, 50, run.max_output_bytes);
  }
  // Whatever is left of its group (children it started) goes with it.
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  return outcome;
}

std::vector<std::string> InheritedEnvironment(const std::string& drop_prefix) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (!drop_prefix.empty() && entry.rfind(drop_prefix, 0) == 0) continue;
    // libpq's settings (PGPASSWORD, PGPASSFILE, PGSSLKEY, ...) are the controller's database
    // credentials, no provider script's or node's business.
    if (entry.size() > 2 && entry[0] == 'P' && entry[1] == 'G' &&
        entry.find('=') != std::string::npos &&
        entry.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", 2) == entry.find('=')) {
      continue;
    }
    env.push_back(entry);
  }
  return env;
}

std::string FirstLines(const std::string& text, int max_lines, std::size_t max_bytes) {
  std::string out;
  int lines = 0;
  std::size_t start = 0;
  while (start < text.size() && lines < max_lines) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line;
    for (std::size_t i = start; i < end; ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == '\t') {
        line += ' ';
      } else if (c >= 0x20 && c != 0x7f) {
        line += static_cast<char>(c);
      }
    }
    const std::size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos) {
      line = line.substr(first, line.find_last_not_of(' ') - first + 1);
      if (!out.empty()) out += " | ";
      out += line;
      ++lines;
    }
    start = end + 1;
  }
  if (out.size() > max_bytes) out = out.substr(0, max_bytes) + "...";
  return out;
}

}  // namespace gpufleet::cloud
