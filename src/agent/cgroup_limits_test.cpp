#include "agent/cgroup_limits.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/runner.h"

namespace gpufleet::agent {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the agent caps all jobs' memory at on this machine.
std::string JobsMemoryCapHere() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (in >> key >> kib && key != "MemTotal:") in.ignore(1 << 20, '\n');
  return std::to_string(CgroupLimits::JobsMemoryCapBytes(kib * 1024));
}

// Found by a review: nothing capped what all jobs together held, so jobs without --memory ran the
// node out of memory and the kernel's OOM killer, node-wide, could pick the agent or `up`.
TEST(JobsMemoryCap, LeavesAReserveOfATwentiethWithinBounds) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_EQ(CgroupLimits::JobsMemoryCapBytes(24 * kGiB), 24 * kGiB - 24 * kGiB / 20);
  EXPECT_EQ(CgroupLimits::JobsMemoryCapBytes(1024 * kGiB), 1016 * kGiB);       // at most 8 GiB kept
  EXPECT_EQ(CgroupLimits::JobsMemoryCapBytes(4 * kGiB), 4 * kGiB - kGiB / 2);  // at least 512 MiB
  EXPECT_EQ(CgroupLimits::JobsMemoryCapBytes(kGiB / 2), kGiB / 4);             // never below half
}

// A directory laid out like a cgroup v2 cgroup (plain files stand in for the kernel's).
class CgroupLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpufleet-cgroup-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(CgroupLimitsTest, WritesCpuAndMemoryLimitsIntoTheJobCgroup) {
  std::ofstream(root_ / "cgroup.controllers") << "cpuset cpu io memory\n";
  CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  EXPECT_EQ(Read(root_ / "cgroup.subtree_control"), "+cpu +memory");
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "cgroup.subtree_control"), "+cpu +memory");
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "memory.max"), JobsMemoryCapHere()) << "all jobs";
  auto procs = limits.Prepare(42, JobLimits{1500, 256});
  ASSERT_TRUE(procs.ok()) << procs.error();
  const fs::path job = root_ / "gpufleet-jobs" / "gpufleet-job-42";
  EXPECT_EQ(procs.value(), std::vector<std::string>{(job / "cgroup.procs").string()});
  EXPECT_EQ(limits.Kind(), "cgroup-v2");
  EXPECT_EQ(Read(job / "cpu.max"), "150000 100000");  // 1.5 cores per 100 ms
  EXPECT_EQ(Read(job / "memory.max"), "268435456");   // 256 MiB
  EXPECT_EQ(limits.JobPidsMax(), 0) << "no pids controller: no process cap";
  EXPECT_FALSE(fs::exists(job / "pids.max"));
  // Only memory: CPU unlimited.
  ASSERT_TRUE(limits.Prepare(43, JobLimits{0, 1024}).ok());
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "gpufleet-job-43" / "cpu.max"), "max 100000");
  // No limits asked: a cgroup all the same (every job is measured), unlimited.
  EXPECT_EQ(limits.ForLaunch(44, JobLimits{}, "test").size(), 1U);
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "gpufleet-job-44" / "memory.max"), "max");
  limits.Release(44, 0);  // a plain directory here still holds the stand-in files: stays
}

// Found by a review: nothing capped a job's processes. Where the pids controller is offered, it
// is enabled (after cpu and memory, on its own, so that a hierarchy refusing it still limits
// those) and every job's pids.max is a quarter of pid_max, at least 1024.
TEST_F(CgroupLimitsTest, WherePidsIsOfferedEachJobHoldsAtMostAQuarterOfThePids) {
  std::ofstream(root_ / "cgroup.controllers") << "cpuset cpu io memory pids\n";
  CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  // Plain files keep the last write; the kernel's add each: "+cpu +memory", then "+pids".
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "cgroup.subtree_control"), "+pids");
  const int64_t pid_max = std::stoll(Read("/proc/sys/kernel/pid_max"));
  EXPECT_EQ(limits.JobPidsMax(), std::max<int64_t>(1024, pid_max / 4));
  ASSERT_TRUE(limits.Prepare(42, JobLimits{}).ok());
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "gpufleet-job-42" / "pids.max"),
            std::to_string(limits.JobPidsMax()));
}

