#include "agent/runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "agent/process_tree.h"
#include "gpu/process_info.h"

namespace gpufleet::agent {
namespace {

// The shim this build made (Runner::Launch starts it; DefaultShimPath reads the variable).
const int kUseThisBuildsShim = setenv("GPUFLEET_SHIM", GPUFLEET_SHIM_BINARY, 1);

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-runner-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  LaunchSpec Spec(int64_t id, std::vector<std::string> argv) {
    LaunchSpec s;
    s.job_id = id;
    s.argv = std::move(argv);
    s.log_path = (dir_ / (std::to_string(id) + ".log")).string();
    s.user = CurrentUser();
    s.workdir = dir_.string();
    return s;
  }
  // Jobs run as whoever runs the test (root in CI, which must then be allowed explicitly).
  static RunAsPolicy TestPolicy() {
    RunAsPolicy policy;
    policy.allow_root = true;
    policy.node_name = "test-node";
    return policy;
  }
  static std::string CurrentUser() {
    const passwd* pw = getpwuid(geteuid());
    return pw != nullptr ? pw->pw_name : "";
  }
  std::vector<JobExit> WaitExits(Runner& runner, std::size_t n, double seconds = 10) {
    std::vector<JobExit> all;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(int(seconds * 1000));
    while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
      for (const JobExit& e : runner.Reap()) all.push_back(e);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return all;
  }
  std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

TEST_F(RunnerTest, RunsArgvWithTheJobEnvironmentAndLogs) {
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(7, {"sh", "-c",
                             "echo gpus=$CUDA_VISIBLE_DEVICES job=$GPUFLEET_JOB_ID "
                             "world=$WORLD_SIZE local=$LOCAL_WORLD_SIZE mine=$MINE; echo err >&2; "
                             "exit 3"});
  spec.gpu_indices = {1, 3};
  spec.env = {{"MINE", "a b"}};
  ASSERT_TRUE(runner.Launch(spec).ok());
  const auto exits = WaitExits(runner, 1);
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_EQ(exits[0].job_id, 7);
  EXPECT_EQ(exits[0].exit_code, 3);
  EXPECT_FALSE(exits[0].stopped);
  const std::string log = Slurp(spec.log_path);
  EXPECT_NE(log.find("gpus=1,3 job=7 world=1 local=2 mine=a b"), std::string::npos) << log;
  EXPECT_NE(log.find("err"), std::string::npos);
}

TEST_F(RunnerTest, ArgvIsNotInterpretedByAShell) {
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(1, {"echo", "$HOME;", "`id`"});
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  EXPECT_EQ(Slurp(spec.log_path), "$HOME; `id`\n");
}

TEST_F(RunnerTest, UnrunnableCommandIsAnErrorAtLaunch) {
  Runner runner(TestPolicy());
  auto r = runner.Launch(Spec(2, {"/nonexistent/trainer"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cannot run '/nonexistent/trainer'"), std::string::npos) << r.error();
  LaunchSpec bad_dir = Spec(3, {"true"});
  bad_dir.workdir = "/nonexistent-dir";
  auto d = runner.Launch(bad_dir);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("working directory"), std::string::npos);
  EXPECT_EQ(runner.size(), 0U);
}

// A failure reported by a process its user could stop (here: a shim that reports and then
// never ends) used to hold Launch, and with it the agent's beats, until the shim ended.
TEST_F(RunnerTest, AFailedStartWhoseShimHangsIsAnsweredAtOnce) {
  const std::filesystem::path hanging = dir_ / "hanging-shim";
  {
    std::ofstream script(hanging);
    // kShimChdir, ENOENT: as the job child reports a working directory it cannot enter.
    script << "#!/bin/sh\nprintf '\\001\\000\\000\\000\\002\\000\\000\\000' >&3\n"
              "exec sleep 30\n";
  }
  std::filesystem::permissions(
      hanging, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                   std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                   std::filesystem::perms::others_exec);
  Runner runner(TestPolicy(), hanging.string());
  const auto started = std::chrono::steady_clock::now();
  auto r = runner.Launch(Spec(40, {"true"}));
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("working directory"), std::string::npos) << r.error();
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_EQ(runner.size(), 0U);
}

// What a job leaves in /dev/shm or System V shared memory used to stay on the node, charged to
// the jobs' memory cap, and every other job saw it. Each host job of a root agent now has its
// own, gone with its last process.
TEST_F(RunnerTest, AHostJobHasADevShmAndIpcNamespaceOfItsOwnThatGoWithIt) {
  if (!PrivateShmUnavailable().empty()) GTEST_SKIP() << PrivateShmUnavailable();
  const std::string left = "/dev/shm/gpufleet-runner-test-" + std::to_string(::getpid());
  std::filesystem::remove(left);
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(41, {"sh", "-c",
                              "echo x > " + left + " && ls " + left +
                                  " && readlink /proc/self/ns/ipc && df -k /dev/shm | tail -1"});
  spec.memory_mib = 64;
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).at(0).exit_code, 0) << Slurp(spec.log_path);
  const std::string log = Slurp(spec.log_path);
  EXPECT_NE(log.find(left), std::string::npos) << log;  // it wrote there
  EXPECT_FALSE(std::filesystem::exists(left)) << "left on the node's /dev/shm";
  EXPECT_EQ(log.find(std::filesystem::read_symlink("/proc/self/ns/ipc").string()),
            std::string::npos)
      << "the node's IPC namespace: " << log;
  EXPECT_NE(log.find(" 65536 "), std::string::npos) << "a 64 MiB tmpfs: " << log;

