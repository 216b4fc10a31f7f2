// What a job's own /dev/shm and IPC namespace (agent/job_shim.h, ShimSpec::private_shm_mib) add
// to its start: a child is forked, makes them as the shim's job child does (unshare, slave
// propagation, a tmpfs on /dev/shm), execs /bin/true and is waited for; the same without them is
// the baseline, measured in the same run. Needs root (else only the baseline is measured).
// Usage: build/bench/shm_namespace_bench [starts=300]
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// Microseconds of each of `starts` starts of /bin/true, sorted.
std::vector<double> Starts(int starts, bool private_shm) {
  std::vector<double> took;
  for (int i = 0; i < starts; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    const pid_t child = fork();
    if (child == 0) {
      if (private_shm &&
          (unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
           mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
           mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)) {
        _exit(1);
      }
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      return {};
    }
    took.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin)
            .count());
  }
  std::sort(took.begin(), took.end());
  return took;
}

void Print(const char* what, const std::vector<double>& took) {
  if (took.empty()) {
    std::printf("%-28s failed (not root?)\n", what);
    return;
  }
  std::printf("%-28s median %6.0f us, p90 %6.0f us\n", what, took[took.size() / 2],
              took[took.size() * 9 / 10]);
}

}  // namespace

int main(int argc, char** argv) {
  const int starts = argc > 1 ? std::max(10, std::atoi(argv[1])) : 300;
  std::printf("fork, exec /bin/true and wait, %d times each, interleaved in two rounds\n", starts);
  for (int round = 0; round < 2; ++round) {
    Print("node's /dev/shm (baseline)", Starts(starts, false));
    Print("own /dev/shm and IPC", Starts(starts, true));
  }
  return 0;
}