// As on the H200 VM (bench/results/real-gpu): a v2 delegation of the memory controller only.
// Before, the agent gave up on cgroups there: no memory limits, usage from /proc.
TEST_F(CgroupLimitsTest, WithOnlyTheMemoryControllerMemoryLimitsHoldAndCpuIsSaidNotTo) {
  std::ofstream(root_ / "cgroup.controllers") << "memory\n";
  CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  EXPECT_EQ(limits.Kind(), "cgroup-v2-memory");
  EXPECT_FALSE(limits.CpuLimited());
  EXPECT_NE(limits.why_unavailable().find("cpu controller"), std::string::npos);
  EXPECT_EQ(Read(root_ / "cgroup.subtree_control"), "+memory");
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "cgroup.subtree_control"), "+memory");
  EXPECT_EQ(limits.ForLaunch(7, JobLimits{1500, 256}, "test").size(), 1U);  // says "no CPU limits"
  const fs::path job = root_ / "gpufleet-jobs" / "gpufleet-job-7";
  EXPECT_EQ(Read(job / "memory.max"), "268435456");
  EXPECT_FALSE(fs::exists(job / "cpu.max")) << "no cpu controller: nothing to write";
  // Its CPU use is still read from the cgroup (cpu.stat's usage is in every v2 cgroup), its
  // throttling is not (no quota).
  std::ofstream(job / "cgroup.procs") << "";
  std::ofstream(job / "cpu.stat") << "usage_usec 5000000\nuser_usec 4000000\nsystem_usec 1000000\n";
  const core::HostUsage u = limits.ReadUsage(7);
  EXPECT_EQ(u.source, core::UsageSource::kCgroupV2);
  EXPECT_EQ(u.get(core::UsageFigure::kCpuUsageUs), 5000000);
  EXPECT_FALSE(u.has(core::UsageFigure::kCpuThrottledPeriods));
  // Neither controller: unavailable, saying which one it needs.
  std::ofstream(root_ / "cgroup.controllers") << "cpu pids\n";
  const CgroupLimits none = CgroupLimits::Detect(root_.string());
  EXPECT_FALSE(none.available());
  EXPECT_NE(none.why_unavailable().find("memory controller"), std::string::npos);
}

TEST_F(CgroupLimitsTest, AContainerJobsRuntimeJoinsALeafOnV2SoItsCgroupMayHaveChildren) {
  std::ofstream(root_ / "cgroup.controllers") << "cpu memory\n";
  CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available());
  auto procs = limits.Prepare(45, JobLimits{1000, 64}, /*runtime_leaf=*/true);
  ASSERT_TRUE(procs.ok()) << procs.error();
  const fs::path job = root_ / "gpufleet-jobs" / "gpufleet-job-45";
  EXPECT_EQ(procs.value(), std::vector<std::string>{(job / "runtime" / "cgroup.procs").string()});
  EXPECT_EQ(Read(job / "memory.max"), "67108864") << "the limits stay on the job's cgroup";
  EXPECT_TRUE(fs::is_directory(job / "runtime"));
}

