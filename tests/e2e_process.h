#pragma once
// Helpers for end-to-end tests that drive real gpufleet processes: spawning, shell commands,
// reading files, waiting.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace gpufleet::e2e {

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string FirstLine(const std::string& path) {
  std::string text = Slurp(path);
  const std::size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

// Runs a shell command; returns its stdout and exit code.
inline std::pair<std::string, int> Sh(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// Starts `args` (args[0]: the program) with stdout and stderr appended to `log`; the pid, or -1.
// The process is killed when the test process dies (PR_SET_PDEATHSIG), so a crashed or killed
// test leaves no server behind holding ports and build locks.
inline pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;  // the parent (or -1)
  // The child: async-signal-safe calls only (the test process may have threads).
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the test died before the prctl
  execve(argv[0], argv.data(), environ);
  _exit(127);
}

// Kills `pid` (SIGCONT first, in case a test stopped it) with SIGKILL, reaps it, and sets it to
// -1; nothing for pid <= 0.
inline void KillAndReap(pid_t& pid) {
  if (pid > 0) {
    kill(pid, SIGCONT);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
}

// Polls `done` every 20 ms for up to `seconds`; whether it became true.
inline bool WaitUntil(const std::function<bool()>& done, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace gpufleet::e2e
