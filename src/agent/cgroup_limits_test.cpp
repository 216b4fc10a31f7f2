#include "agent/cgroup_limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpufleet::agent {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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
  std::ofstream(root_ / "cgroup.controllers") << "cpuset cpu io memory pids\n";
  const CgroupLimits limits = CgroupLimits::Detect(root_.string());
  ASSERT_TRUE(limits.available()) << limits.why_unavailable();
  EXPECT_EQ(Read(root_ / "cgroup.subtree_control"), "+cpu +memory");
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "cgroup.subtree_control"), "+cpu +memory");
  auto procs = limits.Prepare(42, JobLimits{1500, 256});
  ASSERT_TRUE(procs.ok()) << procs.error();
  const fs::path job = root_ / "gpufleet-jobs" / "gpufleet-job-42";
  EXPECT_EQ(procs.value(), (job / "cgroup.procs").string());
  EXPECT_EQ(Read(job / "cpu.max"), "150000 100000");  // 1.5 cores per 100 ms
  EXPECT_EQ(Read(job / "memory.max"), "268435456");   // 256 MiB
  // Only memory: CPU unlimited.
  ASSERT_TRUE(limits.Prepare(43, JobLimits{0, 1024}).ok());
  EXPECT_EQ(Read(root_ / "gpufleet-jobs" / "gpufleet-job-43" / "cpu.max"), "max 100000");
  // No limits asked: no cgroup.
  EXPECT_EQ(limits.ForLaunch(44, JobLimits{}, "test"), "");
  EXPECT_FALSE(fs::exists(root_ / "gpufleet-jobs" / "gpufleet-job-44"));
}

TEST_F(CgroupLimitsTest, WithoutTheControllersItSaysWhyAndJobsRunUnlimited) {
  std::ofstream(root_ / "cgroup.controllers") << "hugetlb\n";
  const CgroupLimits limits = CgroupLimits::Detect(root_.string());
  EXPECT_FALSE(limits.available());
  EXPECT_NE(limits.why_unavailable().find("cpu and memory controllers"), std::string::npos)
      << limits.why_unavailable();
  EXPECT_FALSE(limits.Prepare(1, JobLimits{1000, 0}).ok());
  EXPECT_EQ(limits.ForLaunch(1, JobLimits{1000, 0}, "test"), "");  // said once, not an error
  EXPECT_EQ(limits.ForLaunch(2, JobLimits{1000, 0}, "test"), "");
  // No cgroup v2 at all (this machine may have one; a path that is none certainly is not).
  EXPECT_FALSE(CgroupLimits::Detect((root_ / "nowhere").string()).available());
}

}  // namespace
}  // namespace gpufleet::agent