TEST_F(CgroupLimitsTest, ReadsAV2JobsFiguresAndSaysWhichAreMissing) {
  std::ofstream(root_ / "cgroup.controllers") << "cpu memory io\n";
  const CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available());
  EXPECT_FALSE(limits.ReadUsage(7).measured()) << "no cgroup yet";
  ASSERT_TRUE(limits.Prepare(7, JobLimits{500, 128}).ok());
  const fs::path job = root_ / "gpufleet-jobs" / "gpufleet-job-7";
  std::ofstream(job / "cgroup.procs") << "101\n102\n";
  std::ofstream(job / "cpu.stat") << "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n"
                                     "nr_periods 40\nnr_throttled 20\nthrottled_usec 1000000\n";
  std::ofstream(job / "memory.current") << "1048576\n";
  std::ofstream(job / "memory.peak") << "4194304\n";
  std::ofstream(job / "memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
  std::ofstream(job / "io.stat") << "8:0 rbytes=100 wbytes=200 rios=1 wios=2\n"
                                    "8:16 rbytes=1000 wbytes=2000 rios=3 wios=4\n";
  std::ofstream(job / "cpu.pressure") << "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n"
                                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n";
  const core::HostUsage u = limits.ReadUsage(7);
  using F = core::UsageFigure;
  EXPECT_EQ(u.source, core::UsageSource::kCgroupV2);
  EXPECT_EQ(u.get(F::kCpuUsageUs), 2500000);
  EXPECT_EQ(u.get(F::kCpuThrottledPeriods), 20);
  EXPECT_EQ(u.get(F::kCpuThrottledUs), 1000000);
  EXPECT_EQ(u.get(F::kMemoryCurrentBytes), 1048576);
  EXPECT_EQ(u.get(F::kMemoryPeakBytes), 4194304);
  EXPECT_EQ(u.get(F::kOomKills), 1);
  EXPECT_EQ(u.get(F::kIoReadBytes), 1100);
  EXPECT_EQ(u.get(F::kIoWriteBytes), 2200);
  EXPECT_EQ(u.get(F::kCpuPressureSomeUs), 12345);
  // No io.pressure or memory.pressure file here; run-queue wait and I/O stall are not cgroup
  // figures (agent/job_usage.h adds them from /proc).
  EXPECT_EQ(u.Missing(), (std::vector<std::string>{"cpu_wait_us", "io_pressure_some_us",
                                                   "memory_pressure_some_us", "io_blocked_us"}));
  EXPECT_EQ(limits.Processes(7), (std::vector<pid_t>{101, 102}));
}