  // --shared-dev-shm: the node's, as before.
  RunAsPolicy shared = TestPolicy();
  shared.shared_dev_shm = true;
  Runner sharing(shared);
  LaunchSpec node_shm =
      Spec(42, {"sh", "-c", "echo x > " + left + " && readlink /proc/self/ns/ipc"});
  ASSERT_TRUE(sharing.Launch(node_shm).ok());
  ASSERT_EQ(WaitExits(sharing, 1).at(0).exit_code, 0) << Slurp(node_shm.log_path);
  EXPECT_TRUE(std::filesystem::exists(left)) << "written to the node's /dev/shm";
  EXPECT_NE(
      Slurp(node_shm.log_path).find(std::filesystem::read_symlink("/proc/self/ns/ipc").string()),
      std::string::npos);
  std::filesystem::remove(left);
}

TEST_F(RunnerTest, StopSendsTermThenKillsTheWholeGroup) {
  Runner runner(TestPolicy());
  // The job ignores SIGTERM and has a child of its own: both must go after the grace period.
  LaunchSpec spec = Spec(4, {"sh", "-c", "trap '' TERM; sleep 100 & sleep 100"});
  ASSERT_TRUE(runner.Launch(spec).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(runner.Stop(4, 0.3));
  const auto start = std::chrono::steady_clock::now();
  const auto exits = WaitExits(runner, 1);
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_TRUE(exits[0].stopped);
  EXPECT_EQ(exits[0].signal, SIGKILL);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
  EXPECT_FALSE(runner.Stop(4, 1)) << "no longer running";

  // A job that honours SIGTERM ends at once, with its own status.
  LaunchSpec polite = Spec(5, {"sh", "-c", "trap 'exit 42' TERM; while :; do sleep 0.05; done"});
  ASSERT_TRUE(runner.Launch(polite).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  runner.Stop(5, 30);
  const auto polite_exit = WaitExits(runner, 1);
  ASSERT_EQ(polite_exit.size(), 1U);
  EXPECT_EQ(polite_exit[0].exit_code, 42);
}

// Whether process `pid` has ended (gone, or a zombie) within `seconds`.
bool EndsWithin(pid_t pid, double seconds) {
  for (int waited_ms = 0;; waited_ms += 10) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t name_end = text.rfind(')');
    if (!stat || name_end == std::string::npos || text.compare(name_end + 1, 3, " Z ") == 0) {
      return true;
    }
    if (waited_ms >= seconds * 1000) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The pid a job wrote to `path` once it is there, after the process has left its job's process
// group (setsid); 0 when that did not happen within 5 s.
pid_t EscapedPid(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(path);
    pid_t pid = 0;
    if (in >> pid && pid > 0 && ::getsid(pid) == pid) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

TEST_F(RunnerTest, WhatAJobLeftRunningOutsideItsProcessGroupEndsWithIt) {
  Runner runner(TestPolicy());
  // A daemon in a session of its own, left behind: without cgroups, only the shim (its child
  // subreaper) still finds it.
  const std::string pid_file = (dir_ / "escaped").string();
  LaunchSpec spec =
      Spec(8, {"sh", "-c", "setsid sleep 300 & echo $! > " + pid_file + "; sleep 0.3; exit 0"});
  ASSERT_TRUE(runner.Launch(spec).ok());
  const pid_t escaped = EscapedPid(pid_file);
  ASSERT_GT(escaped, 0) << "the job's daemon did not start its own session";
  const auto exits = WaitExits(runner, 1);
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_EQ(exits[0].exit_code, 0) << "the job's own status, not the daemon's end";
  EXPECT_TRUE(EndsWithin(escaped, 2)) << "pid " << escaped << " outlived its job";
  if (!EndsWithin(escaped, 0)) ::kill(escaped, SIGKILL);
}

TEST_F(RunnerTest, AStopReachesWhatLeftTheJobsProcessGroup) {
  Runner runner(TestPolicy());
  // Both ignore SIGTERM: the kill after the grace period must reach the daemon before the shim
  // dies with the group.
  const std::string pid_file = (dir_ / "escaped").string();
  LaunchSpec spec = Spec(
      9, {"sh", "-c", "trap '' TERM; setsid sleep 300 & echo $! > " + pid_file + "; sleep 300"});
  ASSERT_TRUE(runner.Launch(spec).ok());
  const pid_t escaped = EscapedPid(pid_file);
  ASSERT_GT(escaped, 0) << "the job's daemon did not start its own session";
  ASSERT_TRUE(runner.Stop(9, 0.2));
  const auto exits = WaitExits(runner, 1);
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_EQ(exits[0].signal, SIGKILL);
  EXPECT_TRUE(EndsWithin(escaped, 2)) << "pid " << escaped << " outlived its stop";
  if (!EndsWithin(escaped, 0)) ::kill(escaped, SIGKILL);
}

// Processes whose command line is exactly `argv` that have not ended (zombies do not count).
std::vector<pid_t> LiveProcessesRunning(const std::string& argv) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    if (cmdline == argv && !EndsWithin(std::stoi(name), 0)) out.push_back(std::stoi(name));
  }
  return out;
}

TEST_F(RunnerTest, AStopCatchesAJobForkingDaemonsAsFastAsItCan) {
  Runner runner(TestPolicy());
  // Stopped while it still forks: each daemon leaves the group at once and ignores SIGTERM.
  LaunchSpec spec = Spec(12, {"sh", "-c",
                              "trap '' TERM; i=0; while [ $i -lt 300 ]; do setsid sleep 3012 & "
                              "i=$((i+1)); done; sleep 300"});
  ASSERT_TRUE(runner.Launch(spec).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(runner.Stop(12, 0.05));
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  const std::string daemon(
      "sleep\0"
      "3012\0",
      11);
  std::vector<pid_t> left;
  for (int i = 0; i < 200; ++i) {  // killed ones may take a moment to become zombies
    left = LiveProcessesRunning(daemon);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(left.empty()) << left.size() << " daemons outlived the stop";
  for (pid_t pid : left) ::kill(pid, SIGKILL);
}

TEST_F(RunnerTest, TheShimReapsTheOrphansItAdoptsWhileTheJobRuns) {
  Runner runner(TestPolicy());
  // Two double-forked processes that end at once: each becomes the shim's child, and a zombie
  // until the shim reaps it (a job that does this every step must not fill the node with them).
  LaunchSpec spec = Spec(10, {"sh", "-c", "(true &); (true &); sleep 1"});
  const auto launched = runner.Launch(spec);
  ASSERT_TRUE(launched.ok()) << launched.error();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(ChildrenOf(launched.value().pid).size(), 1U) << "only the job itself is left";
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
}

TEST_F(RunnerTest, AJobsProcessIsAttributedByItsShimNotByTheVariableItSets) {
  Runner runner(TestPolicy());
  // Without a job cgroup (none here), a process claiming another job's id in its environment.
  LaunchSpec spec = Spec(11, {"sh", "-c", "exec env GPUFLEET_JOB_ID=999 sleep 30"});
  const auto launched = runner.Launch(spec);
  ASSERT_TRUE(launched.ok()) << launched.error();
  std::vector<pid_t> job;
  for (int i = 0; i < 500 && job.empty(); ++i) {
    job = ChildrenOf(launched.value().pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(job.size(), 1U);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past env's exec of sleep
  gpu::ProcessInspector inspector;
  EXPECT_EQ(inspector.Lookup(static_cast<uint32_t>(job[0]), 0).job_id, "11");
  runner.Stop(11, 0);
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
}

TEST_F(RunnerTest, JobsOutliveTheRunnerAndAreReAdopted) {
  LaunchSpec spec = Spec(8, {"sh", "-c", "echo before; sleep 0.4; echo after; exit 5"});
  Launched launched;
  {
    Runner first(TestPolicy());
    auto r = first.Launch(spec);
    ASSERT_TRUE(r.ok()) << r.error();
    launched = r.value();
    EXPECT_EQ(launched.start_ticks, ProcessStartTicks(launched.pid));
  }  // the agent goes away; the job does not
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NE(ProcessStartTicks(launched.pid), 0U) << "still running";
  Runner second(TestPolicy());
  ASSERT_TRUE(second.Adopt(8, launched, spec.log_path));
  const auto exits = WaitExits(second, 1);
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_EQ(exits[0].exit_code, 5) << "read from the exit record the shim wrote";
  EXPECT_EQ(Slurp(spec.log_path), "before\nafter\n");

  // A job that ended while nobody watched is adopted from its record alone.
  Runner third(TestPolicy());
  EXPECT_TRUE(third.Adopt(8, launched, spec.log_path));
  EXPECT_EQ(WaitExits(third, 1).at(0).exit_code, 5);
  // No process and no record: how it ended is unknown, so it is not adopted.
  std::filesystem::remove(ExitFilePath(spec.log_path));
  Runner fourth(TestPolicy());
  EXPECT_FALSE(fourth.Adopt(8, launched, spec.log_path));
}

// After a reboot the same pid may run again with the same start tick (ticks count from boot): a
// record of another boot is never taken for a running process, only for its exit record.
TEST_F(RunnerTest, AProcessOfAnotherBootIsNotReAdopted) {
  if (CurrentBootId().empty()) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
  LaunchSpec spec = Spec(10, {"sleep", "30"});
  Launched launched;
  {
    Runner first(TestPolicy());
    auto r = first.Launch(spec);
    ASSERT_TRUE(r.ok()) << r.error();
    launched = r.value();
  }
  EXPECT_EQ(launched.boot_id, CurrentBootId());
  Launched before_reboot = launched;
  before_reboot.boot_id = "00000000-0000-0000-0000-000000000000";
  Runner second(TestPolicy());
  EXPECT_FALSE(second.Adopt(10, before_reboot, spec.log_path))
      << "pid and start ticks match, but they were another boot's";
  // The same record of this boot is the running job.
  Runner third(TestPolicy());
  ASSERT_TRUE(third.Adopt(10, launched, spec.log_path));
  ASSERT_TRUE(third.Stop(10, 5));  // its shim records how it ended
  EXPECT_EQ(WaitExits(third, 1).size(), 1U);
  // Another boot's job that left its exit record is reported from it.
  Runner fourth(TestPolicy());
  EXPECT_TRUE(fourth.Adopt(10, before_reboot, spec.log_path));
  EXPECT_EQ(WaitExits(fourth, 1).size(), 1U);
}

TEST_F(RunnerTest, AJobThatEndedBeforeItsStartTimeWasReadIsStillReAdopted) {
  // A job as short as `true` can end before the launching agent reads its shim's start time.
  // Such a job, adopted from its exit record by a restarted agent, must be reported as ended,
  // not watched forever (found by the 1,000-submits-through-kill-9 test).
  LaunchSpec spec = Spec(9, {"true"});
  { std::ofstream(ExitFilePath(spec.log_path)) << "0 0\n"; }
  Runner runner(TestPolicy());
  ASSERT_TRUE(runner.Adopt(9, Launched{999999, 0, ""}, spec.log_path));
  const auto exits = WaitExits(runner, 1, 2);
  ASSERT_EQ(exits.size(), 1U) << "the ended job is reported";
  EXPECT_EQ(exits[0].exit_code, 0);
}

TEST_F(RunnerTest, AChildsStartTimeIsReadAfterItHasEnded) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  for (int i = 0; i < 500 && ProcessStartTicks(child) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(ProcessStartTicks(child), 0U) << "a zombie counts as gone";
  EXPECT_NE(ChildStartTicks(child), 0U) << "but it is still our child, with its start time";
  waitpid(child, nullptr, 0);
  EXPECT_EQ(ChildStartTicks(child), 0U);
}

TEST_F(RunnerTest, ShimStopsTheJobOnceItsLeaseHasRunOut) {
  Runner runner(TestPolicy());
  const std::string lease = (dir_ / "lease").string();
  LaunchSpec spec = Spec(31, {"sleep", "30"});
  spec.lease_path = lease;
  spec.lease_grace_s = 0.5;
  // A deadline far ahead: the job runs on.
  std::ofstream(lease) << "99999999999999\n";
  ASSERT_TRUE(runner.Launch(spec).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(runner.Reap().empty());
  // The deadline passes (the agent stopped renewing it): the shim stops the job by itself.
  std::ofstream(lease) << "1\n";
  const std::vector<JobExit> exits = WaitExits(runner, 1, 5);
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_EQ(exits[0].signal, SIGTERM);
  EXPECT_TRUE(std::filesystem::exists(FencedFilePath(spec.log_path)));
}

TEST_F(RunnerTest, ShimJoinsTheJobCgroupBeforeTheJobStarts) {
  Runner runner(TestPolicy());
  // Stand-ins for the cgroup.procs of two v1 hierarchies: the shim writes "0" (itself) into each.
  const std::string procs = (dir_ / "cgroup.procs").string();
  const std::string procs2 = (dir_ / "cgroup2.procs").string();
  std::ofstream(procs).flush();
  std::ofstream(procs2).flush();
  LaunchSpec spec = Spec(32, {"true"});
  spec.cgroup_procs = {procs, procs2};
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  for (const std::string& file : {procs, procs2}) {
    std::ifstream in(file);
    std::string text;
    in >> text;
    EXPECT_EQ(text, "0") << file;
  }
  // A cgroup that cannot be joined fails the launch, saying which.
  spec = Spec(33, {"true"});
  spec.cgroup_procs = {procs, (dir_ / "missing" / "cgroup.procs").string()};
  auto failed = runner.Launch(spec);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find("cannot join its cgroup"), std::string::npos) << failed.error();
}

// Security finding 2: the agent's own environment (its admin token above all) never reaches a job.
TEST_F(RunnerTest, JobEnvironmentIsBuiltFromScratch) {
  ::setenv("GPUFLEET_TOKEN", "agent-secret-token", 1);
  ::setenv("AGENT_ONLY_VARIABLE", "leak", 1);
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(11, {"env"});
  spec.env = {{"MINE", "1"}, {"CUDA_VISIBLE_DEVICES", "9"}, {"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}};
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  ::unsetenv("GPUFLEET_TOKEN");
  ::unsetenv("AGENT_ONLY_VARIABLE");
  const std::string log = Slurp(spec.log_path);
  EXPECT_EQ(log.find("agent-secret-token"), std::string::npos) << log;
  EXPECT_EQ(log.find("AGENT_ONLY_VARIABLE"), std::string::npos) << log;
  EXPECT_NE(log.find("\nMINE=1\n"), std::string::npos) << log;
  EXPECT_NE(log.find("PATH="), std::string::npos) << log;
  EXPECT_NE(log.find("USER=" + CurrentUser() + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("HOME="), std::string::npos) << log;
  // gpufleet's variables win over the job's.
  EXPECT_NE(log.find("CUDA_VISIBLE_DEVICES=\n"), std::string::npos) << log;
  // Its GPU indices are NVML's, in PCI bus order: CUDA is told to count them so.
  EXPECT_NE(log.find("CUDA_DEVICE_ORDER=PCI_BUS_ID\n"), std::string::npos) << log;
}

// Before, the job's environment travelled on the shim's command line, which every local account
// can read (ps, /proc/PID/cmdline): a secret in --env was public for the job's whole life. Now it
// comes on a memory file the shim reads and closes; the job neither inherits that descriptor nor
// gets the variables gpufleet sets itself from its own env (GPUFLEET_NNODES on a single node).
TEST_F(RunnerTest, TheJobsEnvironmentIsNeverOnTheShimsCommandLine) {
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(17, {"sh", "-c",
                              "echo secret=$SECRET nnodes=${GPUFLEET_NNODES-unset}; "
                              "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; "
                              "readlink /proc/$$/fd/4 || echo no-fd-4"});
  spec.env = {{"SECRET", "hunter2-value"}, {"GPUFLEET_NNODES", "8"}};
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  const std::string log = Slurp(spec.log_path);
  EXPECT_NE(log.find("secret=hunter2-value nnodes=unset\n"), std::string::npos) << log;
  const std::size_t shim_line = log.find("gpufleet-shim");
  ASSERT_NE(shim_line, std::string::npos) << "the job's parent is its shim: " << log;
  EXPECT_EQ(log.find("hunter2-value", shim_line), std::string::npos) << log;
  EXPECT_NE(log.find("no-fd-4"), std::string::npos) << log;
}

// A job's program is searched on the job's own PATH, not the agent's (execvpe searched the
// agent's).
TEST_F(RunnerTest, TheProgramIsFoundOnTheJobsOwnPath) {
  const std::filesystem::path tools = dir_ / "tools";
  std::filesystem::create_directories(tools);
  const std::string tool = (tools / "only-on-the-jobs-path").string();
  std::ofstream(tool) << "#!/bin/sh\necho found-on-job-path\n";
  std::filesystem::permissions(tool, std::filesystem::perms::owner_all |
                                         std::filesystem::perms::group_read |
                                         std::filesystem::perms::group_exec |
                                         std::filesystem::perms::others_read |
                                         std::filesystem::perms::others_exec);
  std::filesystem::permissions(dir_, std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(16, {"only-on-the-jobs-path"});
  spec.env = {{"PATH", tools.string() + ":/usr/bin:/bin"}};
  auto launched = runner.Launch(spec);
  ASSERT_TRUE(launched.ok()) << launched.error();
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  EXPECT_NE(Slurp(spec.log_path).find("found-on-job-path"), std::string::npos);
}

// Issue 12, section 8: a rank of a multi-node job binds gloo and NCCL to the interface of its
// node's advertise address (they picked the host name's, a loopback address on Debian), unless
// the job chose one itself.
TEST_F(RunnerTest, MultiNodeRanksGetTheSocketInterfaceOfTheirAdvertiseAddress) {
  EXPECT_EQ(InterfaceHolding("127.0.0.1"), "lo");
  EXPECT_EQ(InterfaceHolding("192.0.2.77"), "");  // TEST-NET-1: on no interface here
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(14, {"env"});
  spec.launch_env = {{"WORLD_SIZE", "2"}, {"NODE_RANK", "1"}, {"GPUFLEET_NNODES", "2"}};
  spec.node_address = "127.0.0.1";
  spec.env = {{"NCCL_SOCKET_IFNAME", "ib0"}};
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  const std::string log = Slurp(spec.log_path);
  EXPECT_NE(log.find("\nGLOO_SOCKET_IFNAME=lo\n"), std::string::npos) << log;
  EXPECT_NE(log.find("\nNCCL_SOCKET_IFNAME=ib0\n"), std::string::npos) << log;  // the job's
  // A single-node job needs no interface.
  LaunchSpec single = Spec(15, {"env"});
  single.node_address = "127.0.0.1";
  ASSERT_TRUE(runner.Launch(single).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  EXPECT_EQ(Slurp(single.log_path).find("GLOO_SOCKET_IFNAME"), std::string::npos);
  EXPECT_NE(Slurp(single.log_path).find("\nGPUFLEET_RESTART_COUNT=0\n"), std::string::npos);
  // An elastic job's restart on one node: the controller's WORLD_SIZE and restart count win over
  // the single-node defaults, and it still binds no interface.
  LaunchSpec elastic = Spec(16, {"env"});
  elastic.node_address = "127.0.0.1";
  elastic.launch_env = {{"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "4"}, {"RANK", "0"},
                        {"GPUFLEET_RESTART_COUNT", "2"}};
  ASSERT_TRUE(runner.Launch(elastic).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  const std::string elastic_log = Slurp(elastic.log_path);
  EXPECT_NE(elastic_log.find("\nWORLD_SIZE=4\n"), std::string::npos) << elastic_log;
  EXPECT_NE(elastic_log.find("\nGPUFLEET_RESTART_COUNT=2\n"), std::string::npos) << elastic_log;
  EXPECT_EQ(elastic_log.find("GLOO_SOCKET_IFNAME"), std::string::npos) << elastic_log;
}

// Security finding 1: a job whose user has no account here fails with the node and user named;
// before, it ran as the agent (root).
TEST_F(RunnerTest, JobOfAUserWithoutAnAccountFailsInsteadOfRunningAsTheAgent) {
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(12, {"true"});
  spec.user = "no-such-user-gpufleet";
  auto launched = runner.Launch(spec);
  ASSERT_FALSE(launched.ok());
  EXPECT_NE(launched.error().find("no-such-user-gpufleet"), std::string::npos) << launched.error();
  EXPECT_NE(launched.error().find("test-node"), std::string::npos) << launched.error();
  EXPECT_EQ(runner.size(), 0U);
}

TEST_F(RunnerTest, RootJobsNeedTheAdminsConsent) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a non-root agent cannot run root's jobs at all";
  Runner runner;  // default policy: root jobs refused
  LaunchSpec spec = Spec(13, {"true"});
  spec.user = "root";
  auto launched = runner.Launch(spec);
  ASSERT_FALSE(launched.ok());
  EXPECT_NE(launched.error().find("--allow-root-jobs"), std::string::npos) << launched.error();
}

TEST_F(RunnerTest, AsRootAJobRunsAsItsUsersAccountAndOwnsItsLog) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no 'nobody' account here";
  RunAsPolicy policy = TestPolicy();
  policy.user_map["alice"] = "nobody";
  Runner runner(policy);
  LaunchSpec spec = Spec(14, {"id", "-u"});
  spec.user = "alice";
  spec.workdir = "/";
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  EXPECT_EQ(Slurp(spec.log_path), std::to_string(nobody->pw_uid) + "\n");
  struct stat st {};
  ASSERT_EQ(::stat(spec.log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
}

// Found by a review: a job kept the agent's session keyring (setuid and exec keep it), so a job
// of any account possessed root's keys; and it kept the agent's OOM score and nice value. A later
// review: and the agent's real-time and nice limits, and its inheritable capabilities.
TEST_F(RunnerTest, AJobGetsItsOwnKeyringAndNotTheAgentsOomScoreNiceLimitsOrCapabilities) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch users and lower the OOM score";
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no 'nobody' account here";
  if (!std::filesystem::exists("/proc/keys")) GTEST_SKIP() << "no kernel keys here";
  // This test process's own session keyring (so that nothing else's is touched), holding a key.
  if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "gpufleet-runner-test") < 0) {
    GTEST_SKIP() << "keyctl is not permitted here: " << std::strerror(errno);
  }
  const std::string secret = "gpufleet-secret-" + std::to_string(::getpid());
  ASSERT_GE(syscall(SYS_add_key, "user", secret.c_str(), "v", 1, KEY_SPEC_SESSION_KEYRING), 0)
      << std::strerror(errno);
  ASSERT_NE(Slurp("/proc/keys").find(secret), std::string::npos) << "the test itself sees it";
  const std::string old_score = Slurp("/proc/self/oom_score_adj");
  std::ofstream("/proc/self/oom_score_adj") << "-500";
  // (Some sandboxes refuse the write; then only the keyring and the nice value are checked.)
  const bool score_set = Slurp("/proc/self/oom_score_adj").rfind("-500", 0) == 0;
  const int old_nice = getpriority(PRIO_PROCESS, 0);
  setpriority(PRIO_PROCESS, 0, -5);
  // A unit's LimitRTPRIO= and LimitNICE=, and a capability (CAP_NET_RAW) in the inheritable set.
  rlimit old_rtprio{}, old_nice_limit{};
  getrlimit(RLIMIT_RTPRIO, &old_rtprio);
  getrlimit(RLIMIT_NICE, &old_nice_limit);
  const rlimit raised{50, 50};
  // (A sandbox without CAP_SYS_RESOURCE refuses to raise them: then the defaults are checked.)
  const bool limits_raised =
      setrlimit(RLIMIT_RTPRIO, &raised) == 0 && setrlimit(RLIMIT_NICE, &raised) == 0;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
  ASSERT_EQ(syscall(SYS_capget, &header, caps), 0) << std::strerror(errno);
  const __u32 old_inheritable = caps[0].inheritable;
  caps[0].inheritable |= 1U << CAP_NET_RAW;
  const bool inheritable_set = syscall(SYS_capset, &header, caps) == 0;  // a sandbox may refuse
  RunAsPolicy policy = TestPolicy();
  policy.user_map["alice"] = "nobody";
  Runner runner(policy);
  LaunchSpec spec = Spec(15, {"sh", "-c",
                              "echo keys:; cat /proc/keys; echo score=$(cat "
                              "/proc/self/oom_score_adj) nice=$(nice); "
                              "awk '/realtime priority|nice priority/{print $2 \"=\" $4 \"/\" $5}' "
                              "/proc/self/limits; awk '/^Cap/{print $1 $2}' /proc/self/status"});
  spec.user = "alice";
  spec.workdir = "/";
  const auto launched = runner.Launch(spec);
  std::ofstream("/proc/self/oom_score_adj") << old_score;
  setpriority(PRIO_PROCESS, 0, old_nice);
  setrlimit(RLIMIT_RTPRIO, &old_rtprio);
  setrlimit(RLIMIT_NICE, &old_nice_limit);
  caps[0].inheritable = old_inheritable;
  syscall(SYS_capset, &header, caps);
  ASSERT_TRUE(launched.ok()) << launched.error();
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  const std::string log = Slurp(spec.log_path);
  EXPECT_EQ(log.find(secret), std::string::npos) << "the job possesses the agent's keys: " << log;
  EXPECT_NE(log.find(score_set ? "score=0 nice=0" : "nice=0"), std::string::npos) << log;
  EXPECT_NE(log.find("realtime=0/0"), std::string::npos)
      << (limits_raised ? "" : "(not raised here) ") << log;
  EXPECT_NE(log.find("nice=0/0"), std::string::npos) << log;
  for (const char* set : {"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"}) {
    EXPECT_NE(log.find(std::string(set) + "0000000000000000"), std::string::npos)
        << set << (inheritable_set ? "" : " (the inheritable set could not be raised here)") << log;
  }
}

// Found by a review: a job kept the agent's I/O scheduling class, so an agent started with a
// real-time I/O class (systemd's IOSchedulingClass=realtime) handed it to every job.
TEST_F(RunnerTest, AJobDoesNotInheritTheAgentsRealTimeIoClass) {
  constexpr int kWhoProcess = 1, kClassRealTime = 1;
  // The test's own class comes back however the test ends.
  struct Restore {
    long ioprio = syscall(SYS_ioprio_get, kWhoProcess, 0);
    ~Restore() { syscall(SYS_ioprio_set, kWhoProcess, 0, ioprio < 0 ? 0 : ioprio); }
  } restore;
  if (syscall(SYS_ioprio_set, kWhoProcess, 0, (kClassRealTime << 13) | 4) != 0) {
    GTEST_SKIP() << "cannot take a real-time I/O class here: " << std::strerror(errno);
  }
  Runner runner(TestPolicy());
  // The job prints its own I/O class (util-linux's ionice: "realtime: prio 4", "none: prio 0").
  LaunchSpec spec = Spec(18, {"ionice"});
  const auto launched = runner.Launch(spec);
  const long own_class_while_launching = syscall(SYS_ioprio_get, kWhoProcess, 0);
  ASSERT_TRUE(launched.ok()) << launched.error();
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  EXPECT_EQ(own_class_while_launching, (kClassRealTime << 13) | 4) << "the test's class was set";
  const std::string log = Slurp(spec.log_path);
  EXPECT_NE(log.find("prio"), std::string::npos) << log;
  EXPECT_EQ(log.find("realtime"), std::string::npos)
      << "the job runs in the agent's real-time I/O class: " << log;
}

// Found by a review: a job kept the agent's audit login id (unset for a service, the admin's uid
// for an agent started from their shell), so the audit log credited its actions to someone else.
TEST_F(RunnerTest, AJobRunsUnderItsOwnAccountsAuditLoginId) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch users and set a login id";
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no 'nobody' account here";
  // Whether this kernel lets a root process set its login id (audit on, ids not immutable),
  // asked in a child so that the test's own stays as it is.
  const pid_t probe = fork();
  if (probe == 0) {
    const int fd = open("/proc/self/loginuid", O_WRONLY);
    _exit(fd >= 0 && write(fd, "4242", 4) == 4 ? 0 : 1);
  }
  int probe_status = 0;
  ASSERT_EQ(waitpid(probe, &probe_status, 0), probe);
  if (!WIFEXITED(probe_status) || WEXITSTATUS(probe_status) != 0) {
    GTEST_SKIP() << "this kernel does not let root set a process's audit login id";
  }
  RunAsPolicy policy = TestPolicy();
  policy.user_map["alice"] = "nobody";
  Runner runner(policy);
  LaunchSpec spec = Spec(20, {"sh", "-c", "echo loginuid=$(cat /proc/self/loginuid)"});
  spec.user = "alice";
  spec.workdir = "/";
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  const std::string log = Slurp(spec.log_path);
  EXPECT_NE(log.find("loginuid=" + std::to_string(nobody->pw_uid) + "\n"), std::string::npos)
      << "the job does not run under its account's login id: " << log;
}

// Found by a review: a root agent ran whatever shim it found beside its binary, so whoever could
// write there (a build tree of another account) ran code as root with the next job.
TEST_F(RunnerTest, ARootAgentRefusesAShimOthersCouldReplace) {
  if (geteuid() != 0) GTEST_SKIP() << "the check is for root agents";
  EXPECT_FALSE(UnsafeForRoot(GPUFLEET_SHIM_BINARY).has_value())
      << *UnsafeForRoot(GPUFLEET_SHIM_BINARY);
  const std::filesystem::path open_dir = dir_ / "open";
  std::filesystem::create_directories(open_dir);
  std::filesystem::permissions(open_dir, std::filesystem::perms::all);  // 0777, not sticky
  std::filesystem::copy_file(GPUFLEET_SHIM_BINARY, open_dir / "gpufleet-shim");
  Runner runner(TestPolicy(), (open_dir / "gpufleet-shim").string());
  auto refused = runner.Launch(Spec(16, {"true"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("is writable by others (group or all)"), std::string::npos)
      << refused.error();
  // Made root's own again, it runs.
  std::filesystem::permissions(
      open_dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                    std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                    std::filesystem::perms::others_exec);
  ASSERT_TRUE(runner.Launch(Spec(17, {"true"})).ok());
  EXPECT_EQ(WaitExits(runner, 1).size(), 1U);
}

// Security finding 10: a job's log had no cap. With one, the first bytes are kept, one line says
// the rest was dropped, and the job is never blocked by its output.
TEST_F(RunnerTest, ALogLimitKeepsTheFirstBytesAndSaysTheRestWasDropped) {
  Runner runner(TestPolicy());
  LaunchSpec spec =
      Spec(15, {"sh", "-c", "echo first; head -c 3000000 /dev/zero | tr '\\0' x; echo; exit 4"});
  spec.log_limit_bytes = 100000;
  ASSERT_TRUE(runner.Launch(spec).ok());
  const auto exits = WaitExits(runner, 1);
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_EQ(exits[0].exit_code, 4);  // the job ran to its end
  const std::string log = Slurp(spec.log_path);
  EXPECT_EQ(log.rfind("first\n", 0), 0U);
  EXPECT_LT(log.size(), 100200U);
  EXPECT_GE(log.size(), 100000U);
  EXPECT_NE(log.find("the log reached its limit of 100000 bytes"), std::string::npos);
}

TEST_F(RunnerTest, ALogLimitLosesNothingBelowIt) {
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(16, {"sh", "-c", "for i in 1 2 3; do echo line $i; done; echo err >&2"});
  spec.log_limit_bytes = 1 << 20;
  ASSERT_TRUE(runner.Launch(spec).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  EXPECT_EQ(Slurp(spec.log_path), "line 1\nline 2\nline 3\nerr\n");
  // With a lease to watch as well (the copy and the lease share the shim's loop).
  LaunchSpec leased = Spec(17, {"sh", "-c", "echo leased; sleep 0.3; echo done"});
  leased.log_limit_bytes = 1 << 20;
  leased.lease_path = (dir_ / "lease").string();
  { std::ofstream(leased.lease_path) << "99999999999999\n"; }
  ASSERT_TRUE(runner.Launch(leased).ok());
  ASSERT_EQ(WaitExits(runner, 1).size(), 1U);
  EXPECT_EQ(Slurp(leased.log_path), "leased\ndone\n");
}

// Review finding: the working directory was entered as root, before the switch to the job's
// account, so a directory below one the user may not pass still served relative paths.
TEST_F(RunnerTest, TheWorkingDirectoryIsEnteredAsTheJobsAccount) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  if (getpwnam("nobody") == nullptr) GTEST_SKIP() << "no 'nobody' account here";
  const std::filesystem::path closed = dir_ / "closed";
  std::filesystem::create_directories(closed / "open");
  ::chmod(closed.c_str(), 0700);
  ::chmod((closed / "open").c_str(), 0755);
  RunAsPolicy policy = TestPolicy();
  policy.user_map["alice"] = "nobody";
  Runner runner(policy);
  LaunchSpec spec = Spec(18, {"true"});
  spec.user = "alice";
  spec.workdir = (closed / "open").string();
  auto launched = runner.Launch(spec);
  ASSERT_FALSE(launched.ok()) << "entered a directory its account cannot reach";
  EXPECT_NE(launched.error().find("working directory"), std::string::npos) << launched.error();
}

// Review finding: a link planted where the log goes made the agent open (and hand to the job's
// account) another file.
TEST_F(RunnerTest, APlantedLinkInPlaceOfTheLogIsRefused) {
  const std::filesystem::path target = dir_ / "precious";
  { std::ofstream(target) << "keep\n"; }
  Runner runner(TestPolicy());
  LaunchSpec spec = Spec(19, {"echo", "overwritten"});
  std::filesystem::create_symlink(target, spec.log_path);
  EXPECT_FALSE(runner.Launch(spec).ok());
  std::filesystem::remove(spec.log_path);
  std::filesystem::create_hard_link(target, spec.log_path);
  EXPECT_FALSE(runner.Launch(spec).ok());
  EXPECT_EQ(Slurp(target.string()), "keep\n");
}

}  // namespace
}  // namespace gpufleet::agent
