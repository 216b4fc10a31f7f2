#include "agent/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "core/proc_stat.h"

namespace gpufleet::agent {
namespace {

// The fields after the name in /proc/PID/stat (core::StatFieldsAfterName); empty when it
// cannot be read.
std::vector<std::string> StatFields(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char text[1024];  // the first fields, all this reads, follow a name of 16 bytes at most
  const ssize_t n = read(fd, text, sizeof text);
  close(fd);
  if (n <= 0) return {};
  return core::StatFieldsAfterName(std::string_view(text, static_cast<std::size_t>(n)));
}

// Fields 4 (parent) and 5 (process group) of /proc/PID/stat; false when it cannot be read.
bool ReadParentAndGroup(pid_t pid, pid_t& parent, pid_t& group) {
  const std::vector<std::string> fields = StatFields(pid);
  if (fields.size() < 3) return false;
  parent = static_cast<pid_t>(std::strtol(fields[1].c_str(), nullptr, 10));
  group = static_cast<pid_t>(std::strtol(fields[2].c_str(), nullptr, 10));
  return true;
}

// As many processes as a kernel can have (pid_max's ceiling): a walk never stops short of them.
constexpr std::size_t kMostProcesses = std::size_t{1} << 22;

// Whether the process (behind `pidfd` when there is one) has not been reaped yet.
bool StillThere(pid_t pid, int pidfd) {
  if (pidfd >= 0) return syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0;
  return kill(pid, 0) == 0 || errno == EPERM;
}

// Whether the process is still there and neither stopped nor a zombie.
bool StillRunning(pid_t pid, int pidfd) {
  if (!StillThere(pid, pidfd)) return false;
  const std::vector<std::string> fields = StatFields(pid);
  if (fields.empty()) return false;
  const std::string& state = fields[0];
  return state != "T" && state != "t" && state != "Z" && state != "X";
}

// Through the pidfd when there is one, else by pid.
bool Send(pid_t pid, int pidfd, int sig) {
  if (pidfd >= 0) return syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0;
  return kill(pid, sig) == 0;
}

}  // namespace

bool ChildrenListed() {
  const std::string own = "/proc/self/task/" + std::to_string(getpid()) + "/children";
  return access(own.c_str(), R_OK) == 0;
}

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* threads = opendir(task.c_str());
  if (threads == nullptr) return out;
  while (const dirent* e = readdir(threads)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = task + "/" + e->d_name + "/children";
    FILE* file = std::fopen(path.c_str(), "re");
    if (file == nullptr) continue;
    int child = 0;
    while (std::fscanf(file, "%d", &child) == 1) {
      if (child > 0) out.push_back(static_cast<pid_t>(child));
    }
    std::fclose(file);
  }
  closedir(threads);
  return out;
}

std::vector<pid_t> DescendantsOf(pid_t root) {
  std::vector<pid_t> out;
  if (root <= 0) return out;
  std::vector<pid_t> frontier{root};
  for (std::size_t k = 0; k < frontier.size() && frontier.size() < kMostProcesses; ++k) {
    for (pid_t child : ChildrenOf(frontier[k])) {
      frontier.push_back(child);
      out.push_back(child);
    }
  }
  return out;
}

int SignalDescendants(pid_t root, int sig, pid_t except_group, int root_pidfd) {
  if (root <= 0) return 0;
  const bool stop_first = sig == SIGKILL;
  struct Seen {
    int pidfd = -1;       // -1: none could be opened, signalled by pid
    bool signal = false;  // false: a member of `except_group`, only walked through
  };
  std::map<pid_t, Seen> seen;
  // One walk from `root`; whether it found a process to signal that no earlier walk had.
  const auto walk = [&] {
    bool found_new = false;
    std::vector<pid_t> frontier{root};
    for (std::size_t k = 0; k < frontier.size() && frontier.size() < kMostProcesses; ++k) {
      const pid_t parent = frontier[k];
      const std::vector<pid_t> children = ChildrenOf(parent);
      // Read while the parent was there: reaped since, its pid may name another's process now.
      if (!StillThere(parent, k == 0 ? root_pidfd : seen[parent].pidfd)) continue;
      for (pid_t child : children) {
        if (seen.count(child) > 0) {
          frontier.push_back(child);
          continue;
        }
        const long pidfd = syscall(SYS_pidfd_open, child, 0);
        // Without a pidfd (a kernel before 5.3, a seccomp filter, no descriptors left), by pid,
        // with the small chance of a reuse that the pidfd rules out.
        if (pidfd < 0 && errno == ESRCH) continue;  // ended since it was listed
        // That process is the one listed only if its parent is still the one it was listed
        // under (a pid reused meanwhile has another).
        pid_t its_parent = 0;
        pid_t its_group = 0;
        if (!ReadParentAndGroup(child, its_parent, its_group) || its_parent != parent) {
          if (pidfd >= 0) close(static_cast<int>(pidfd));
          continue;
        }
        const bool signal = except_group <= 0 || its_group != except_group;
        seen[child] = Seen{static_cast<int>(pidfd), signal};
        frontier.push_back(child);
        if (!signal) continue;
        found_new = true;
        if (stop_first) Send(child, static_cast<int>(pidfd), SIGSTOP);
      }
    }
    return found_new;
  };
  // With SIGKILL: walk until a walk finds no one new after every process found so far has
  // stopped (a SIGSTOP takes effect only once a fork under way has finished, so the walk right
  // after it can miss the child being made).
  bool all_stopped = false;
  for (int pass = 0; pass < 64; ++pass) {
    const bool found_new = walk();
    if (!stop_first) break;
    if (found_new) {
      all_stopped = false;
      continue;
    }
    if (all_stopped) break;
    for (int waited_ms = 0; waited_ms < 100; ++waited_ms) {
      bool moving = false;
      for (const auto& [pid, s] : seen) {
        if (s.signal && StillRunning(pid, s.pidfd)) {
          moving = true;
          break;
        }
      }
      if (!moving) break;
      usleep(1000);
    }
    all_stopped = true;  // or as good as it gets: a process in D state stops only once it wakes
  }
  int signalled = 0;
  for (const auto& [pid, s] : seen) {
    if (s.signal && Send(pid, s.pidfd, sig)) ++signalled;
    if (s.pidfd >= 0) close(s.pidfd);
  }
  return signalled;
}

}  // namespace gpufleet::agent