// cgroup v1: one directory per hierarchy (cpu and cpuacct share one here, as many distributions
// mount them), the limits in v1's files, and the usage from v1's.
TEST_F(CgroupLimitsTest, OnV1ItLimitsAndMeasuresInEachHierarchy) {
  const fs::path cpu = root_ / "cpu,cpuacct" / "agent", memory = root_ / "memory" / "agent",
                 blkio = root_ / "blkio";
  const CgroupLimits limits = CgroupLimits::DetectV1(
      {{"cpu", cpu.string()}, {"cpuacct", cpu.string()}, {"memory", memory.string()},
       {"blkio", blkio.string()}});
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  EXPECT_EQ(limits.version(), CgroupVersion::kV1);
  EXPECT_EQ(limits.Kind(), "cgroup-v1");
  const std::string name = "gpufleet-job-9";
  // Swap is accounted when the kernel offers memory.memsw (a fresh cgroup has the file).
  fs::create_directories(memory / "gpufleet-jobs" / name);
  std::ofstream(memory / "gpufleet-jobs" / name / "memory.memsw.limit_in_bytes") << "-1";
  auto procs = limits.Prepare(9, JobLimits{1500, 256});
  ASSERT_TRUE(procs.ok()) << procs.error();
  std::vector<std::string> got = procs.value();
  std::sort(got.begin(), got.end());
  std::vector<std::string> want = {(blkio / "gpufleet-jobs" / name / "cgroup.procs").string(),
                                   (cpu / "gpufleet-jobs" / name / "cgroup.procs").string(),
                                   (memory / "gpufleet-jobs" / name / "cgroup.procs").string()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want) << "one per hierarchy, cpu and cpuacct once";
  const fs::path c = cpu / "gpufleet-jobs" / name, m = memory / "gpufleet-jobs" / name;
  EXPECT_EQ(Read(c / "cpu.cfs_period_us"), "100000");
  EXPECT_EQ(Read(c / "cpu.cfs_quota_us"), "150000");
  EXPECT_EQ(Read(m / "memory.limit_in_bytes"), "268435456");
  EXPECT_EQ(Read(m / "memory.memsw.limit_in_bytes"), "268435456") << "no swap beyond the limit";
  EXPECT_EQ(limits.JobPidsMax(), 0) << "no pids hierarchy: no process cap";
  // Unlimited: -1 in both.
  ASSERT_TRUE(limits.Prepare(10, JobLimits{}).ok());
  EXPECT_EQ(Read(cpu / "gpufleet-jobs" / "gpufleet-job-10" / "cpu.cfs_quota_us"), "-1");
  EXPECT_EQ(Read(memory / "gpufleet-jobs" / "gpufleet-job-10" / "memory.limit_in_bytes"), "-1");

  std::ofstream(c / "cpuacct.usage") << "3000000000\n";
  std::ofstream(c / "cpu.stat") << "nr_periods 40\nnr_throttled 20\nthrottled_time 1000000000\n";
  std::ofstream(m / "cgroup.procs") << "55\n";
  std::ofstream(m / "memory.usage_in_bytes") << "2048\n";
  std::ofstream(m / "memory.max_usage_in_bytes") << "8192\n";
  std::ofstream(m / "memory.oom_control") << "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
  std::ofstream(blkio / "gpufleet-jobs" / name / "blkio.throttle.io_service_bytes")
      << "8:0 Read 4096\n8:0 Write 512\n8:0 Sync 0\n8:0 Async 4608\n8:0 Total 4608\n"
         "8:16 Read 10\n8:16 Write 20\nTotal 4638\n";
  const core::HostUsage u = limits.ReadUsage(9);
  using F = core::UsageFigure;
  EXPECT_EQ(u.source, core::UsageSource::kCgroupV1);
  EXPECT_EQ(u.get(F::kCpuUsageUs), 3000000);
  EXPECT_EQ(u.get(F::kCpuThrottledPeriods), 20);
  EXPECT_EQ(u.get(F::kCpuThrottledUs), 1000000);
  EXPECT_EQ(u.get(F::kMemoryCurrentBytes), 2048);
  EXPECT_EQ(u.get(F::kMemoryPeakBytes), 8192);
  EXPECT_EQ(u.get(F::kOomKills), 2);
  EXPECT_EQ(u.get(F::kIoReadBytes), 4106);
  EXPECT_EQ(u.get(F::kIoWriteBytes), 532);
  EXPECT_EQ(u.Missing(), (std::vector<std::string>{"cpu_wait_us", "cpu_pressure_some_us",
                                                   "io_pressure_some_us",
                                                   "memory_pressure_some_us", "io_blocked_us"}))
      << "v1 has no per-cgroup PSI";
  EXPECT_EQ(limits.Processes(9), std::vector<pid_t>{55});

  // Without the memory hierarchy, v1 is not usable.
  const CgroupLimits no_memory = CgroupLimits::DetectV1({{"cpu", cpu.string()}});
  EXPECT_FALSE(no_memory.available());
  EXPECT_NE(no_memory.why_unavailable().find("cpu and memory"), std::string::npos);
}

TEST_F(CgroupLimitsTest, EachAgentHasItsOwnJobsCgroupThatSurvivesItsRestarts) {
  std::ofstream(root_ / "cgroup.controllers") << "cpu memory\n";
  const std::string a = CgroupLimits::InstanceTag("/var/lib/gpufleet-a");
  EXPECT_EQ(a.size(), 8U);
  EXPECT_EQ(a, CgroupLimits::InstanceTag("/var/lib/gpufleet-a")) << "stable across restarts";
  EXPECT_NE(a, CgroupLimits::InstanceTag("/var/lib/gpufleet-b"));
  const CgroupLimits one = CgroupLimits::Detect(root_.string(), a);
  const CgroupLimits two = CgroupLimits::Detect(root_.string(), "0000beef");
  EXPECT_EQ(one.JobDirs(3), std::vector<std::string>{(root_ / ("gpufleet-jobs-" + a) /
                                                      "gpufleet-job-3").string()});
  EXPECT_NE(one.JobDirs(3), two.JobDirs(3)) << "two agents never share job 3's cgroup";
}

