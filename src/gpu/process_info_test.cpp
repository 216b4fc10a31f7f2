#include "gpu/process_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpufleet::gpu {
namespace {

TEST(ProcessInfo, JobIdFromEnvironmentBlock) {
  const std::string block("PATH=/bin\0GPUFLEET_JOB_ID=j-42\0HOME=/root\0", 41);
  EXPECT_EQ(JobIdFromEnviron(block), "j-42");
  EXPECT_EQ(JobIdFromEnviron(std::string("XGPUFLEET_JOB_ID=no\0", 20)), "");
  EXPECT_EQ(JobIdFromEnviron(""), "");
}

TEST(ProcessInfo, JobIdFromCgroupPaths) {
  EXPECT_EQ(JobIdFromCgroup("0::/system.slice/gpufleet-job-17.scope\n"), "17");
  EXPECT_EQ(JobIdFromCgroup("0::/gpufleet/job-abc_1/tasks\n"), "abc_1");
  EXPECT_EQ(JobIdFromCgroup("0::/user.slice/user-1000.slice\n"), "");
}

// A fake /proc with one process, so the test does not depend on the machine's users.
class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        std::filesystem::temp_directory_path() / ("gpufleet-proc-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root_ / "4242");
    Write("4242/status", "Name:\tpython\nUid:\t0\t0\t0\t0\nGid:\t0\n");
    Write("4242/cmdline", std::string("python\0train.py\0--lr\0", 22));
    Write("4242/environ", std::string("A=1\0GPUFLEET_JOB_ID=7\0", 22));
    Write("4242/cgroup", "0::/gpufleet-job-8.scope\n");
    Write("4242/stat", "4242 (python) S 1 4242 4242 0");  // init's child: outside every job
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(root_ / name, std::ios::binary) << text;
  }
  std::filesystem::path root_;
};

TEST_F(FakeProc, ReadsOwnerCommandAndJob) {
  ProcessInspector inspector(root_.string());
  const ProcessOwner& owner = inspector.Lookup(4242, 0);
  EXPECT_EQ(owner.uid, 0);
  EXPECT_EQ(owner.user, "root");
  EXPECT_EQ(owner.command, "python train.py --lr");
  // Found by a review: the variable came first, and any process may set it to another job's id.
  EXPECT_EQ(owner.job_id, "8") << "the cgroup (which a process cannot leave) wins over the "
                                  "environment (which it sets itself)";
}

TEST_F(FakeProc, CachesUntilTheEntryExpires) {
  ProcessInspector inspector(root_.string(), /*cache_seconds=*/30);
  EXPECT_EQ(inspector.Lookup(4242, 0).job_id, "8");
  Write("4242/cgroup", "0::/user.slice\n");
  EXPECT_EQ(inspector.Lookup(4242, 10).job_id, "8") << "cached";
  EXPECT_EQ(inspector.Lookup(4242, 31).job_id, "7") << "re-read: no job cgroup, the variable";
}

TEST_F(FakeProc, WithoutAJobCgroupTheShimAboveNamesTheJobNotTheVariable) {
  // python (4242, claiming job 7 in its environment) < sh (300) < the agent's shim of job 9 (100).
  Write("4242/cgroup", "0::/user.slice\n");
  Write("4242/stat", "4242 (python) S 300 4242 4242 0");
  std::filesystem::create_directories(root_ / "300");
  Write("300/stat", "300 (s h) (x)) S 100 100 100 0");
  std::filesystem::create_directories(root_ / "100");
  Write("100/stat", "100 (gpufleet-shim) S 1 100 100 0");
  const std::string agents_uid = std::to_string(::geteuid());
  Write("100/status", "Name:\tgpufleet-shim\nUid:\t" + agents_uid + "\t0\t0\t0\n");
  Write("100/cmdline",
        std::string("/opt/gpufleet-shim") + '\0' + "9" + '\0' + "/d/9.log.exit" + '\0');
  EXPECT_EQ(ProcessInspector(root_.string()).Lookup(4242, 0).job_id, "9");
  // A shim of another account (a user's own copy, started to claim job 9) is not the agent's.
  Write("100/status",
        "Name:\tgpufleet-shim\nUid:\t" + std::to_string(::geteuid() + 1) + "\t0\t0\t0\n");
  EXPECT_EQ(ProcessInspector(root_.string()).Lookup(4242, 0).job_id, "7")
      << "no shim of the agent's above: the variable, as before";
  // A parent that ended while walked: unknown, and the variable (which a job's own process may
  // set to another job's id) is not taken for an answer.
  std::filesystem::remove(root_ / "300" / "stat");
  EXPECT_EQ(ProcessInspector(root_.string()).Lookup(4242, 0).job_id, "");
}

TEST_F(FakeProc, VanishedProcessYieldsEmptyOwner) {
  ProcessInspector inspector(root_.string());
  const ProcessOwner& owner = inspector.Lookup(99999, 0);
  EXPECT_EQ(owner.uid, -1);
  EXPECT_EQ(owner.user, "");
  EXPECT_EQ(owner.command, "");
}

}  // namespace
}  // namespace gpufleet::gpu
