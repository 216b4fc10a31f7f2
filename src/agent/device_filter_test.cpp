#include "agent/device_filter.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "agent/cgroup_limits.h"

namespace gpufleet::agent {
namespace {

TEST(DeviceFilter, ParsesRulesAndRefusesAnythingElse) {
  auto c = ParseDeviceRule("c 195:1");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.value().type, 'c');
  EXPECT_EQ(c.value().major, 195U);
  EXPECT_EQ(c.value().minor, 1U);
  EXPECT_EQ(ParseDeviceRule("b 8:0").value().type, 'b');
  for (const char* bad : {"", "c 195", "x 1:2", "c  1:2", "c 1:2x", "c :2", "c 1:", "c -1:2",
                          "c 99999999999:1", "c 1:2 rwm"}) {
    EXPECT_FALSE(ParseDeviceRule(bad).ok()) << bad;
  }
}

TEST(DeviceFilter, TheProgramIsFiveInstructionsPerDeviceAndEndsAllowing) {
  const auto none = DenyListProgram({});
  ASSERT_EQ(none.size(), 6U);  // four loads, then r0 = 1; exit
  EXPECT_EQ(none[4].imm, 1);
  EXPECT_EQ(none[5].code, BPF_JMP | BPF_EXIT);
  const auto two = DenyListProgram({{'c', 195, 1}, {'c', 195, 3}});
  ASSERT_EQ(two.size(), 16U);
  EXPECT_EQ(two[4].off, 4);  // a device's first test skips its five instructions
  EXPECT_EQ(two[5].imm, 195);
  EXPECT_EQ(two[6].imm, 1);
  EXPECT_EQ(two[7].imm, 0);  // denied
  EXPECT_EQ(two[11].imm, 3);
}

// On a machine where a cgroup2 hierarchy is mounted (pure v2, or v1's hybrid layout with
// /sys/fs/cgroup/unified) and this test runs as root: a process in the cgroup cannot open the
// denied device, and opens any other.
std::string Cgroup2Mount() {
  for (const char* dir : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    struct statfs fs {};
    if (::statfs(dir, &fs) == 0 && fs.f_type == 0x63677270 /* CGROUP2_SUPER_MAGIC */) return dir;
  }
  return "";
}

// Why the tests that attach programs cannot run here ("" when they can).
std::string WhyNoDeviceProgramsHere(const std::string& mount) {
  if (mount.empty()) return "no cgroup2 hierarchy is mounted here";
  if (geteuid() != 0) return "attaching a device program takes root";
  return DeviceFilterUnavailable();
}

TEST(DeviceFilter, AProcessInTheCgroupCannotOpenADeniedDevice) {
  const std::string mount = Cgroup2Mount();
  if (const std::string why = WhyNoDeviceProgramsHere(mount); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = mount + "/gpufleet-device-filter-test-" + std::to_string(getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << std::strerror(errno);
  const std::string zero = DeviceRule("/dev/zero");
  ASSERT_EQ(zero, "c 1:5");
  auto attached = AttachDeviceDenyList(dir, {zero, "c 195:255"});
  ASSERT_TRUE(attached.ok()) << attached.error();
  const pid_t child = fork();
  if (child == 0) {
    std::ofstream(dir + "/cgroup.procs") << "0";
    const int denied = ::open("/dev/zero", O_RDONLY);
    const int denied_errno = errno;
    const int allowed = ::open("/dev/null", O_RDWR);
    _exit(denied < 0 && denied_errno == EPERM && allowed >= 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child in the cgroup opened /dev/zero, or could not open /dev/null";
  // This process, outside the cgroup, is not held.
  const int outside = ::open("/dev/zero", O_RDONLY);
  EXPECT_GE(outside, 0);
  if (outside >= 0) ::close(outside);
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << std::strerror(errno);
  EXPECT_FALSE(AttachDeviceDenyList(dir, {zero}).ok()) << "no such cgroup any more";
  EXPECT_FALSE(AttachDeviceDenyList("/tmp", {zero}).ok()) << "not a cgroup";
  EXPECT_FALSE(AttachDeviceDenyList(mount, {"c 1:x"}).ok());
}

// Found by a review: below a cgroup whose device program was attached without BPF_F_ALLOW_MULTI
// (a service manager's device policy), a job's program either fails to attach (every job with
// GPUs to deny would fail to start) or, below BPF_F_ALLOW_OVERRIDE, replaces that policy for the
// job. The agent now looks up the hierarchy first and confines nothing there, saying why.
TEST(DeviceFilter, AHierarchyWhoseParentsProgramWouldBeOverriddenIsNotUsed) {
  const std::string mount = Cgroup2Mount();
  if (const std::string why = WhyNoDeviceProgramsHere(mount); !why.empty()) GTEST_SKIP() << why;
  const std::string parent = mount + "/gpufleet-device-parent-test-" + std::to_string(getpid());
  const std::string jobs = parent + "/jobs";
  ASSERT_EQ(::mkdir(parent.c_str(), 0755), 0) << std::strerror(errno);
  ASSERT_EQ(::mkdir(jobs.c_str(), 0755), 0) << std::strerror(errno);
  EXPECT_EQ(DeviceFilterUnusableAt(jobs, mount), "");
  EXPECT_NE(DeviceFilterUnusableAt("/tmp", mount).find("is not below"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(jobs + "/gpufleet-device-probe")) << "the probe goes";
  ASSERT_TRUE(AttachDeviceDenyList(parent, {}, BPF_F_ALLOW_OVERRIDE).ok());
  const std::string why = DeviceFilterUnusableAt(jobs, mount);
  EXPECT_NE(why.find("BPF_F_ALLOW_MULTI"), std::string::npos) << why;
  EXPECT_NE(why.find(parent), std::string::npos) << why;
  EXPECT_EQ(::rmdir(jobs.c_str()), 0);
  EXPECT_EQ(::rmdir(parent.c_str()), 0);
}

}  // namespace
}  // namespace gpufleet::agent