TEST_F(CgroupLimitsTest, WithoutTheControllersItSaysWhyAndJobsRunUnlimited) {
  std::ofstream(root_ / "cgroup.controllers") << "hugetlb\n";
  const CgroupLimits limits = CgroupLimits::Detect(root_.string());
  EXPECT_FALSE(limits.available());
  EXPECT_NE(limits.why_unavailable().find("memory controller"), std::string::npos)
      << limits.why_unavailable();
  EXPECT_EQ(limits.Kind(), "none");
  EXPECT_FALSE(limits.Prepare(1, JobLimits{1000, 0}).ok());
  EXPECT_TRUE(limits.ForLaunch(1, JobLimits{1000, 0}, "test").empty());  // said once, no error
  EXPECT_TRUE(limits.ForLaunch(2, JobLimits{1000, 0}, "test").empty());
  EXPECT_FALSE(limits.ReadUsage(1).measured());
  // No cgroup v2 at all (this machine may have one; a path that is none certainly is not).
  EXPECT_FALSE(CgroupLimits::Detect((root_ / "nowhere").string()).available());
}

// With a pids hierarchy (as this kind of machine mounts), each job joins it and holds at most a
// quarter of pid_max.
TEST_F(CgroupLimitsTest, OnV1AFreezerHierarchyHoldsEachJobWhichIsThawedAfterItsRelease) {
  const fs::path cpu = root_ / "cpu" / "agent", memory = root_ / "memory" / "agent",
                 freezer = root_ / "freezer";
  CgroupLimits limits = CgroupLimits::DetectV1(
      {{"cpu", cpu.string()}, {"memory", memory.string()}, {"freezer", freezer.string()}});
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  auto procs = limits.Prepare(6, JobLimits{});
  ASSERT_TRUE(procs.ok()) << procs.error();
  const fs::path job = freezer / "gpufleet-jobs" / "gpufleet-job-6";
  EXPECT_NE(std::find(procs.value().begin(), procs.value().end(), (job / "cgroup.procs").string()),
            procs.value().end());
  std::ofstream(job / "freezer.state") << "THAWED\n";
  // A leftover process of the job (a child of this test, so that the kill reaches nothing else).
  const pid_t leftover = ::fork();
  if (leftover == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(leftover, 0);
  std::ofstream(job / "cgroup.procs") << leftover << "\n";
  limits.Release(6, 0);
  // (Plain files: the directory stays, with what was written last.)
  EXPECT_EQ(Read(job / "freezer.state"), "THAWED") << "frozen for the kill, then thawed";
  int status = 0;
  ASSERT_EQ(::waitpid(leftover, &status, 0), leftover);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // With no process left in it, nothing is frozen (and nothing waited for).
  std::ofstream(job / "cgroup.procs", std::ios::trunc).flush();
  std::ofstream(job / "freezer.state") << "THAWED\n";
  limits.ReleasePending();
  EXPECT_EQ(Read(job / "freezer.state"), "THAWED\n");
}

// Found by a review: jobs were kept to their GPUs by CUDA_VISIBLE_DEVICES alone, which a job can
// unset. With a devices hierarchy, each job's cgroup there denies the GPUs it was not given.
TEST_F(CgroupLimitsTest, OnV1ADevicesHierarchyDeniesTheGpusAJobWasNotGiven) {
  const fs::path cpu = root_ / "cpu" / "agent", memory = root_ / "memory" / "agent",
                 devices = root_ / "devices";
  const CgroupLimits without =
      CgroupLimits::DetectV1({{"cpu", cpu.string()}, {"memory", memory.string()}});
  EXPECT_FALSE(without.ConfinesDevices());
  const CgroupLimits limits = CgroupLimits::DetectV1(
      {{"cpu", cpu.string()}, {"memory", memory.string()}, {"devices", devices.string()}});
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  EXPECT_TRUE(limits.ConfinesDevices());
  auto procs = limits.Prepare(7, JobLimits{}, false, {"c 195:1", "c 195:3"});
  ASSERT_TRUE(procs.ok()) << procs.error();
  const fs::path job = devices / "gpufleet-jobs" / "gpufleet-job-7";
  EXPECT_NE(std::find(procs.value().begin(), procs.value().end(), (job / "cgroup.procs").string()),
            procs.value().end())
      << "the job joins its devices cgroup";
  // Plain files: both writes appended (the kernel takes one rule per write).
  EXPECT_EQ(Read(job / "devices.deny"), "c 195:1 rwmc 195:3 rwm");
  // A job given every GPU is denied none.
  ASSERT_TRUE(limits.Prepare(8, JobLimits{}).ok());
  EXPECT_FALSE(fs::exists(devices / "gpufleet-jobs" / "gpufleet-job-8" / "devices.deny"));
}

// A child that leads a process group of its own and waits for a signal (a job's shim, for
// Release); -1 when it could not be made.
pid_t StartGroupLeader() {
  const pid_t leader = ::fork();
  if (leader == 0) {
    ::setsid();
    ::pause();
    ::_exit(0);
  }
  for (int i = 0; leader > 0 && i < 1000 && ::getpgid(leader) != leader; ++i) ::usleep(1000);
  return leader > 0 && ::getpgid(leader) == leader ? leader : -1;
}

// Whether `leader` ends by SIGKILL within 2 s (else it is killed here, and the answer is no).
bool EndsKilled(pid_t leader) {
  int status = 0;
  pid_t ended = 0;
  for (int i = 0; i < 2000 && ended == 0; ++i) {
    ended = ::waitpid(leader, &status, WNOHANG);
    if (ended == 0) ::usleep(1000);
  }
  if (ended == 0) {
    ::kill(leader, SIGKILL);
    ::waitpid(leader, &status, 0);
    return false;
  }
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// Found by a review: without cgroups, a job's process group was killed whenever a group of its
// id had members, long after the job ended; after a pid wrap that id may be another process's
// group (another job's shim, a login), which was killed with it.
TEST(CgroupLimitsRelease, WithoutCgroupsAGroupWhoseIdAnotherProcessHoldsIsNotKilled) {
  const pid_t leader = StartGroupLeader();
  ASSERT_GT(leader, 0);
  CgroupLimits none;  // no cgroups: the process group is what Release kills
  ASSERT_FALSE(none.available());
  const uint64_t start = ChildStartTicks(leader);
  none.Release(1, leader, start + 1);  // the job's leader started at another time: not this one
  ::usleep(20000);
  int status = 0;
  EXPECT_EQ(::waitpid(leader, &status, WNOHANG), 0) << "another's process group was killed";
  none.Release(1, leader, start);  // the job's own group
  EXPECT_TRUE(EndsKilled(leader));
}

// Found by a review: where cgroups work but one job's could not be made (it is launched without,
// unless GPUs had to be denied), nothing was killed when it ended: what it left behind kept
// running, and kept its GPU memory while the next job got the GPU.
TEST_F(CgroupLimitsTest, AJobLaunchedWithoutItsCgroupHasItsProcessGroupKilled) {
  std::ofstream(root_ / "cgroup.controllers") << "cpu memory\n";
  CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  const pid_t leader = StartGroupLeader();
  ASSERT_GT(leader, 0);
  limits.Release(99, leader, ChildStartTicks(leader));  // job 99 never got its cgroup
  EXPECT_TRUE(EndsKilled(leader)) << "the job's process group outlived its release";
}

// Found by a review of the fix above: the usual failure leaves some of the job's cgroup
// directories made (one hierarchy's, before another's failed), and Release took their presence
// for the job's cgroup. Now a job ForLaunch launched without its cgroup is killed by its group.
TEST_F(CgroupLimitsTest, AJobWhosePrepareFailedHalfWayHasItsProcessGroupKilled) {
  const fs::path cpu = root_ / "cpu" / "agent", memory = root_ / "memory" / "agent";
  CgroupLimits limits =
      CgroupLimits::DetectV1({{"cpu", cpu.string()}, {"memory", memory.string()}});
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  fs::remove_all(memory / "gpufleet-jobs");  // the cpu directory is made, the memory one fails
  EXPECT_TRUE(limits.ForLaunch(77, JobLimits{}, "test").empty());
  EXPECT_FALSE(fs::exists(cpu / "gpufleet-jobs" / "gpufleet-job-77")) << "removed again";
  const pid_t leader = StartGroupLeader();
  ASSERT_GT(leader, 0);
  fs::create_directories(cpu / "gpufleet-jobs" / "gpufleet-job-77");  // as if it could not go
  limits.Release(77, leader, ChildStartTicks(leader));
  EXPECT_TRUE(EndsKilled(leader)) << "the job's process group outlived its release";
}

TEST(DeviceRule, NamesACharacterDeviceAndNothingElse) {
  EXPECT_EQ(DeviceRule("/dev/null"), "c 1:3");
  EXPECT_EQ(DeviceRule("/dev/zero"), "c 1:5");
  EXPECT_EQ(DeviceRule("/etc/passwd"), "");
  EXPECT_EQ(DeviceRule("/dev/no-such-device-here"), "");
  EXPECT_EQ(DeviceRule("/dev"), "");
}

TEST_F(CgroupLimitsTest, OnV1APidsHierarchyCapsEachJobsProcesses) {
  const fs::path cpu = root_ / "cpu" / "agent", memory = root_ / "memory" / "agent",
                 pids = root_ / "pids";
  const CgroupLimits limits = CgroupLimits::DetectV1(
      {{"cpu", cpu.string()}, {"memory", memory.string()}, {"pids", pids.string()}});
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  const int64_t pid_max = std::stoll(Read("/proc/sys/kernel/pid_max"));
  EXPECT_EQ(limits.JobPidsMax(), std::max<int64_t>(1024, pid_max / 4));
  auto procs = limits.Prepare(5, JobLimits{});
  ASSERT_TRUE(procs.ok()) << procs.error();
  const fs::path job = pids / "gpufleet-jobs" / "gpufleet-job-5";
  EXPECT_NE(std::find(procs.value().begin(), procs.value().end(), (job / "cgroup.procs").string()),
            procs.value().end());
  EXPECT_EQ(Read(job / "pids.max"), std::to_string(limits.JobPidsMax()));
  // Found by a review: the cap was per job only, so four jobs of one user took every pid.
  EXPECT_EQ(Read(pids / "gpufleet-jobs" / "pids.max"),
            std::to_string(std::max(limits.JobPidsMax(), pid_max / 4 * 3)))
      << "all jobs together";
  EXPECT_EQ(Read(memory / "gpufleet-jobs" / "memory.limit_in_bytes"), JobsMemoryCapHere());
  EXPECT_EQ(Read(memory / "gpufleet-jobs" / "memory.use_hierarchy"), "1");
}

// Found by a review: on v2 only memory.max was written, so a limited job could push the rest of
// its memory into swap (v1 limits memory+swap).
TEST_F(CgroupLimitsTest, OnV2ALimitedJobGetsNoSwapWhereSwapIsAccounted) {
  std::ofstream(root_ / "cgroup.controllers") << "cpu memory\n";
  fs::create_directories(root_ / "gpufleet-jobs");
  std::ofstream(root_ / "gpufleet-jobs" / "memory.swap.max") << "max\n";
  CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  ASSERT_TRUE(limits.Prepare(9, JobLimits{0, 512}).ok());
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "gpufleet-job-9" / "memory.swap.max"), "0");
  ASSERT_TRUE(limits.Prepare(10, JobLimits{}).ok());
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "gpufleet-job-10" / "memory.swap.max"), "max");
}

}  // namespace
}  // namespace gpufleet::agent
