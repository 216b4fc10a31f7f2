#include "agent/job_usage.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "agent/process_tree.h"

namespace gpufleet::agent {
namespace {

using core::UsageFigure;

// A child in a process group of its own that burns CPU with 32 MiB resident until killed.
pid_t StartBusyGroup() {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // Touched through a volatile pointer, so that the stores are not optimized away.
    volatile char* block = static_cast<volatile char*>(std::malloc(32 << 20));
    for (int i = 0; i < (32 << 20); i += 4096) block[i] = 1;
    volatile unsigned long spin = 0;
    for (;;) spin = spin + 1;
  }
  setpgid(pid, pid);
  return pid;
}

TEST(JobUsageMeterTest, WithoutACgroupItSumsTheProcessGroupFromProcAndKeepsWhatEndedProcessesUsed) {
  const CgroupLimits none = CgroupLimits::Detect("/nonexistent-cgroup-root");
  ASSERT_FALSE(none.available());
  JobUsageMeter meter(none);
  const pid_t leader = StartBusyGroup();
  EXPECT_EQ(ProcessGroupMembers(leader), std::vector<pid_t>{leader});
  core::HostUsage u;
  // Wait until the child has used 0.2 s of CPU (the clock ticks at 100 Hz).
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    u = meter.Sample(5, leader);
    if (u.get(UsageFigure::kCpuUsageUs) >= 200000) break;
  }
  EXPECT_EQ(u.source, core::UsageSource::kProc);
  EXPECT_GE(u.get(UsageFigure::kCpuUsageUs), 200000);
  EXPECT_GE(u.get(UsageFigure::kMemoryCurrentBytes), 32 << 20);
  EXPECT_GE(u.get(UsageFigure::kMemoryPeakBytes), 32 << 20);
  EXPECT_FALSE(u.has(UsageFigure::kCpuThrottledPeriods)) << "not a /proc figure";
  EXPECT_FALSE(u.has(UsageFigure::kOomKills));
  const int64_t cpu = u.get(UsageFigure::kCpuUsageUs);
  kill(leader, SIGKILL);
  waitpid(leader, nullptr, 0);
  // Gone: its CPU time stays counted, its memory is no longer current, the peak stays.
  const core::HostUsage after = meter.Sample(5, leader);
  EXPECT_EQ(after.source, core::UsageSource::kProc);
  EXPECT_GE(after.get(UsageFigure::kCpuUsageUs), cpu);
  EXPECT_EQ(after.get(UsageFigure::kMemoryCurrentBytes), 0);
  EXPECT_GE(after.get(UsageFigure::kMemoryPeakBytes), 32 << 20);
  EXPECT_EQ(meter.Last(5).figures, after.figures);
  meter.Forget(5);
  EXPECT_FALSE(meter.Last(5).measured());
}

// A job's process that left its group (setsid) below its leader is measured too, as long as the
// leader lives (a reaped leader's pid may be another's: the caller says so).
TEST(JobUsageMeterTest, WithoutACgroupWhatLeftTheGroupBelowTheLeaderCounts) {
  const CgroupLimits none = CgroupLimits::Detect("/nonexistent-cgroup-root");
  JobUsageMeter meter(none);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t leader = fork();
  if (leader == 0) {
    setpgid(0, 0);
    if (fork() == 0) {
      setsid();
      volatile char* block = static_cast<volatile char*>(std::malloc(32 << 20));
      for (int i = 0; i < (32 << 20); i += 4096) block[i] = 1;
      (void)!write(ready[1], "x", 1);
      pause();
      _exit(0);
    }
    pause();
    _exit(0);
  }
  setpgid(leader, leader);
  char x = 0;
  ASSERT_EQ(read(ready[0], &x, 1), 1);
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(ProcessGroupMembers(leader), std::vector<pid_t>{leader}) << "the other left it";
  EXPECT_GE(meter.Sample(6, leader).get(UsageFigure::kMemoryCurrentBytes), 32 << 20);
  JobUsageMeter group_only(none);
  EXPECT_LT(
      group_only.Sample(6, leader, /*below_leader=*/false).get(UsageFigure::kMemoryCurrentBytes),
      32 << 20);
  for (pid_t child : DescendantsOf(leader)) kill(child, SIGKILL);
  kill(leader, SIGKILL);
  waitpid(leader, nullptr, 0);
}

// A loader's shape (bench/advise_load.cu `starved`): each step starts two threads that spin for
// 200 ms and are joined. Their CPU time counts though none of them lives to the next sample.
TEST(JobUsageMeterTest, WithoutACgroupThreadsThatComeAndGoAreCounted) {
  const CgroupLimits none = CgroupLimits::Detect("/nonexistent-cgroup-root");
  JobUsageMeter meter(none);
  const pid_t leader = fork();
  if (leader == 0) {
    setpgid(0, 0);
    for (;;) {
      std::thread workers[2];
      for (std::thread& w : workers) {
        w = std::thread([] {
          const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
          volatile unsigned long spin = 0;
          while (std::chrono::steady_clock::now() < until) spin = spin + 1;
        });
      }
      for (std::thread& w : workers) w.join();
    }
  }
  setpgid(leader, leader);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const core::HostUsage first = meter.Sample(6, leader);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const core::HostUsage last = meter.Sample(6, leader);
  const double wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  kill(leader, SIGKILL);
  waitpid(leader, nullptr, 0);
  const double cores = static_cast<double>(last.get(UsageFigure::kCpuUsageUs) -
                                           first.get(UsageFigure::kCpuUsageUs)) /
                       wall_us;
  // Two threads spinning nearly all the time: about 2 cores where two are free; a loaded machine
  // gives them less, but the bug this guards against (the threads' time lost) reads ~0.
  EXPECT_GT(cores, 0.5) << "the threads' CPU time was lost";
  EXPECT_LT(cores, 2.2);
}

}  // namespace
}  // namespace gpufleet::agent
