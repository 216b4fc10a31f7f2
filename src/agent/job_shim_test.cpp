#include "agent/job_shim.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace gpufleet::agent {
namespace {

TEST(JobShim, TheCommandLineCarriesEverySpecFieldBack) {
  ShimSpec spec;
  spec.job_id = 4711;
  spec.exit_path = "/d/j 1.log.exit";
  spec.fenced_path = "/d/j 1.log.fenced";
  spec.lease_path = "";
  spec.cgroup_procs = {"/sys/fs/cgroup/cpu/x/cgroup.procs", "/sys/fs/cgroup/memory/x/cgroup.procs"};
  spec.workdir = "/home/alice/with space";
  spec.lease_grace_ms = 2500;
  spec.log_limit = int64_t{1} << 30;
  spec.switch_user = true;
  spec.uid = 1001;
  spec.gid = 1002;
  spec.groups = {1002, 27, 44};
  spec.private_shm_mib = 4096;
  spec.env = {"PATH=/usr/bin:/bin", "EMPTY=", "WEIRD=a=b --"};
  spec.argv = {"python3", "-c", "print('--')", "--", ""};
  auto back = ParseShimCommandLine(ShimCommandLine(spec));
  ASSERT_TRUE(back.ok()) << back.error();
  const ShimSpec& b = back.value();
  EXPECT_EQ(b.job_id, 4711);
  EXPECT_EQ(ShimCommandLine(spec)[0], "4711") << "first: the GPU sampler reads it there";
  EXPECT_EQ(b.exit_path, spec.exit_path);
  EXPECT_EQ(b.fenced_path, spec.fenced_path);
  EXPECT_EQ(b.lease_path, "");
  EXPECT_EQ(b.cgroup_procs, spec.cgroup_procs);
  EXPECT_EQ(b.workdir, spec.workdir);
  EXPECT_EQ(b.lease_grace_ms, 2500);
  EXPECT_EQ(b.log_limit, spec.log_limit);
  EXPECT_TRUE(b.switch_user);
  EXPECT_EQ(b.uid, 1001u);
  EXPECT_EQ(b.gid, 1002u);
  EXPECT_EQ(b.groups, spec.groups);
  EXPECT_EQ(b.private_shm_mib, 4096);
  EXPECT_TRUE(b.env.empty());  // the environment travels on kShimEnvFd, never here
  EXPECT_EQ(b.argv, spec.argv);
  for (const std::string& arg : ShimCommandLine(spec)) {
    EXPECT_EQ(arg.find("WEIRD"), std::string::npos) << arg;
  }

  spec.switch_user = false;
  spec.groups.clear();
  auto plain = ParseShimCommandLine(ShimCommandLine(spec));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain.value().switch_user);
  EXPECT_TRUE(plain.value().groups.empty());
}

TEST(JobShim, AContainerJobsCleanupAndOomWatchTravelOnTheCommandLine) {
  ShimSpec spec;
  spec.exit_path = "/data/job.log.exit";
  spec.fenced_path = "/data/job.log.fenced";
  spec.argv = {"podman", "run", "localhost/x", "true"};
  spec.cleanup = {"podman", "rm", "--force", "gpufleet-job-1-2"};
  spec.oom_watch_dir = "/sys/fs/cgroup/memory/gpufleet-jobs/gpufleet-job-1";
  auto parsed = ParseShimCommandLine(ShimCommandLine(spec));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().cleanup, spec.cleanup);
  EXPECT_EQ(parsed.value().oom_watch_dir, spec.oom_watch_dir);
  EXPECT_EQ(parsed.value().argv, spec.argv);
  spec.cleanup.clear();
  spec.oom_watch_dir.clear();
  parsed = ParseShimCommandLine(ShimCommandLine(spec));
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed.value().cleanup.empty());
  EXPECT_TRUE(parsed.value().oom_watch_dir.empty());
}

TEST(JobShim, AMalformedCommandLineIsRefused) {
  ShimSpec spec;
  spec.exit_path = "/data/job.log.exit";
  spec.fenced_path = "/data/job.log.fenced";
  spec.argv = {"true"};
  const std::vector<std::string> good = ShimCommandLine(spec);
  ASSERT_TRUE(ParseShimCommandLine(good).ok());
  auto with = [&](std::size_t field, const std::string& value) {
    std::vector<std::string> args = good;
    args[field] = value;
    return ParseShimCommandLine(args).ok();
  };
  EXPECT_FALSE(with(6, "-1"));           // lease grace
  EXPECT_FALSE(with(7, "12x"));          // log limit
  EXPECT_FALSE(with(8, "2"));            // switch user
  EXPECT_FALSE(with(9, "99999999999"));  // uid
  EXPECT_FALSE(with(11, "1,,2"));        // groups
  EXPECT_FALSE(with(14, "bad-check"));   // a mount check without ro:/ or rw:/
  EXPECT_FALSE(with(15, "-2"));          // the /dev/shm size
  EXPECT_FALSE(with(15, "x"));
  EXPECT_FALSE(with(16, "--env"));  // the "--" before argv
  EXPECT_FALSE(with(1, ""));        // exit path
  EXPECT_FALSE(with(0, "-1"));      // job id
  EXPECT_FALSE(with(0, "7x"));
  std::vector<std::string> no_argv(good.begin(), good.end() - 1);
  EXPECT_FALSE(ParseShimCommandLine(no_argv).ok());
  EXPECT_FALSE(ParseShimCommandLine({}).ok());
}

TEST(JobShim, TheEnvironmentBlockCarriesEveryEntryBackAndRefusesMalformedOnes) {
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "EMPTY=", "WEIRD=a=b --",
                                        "NEWLINE=a\nb"};
  auto back = ParseShimEnvironmentBlock(ShimEnvironmentBlock(env));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back.value(), env);
  auto none = ParseShimEnvironmentBlock(ShimEnvironmentBlock({}));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().empty());
  EXPECT_FALSE(ParseShimEnvironmentBlock(std::string("NOEQUALS\0", 9)).ok());
  EXPECT_FALSE(ParseShimEnvironmentBlock(std::string("=X\0", 3)).ok());
  EXPECT_FALSE(ParseShimEnvironmentBlock("A=1").ok());  // cut short: no closing NUL
}

TEST(JobShim, TheEnvironmentIsReadWholeFromAMemoryFileFromItsStart) {
  std::vector<std::string> env;
  for (int i = 0; i < 5000; ++i)
    env.push_back("VAR" + std::to_string(i) + "=" + std::string(40, 'x'));
  const std::string block = ShimEnvironmentBlock(env);  // larger than one read
  ASSERT_GT(block.size(), 65536u);
  const int fd = memfd_create("job-shim-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  auto back = ReadShimEnvironment(fd);  // the offset is at the end: it must seek back
  close(fd);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back.value(), env);
  EXPECT_FALSE(ReadShimEnvironment(-1).ok());
}

}  // namespace
}  // namespace gpufleet::agent
