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

namespace gpufleet::agent {
namespace {

// Fields 4 (parent) and 5 (process group) of /proc/PID/stat; false when it cannot be read.
bool ReadParentAndGroup(pid_t pid, pid_t& parent, pid_t& group) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[1024];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  // The name (field 2) may hold spaces and parentheses: the fields go on after its last ')'.
  const char* after = std::strrchr(text, ')');
  int ppid = 0;
  int pgrp = 0;
  if (after == nullptr || std::sscanf(after + 1, " %*c %d %d", &ppid, &pgrp) != 2) return false;
  parent = ppid;
  group = pgrp;
  return true;
}

// Through the pidfd when there is one, else by pid.
bool Send(pid_t pid, int pidfd, int sig) {
  if (pidfd >= 0) return syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0;
  return kill(pid, sig) == 0;
}

}  // namespace

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
  for (std::size_t k = 0; k < frontier.size() && frontier.size() < 100000; ++k) {
    for (pid_t child : ChildrenOf(frontier[k])) {
      frontier.push_back(child);
      out.push_back(child);
    }
  }
  return out;
}

int SignalDescendants(pid_t root, int sig, pid_t except_group) {
  if (root <= 0) return 0;
  const bool stop_first = sig == SIGKILL;
  std::map<pid_t, int> found;  // pid -> its pidfd (-1: none could be opened)
  for (int pass = 0; pass < 64; ++pass) {
    bool found_new = false;
    std::vector<pid_t> frontier{root};
    for (std::size_t k = 0; k < frontier.size() && frontier.size() < 100000; ++k) {
      const pid_t parent = frontier[k];
      for (pid_t child : ChildrenOf(parent)) {
        if (found.count(child) > 0) {
          frontier.push_back(child);
          continue;
        }
        long pidfd = syscall(SYS_pidfd_open, child, 0);
        // Out of descriptors (a job of thousands of processes): signalled by pid instead, with
        // the small chance of a reuse that the pidfd rules out.
        if (pidfd < 0 && errno != EMFILE && errno != ENFILE) continue;  // ended since listed
        // Opened, it names one process for good; that process is the one listed only if its
        // parent is still the one it was listed under (a pid reused meanwhile has another).
        pid_t its_parent = 0;
        pid_t its_group = 0;
        if (!ReadParentAndGroup(child, its_parent, its_group) || its_parent != parent) {
          if (pidfd >= 0) close(static_cast<int>(pidfd));
          continue;
        }
        frontier.push_back(child);
        if (except_group > 0 && its_group == except_group) {
          if (pidfd >= 0) close(static_cast<int>(pidfd));
          continue;
        }
        found[child] = static_cast<int>(pidfd);
        found_new = true;
        if (stop_first) Send(child, static_cast<int>(pidfd), SIGSTOP);
      }
    }
    if (!stop_first || !found_new) break;
  }
  int signalled = 0;
  for (const auto& [pid, pidfd] : found) {
    if (Send(pid, pidfd, sig)) ++signalled;
    if (pidfd >= 0) close(pidfd);
  }
  return signalled;
}

}  // namespace gpufleet::agent
