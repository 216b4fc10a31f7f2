#include "cloud/detached_process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cloud/cloud_test_support.h"

namespace gpufleet::cloud {
namespace {

using testing::ScratchDir;
using testing::Slurp;
using testing::WaitFor;

DetachedLaunch MarkerLaunch(const ScratchDir& dir, const std::string& marker) {
  DetachedLaunch l;
  l.argv = {"/bin/sh", "-c", "echo ran >> " + marker};
  l.env = {"PATH=/usr/bin:/bin"};
  l.cwd = dir.path();
  l.log_path = dir.path() + "/log";
  l.pid_path = dir.path() + "/pid";
  l.started_path = dir.path() + "/started";
  return l;
}

TEST(DetachedProcessTest, ALaunchWritesItsPidAndRunsTheProgram) {
  ScratchDir dir;
  const std::string marker = dir.path() + "/marker";
  const auto launched = LaunchDetached(MarkerLaunch(dir, marker));
  ASSERT_TRUE(launched.ok()) << launched.error();
  ASSERT_TRUE(launched.value().has_value());
  EXPECT_GT(launched.value()->pid, 0);
  EXPECT_EQ(Slurp(dir.path() + "/pid"), std::to_string(launched.value()->pid) + "\n");
  EXPECT_TRUE(WaitFor([&] { return Slurp(marker) == "ran\n"; }, 5000)) << Slurp(marker);
  // The pid file was written beside it and linked into place: nothing else is left.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".claim."), std::string::npos) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 4);  // pid, log, started, marker
}

// A process whose pid file cannot be written would be one no Delete could find or stop: it
// runs nothing, and the launch fails.
TEST(DetachedProcessTest, ALaunchThatCannotWriteItsPidFileRunsNothing) {
  ScratchDir dir;
  const std::string marker = dir.path() + "/marker";
  DetachedLaunch l = MarkerLaunch(dir, marker);
  l.pid_path = dir.path() + "/gone/pid";  // its folder was removed under it
  const auto launched = LaunchDetached(l);
  EXPECT_FALSE(launched.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(std::filesystem::exists(marker)) << Slurp(marker);
  EXPECT_NE(Slurp(dir.path() + "/log").find("cannot write the pid file, errno"), std::string::npos)
      << Slurp(dir.path() + "/log");
}

// Two launches of one instance (a Create cut short by a restart, its process still starting,
// and the restarted controller's Create) must start it once: the second finds the pid file
// claimed and runs nothing.
TEST(DetachedProcessTest, ALaunchWhosePidFileIsClaimedRunsNothing) {
  ScratchDir dir;
  const std::string marker = dir.path() + "/marker";
  std::ofstream(dir.path() + "/pid") << "4242\n";
  const auto launched = LaunchDetached(MarkerLaunch(dir, marker));
  ASSERT_TRUE(launched.ok()) << launched.error();
  EXPECT_FALSE(launched.value().has_value()) << launched.value()->pid;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(std::filesystem::exists(marker)) << Slurp(marker);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/started"));
  EXPECT_EQ(Slurp(dir.path() + "/pid"), "4242\n");
}

}  // namespace
}  // namespace gpufleet::cloud
