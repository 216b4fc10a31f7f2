#include "cloud/local_provider.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cloud/cloud_test_support.h"
#include "cloud/detached_process.h"

namespace gpufleet::cloud {
namespace {

using testing::ProcessGone;
using testing::ScratchDir;
using testing::Slurp;
using testing::WaitFor;

// Stands in for `gpufleet agent`: records its arguments in its working directory (the
// instance's folder), starts a child of its own (a job, as it were), and waits.
constexpr const char* kFakeAgent = R"SH(#!/bin/sh
printf '%s\n' "$@" > args
env | grep '^GPUFLEET_' > gpufleet-env
sleep 60 &
echo $! > job.pid
exec sleep 60
)SH";

scale::NodeGroup Group(int64_t boot_s) {
  scale::NodeGroup g;
  g.name = "h100-4";
  g.model_name = "H100";
  g.gpus = 4;
  g.boot_s = boot_s;
  return g;
}

JoinInfo Join() { return JoinInfo{"http://127.0.0.1:9", "join-secret", ""}; }

int PidOf(const std::string& dir) { return std::atoi(Slurp(dir + "/pid").c_str()); }

std::string StateOf(LocalProvider& provider, const std::string& name) {
  auto list = provider.List();
  if (!list.ok()) return "error: " + list.error();
  for (const Instance& i : list.value()) {
    if (i.name == name) return i.state;
  }
  return "absent";
}

TEST(LocalProviderTest, BootsAfterTheDelayAndDeleteStopsEverything) {
  ScratchDir scratch;
  const std::string work = scratch.path() + "/instances";
  LocalProvider provider({scratch.Script("fake-agent", kFakeAgent), work, {}});
  provider.set_stop_grace_ms(1000);
  const auto start = std::chrono::steady_clock::now();
  auto created = provider.Create(Group(1), "h100-4-0", true, Join());
  ASSERT_TRUE(created.ok()) << created.error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_EQ(StateOf(provider, "h100-4-0"), "pending");

  const std::string dir = work + "/h100-4-0";
  ASSERT_TRUE(WaitFor([&] { return StateOf(provider, "h100-4-0") == "running"; }, 3000));
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir + "/job.pid"); }, 2000));
  auto list = provider.List();
  ASSERT_TRUE(list.ok()) << list.error();
  ASSERT_EQ(list.value().size(), 1u);
  EXPECT_EQ(list.value()[0].group, "h100-4");
  EXPECT_TRUE(list.value()[0].spot);
  EXPECT_EQ(list.value()[0].interruption_at_s, 0);

  // The agent's command line, without the join token (readable by anyone in /proc); the token
  // is its only GPUFLEET_* variable: the controller's own are not passed on.
  EXPECT_EQ(Slurp(dir + "/args"),
            "agent\n--controller\nhttp://127.0.0.1:9\n--hostname\n"
            "h100-4-0\n--simulated-gpus\n4\n--simulated-gpu-model\nH100\n--data-dir\n" +
                dir + "/agent\n--listen\n127.0.0.1:0\n--advertise-address\n127.0.0.1\n");
  EXPECT_EQ(Slurp(dir + "/gpufleet-env"), "GPUFLEET_JOIN_TOKEN=join-secret\n");

  // A spot interruption notice: the file's mtime + 120 s.
  std::ofstream(dir + "/interrupt").put('\n');
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/interrupt").c_str(), &st), 0);
  list = provider.List();
  ASSERT_TRUE(list.ok()) << list.error();
  EXPECT_EQ(list.value()[0].interruption_at_s, static_cast<int64_t>(st.st_mtime) + 120);

  const int agent = PidOf(dir);
  const int job = std::atoi(Slurp(dir + "/job.pid").c_str());
  ASSERT_GT(agent, 1);
  ASSERT_GT(job, 1);
  ASSERT_TRUE(provider.Delete("h100-4-0").ok());
  EXPECT_TRUE(ProcessGone(agent));
  EXPECT_TRUE(ProcessGone(job));
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(StateOf(provider, "h100-4-0"), "absent");
  EXPECT_TRUE(provider.Delete("h100-4-0").ok());  // idempotent
}

// A controller restarted after kill -9 builds a new provider on the same folder.
TEST(LocalProviderTest, StateSurvivesANewProvider) {
  ScratchDir scratch;
  const std::string work = scratch.path() + "/instances";
  const std::string agent_binary = scratch.Script("fake-agent", kFakeAgent);
  {
    LocalProvider first({agent_binary, work, {}});
    ASSERT_TRUE(first.Create(Group(0), "h100-4-1", false, Join()).ok());
  }
  LocalProvider second({agent_binary, work, {}});
  second.set_stop_grace_ms(1000);
  ASSERT_TRUE(WaitFor([&] { return StateOf(second, "h100-4-1") == "running"; }, 3000));
  // Create is idempotent: the same name does not start a second agent.
  const int pid = PidOf(work + "/h100-4-1");
  ASSERT_TRUE(second.Create(Group(0), "h100-4-1", false, Join()).ok());
  EXPECT_EQ(PidOf(work + "/h100-4-1"), pid);
  ASSERT_TRUE(second.Delete("h100-4-1").ok());
  EXPECT_TRUE(ProcessGone(pid));
}

// A controller killed inside Create leaves the instance's folder, maybe its record, but no
// agent: both are listed "pending", and a Create of the name launches the agent.
TEST(LocalProviderTest, ACreateCutShortIsListedAndFinishedByAnotherCreate) {
  ScratchDir scratch;
  const std::string work = scratch.path() + "/instances";
  LocalProvider provider({scratch.Script("fake-agent", kFakeAgent), work, {}});
  provider.set_stop_grace_ms(1000);
  std::filesystem::create_directories(work + "/h100-4-3/agent");  // before its record
  std::filesystem::create_directories(work + "/h100-4-4/agent");  // record, no launch
  std::ofstream(work + "/h100-4-4/instance.json")
      << R"({"name":"h100-4-4","group":"h100-4","spot":false,"gpus":4})";
  auto list = provider.List();
  ASSERT_TRUE(list.ok()) << list.error();
  ASSERT_EQ(list.value().size(), 2u);
  EXPECT_EQ(list.value()[0].name, "h100-4-3");
  EXPECT_EQ(list.value()[0].state, "pending");
  EXPECT_EQ(list.value()[1].state, "pending");
  for (const std::string name : {"h100-4-3", "h100-4-4"}) {
    ASSERT_TRUE(provider.Create(Group(0), name, false, Join()).ok()) << name;
    ASSERT_TRUE(WaitFor([&] { return StateOf(provider, name) == "running"; }, 3000)) << name;
    EXPECT_GT(PidOf(work + "/" + name), 0);
  }
  // One that is cut short again and never asked for is removed by a Delete.
  std::filesystem::create_directories(work + "/h100-4-5");
  EXPECT_EQ(StateOf(provider, "h100-4-5"), "pending");
  ASSERT_TRUE(provider.Delete("h100-4-5").ok());
  EXPECT_EQ(StateOf(provider, "h100-4-5"), "absent");
  for (const std::string name : {"h100-4-3", "h100-4-4"}) {
    const int pid = PidOf(work + "/" + name);
    ASSERT_TRUE(provider.Delete(name).ok());
    EXPECT_TRUE(ProcessGone(pid));
  }
}

// A Create cut short after the launch left the bare pid its process wrote; the Create re-issued
// at adoption adds the process's start time, which keeps a later Delete from stopping another
// process that reused the pid.
TEST(LocalProviderTest, ACreateAfterOneCutShortPastTheLaunchCompletesThePidFile) {
  ScratchDir scratch;
  const std::string work = scratch.path() + "/instances";
  LocalProvider provider({scratch.Script("fake-agent", kFakeAgent), work, {}});
  provider.set_stop_grace_ms(1000);
  ASSERT_TRUE(provider.Create(Group(0), "h100-4-6", false, Join()).ok());
  const std::string pid_file = work + "/h100-4-6/pid";
  const int pid = PidOf(work + "/h100-4-6");
  ASSERT_GT(pid, 0);
  const std::string complete = Slurp(pid_file);
  EXPECT_EQ(complete, FormatPidFile(ProcessId{pid, StartTicks(pid)}));
  std::ofstream(pid_file, std::ios::trunc) << pid << "\n";  // as the process wrote it
  ASSERT_TRUE(provider.Create(Group(0), "h100-4-6", false, Join()).ok());
  EXPECT_EQ(Slurp(pid_file), complete);
  EXPECT_EQ(PidOf(work + "/h100-4-6"), pid);  // no second launch
  ASSERT_TRUE(provider.Delete("h100-4-6").ok());
  EXPECT_TRUE(ProcessGone(pid));
}

TEST(LocalProviderTest, AnAgentThatEndsIsStopping) {
  ScratchDir scratch;
  const std::string work = scratch.path() + "/instances";
  LocalProvider provider(
      {scratch.Script("fake-agent", "#!/bin/sh\necho cannot join >&2\nexit 1\n"), work, {}});
  ASSERT_TRUE(provider.Create(Group(0), "h100-4-2", false, Join()).ok());
  ASSERT_TRUE(WaitFor([&] { return StateOf(provider, "h100-4-2") == "stopping"; }, 3000));
  EXPECT_NE(Slurp(work + "/h100-4-2/agent.log").find("cannot join"), std::string::npos);
  ASSERT_TRUE(provider.Delete("h100-4-2").ok());
  EXPECT_EQ(StateOf(provider, "h100-4-2"), "absent");
}

TEST(LocalProviderTest, MissingBinaryEndsTheInstance) {
  ScratchDir scratch;
  const std::string work = scratch.path() + "/instances";
  LocalProvider provider({scratch.path() + "/no-such-agent", work, {}});
  ASSERT_TRUE(provider.Create(Group(0), "n0", false, Join()).ok());
  ASSERT_TRUE(WaitFor([&] { return StateOf(provider, "n0") == "stopping"; }, 3000));
  EXPECT_NE(Slurp(work + "/n0/agent.log").find("cannot execute"), std::string::npos);
  ASSERT_TRUE(provider.Delete("n0").ok());
}

// The agent runs in its instance's folder, so a relative work directory is made absolute first.
TEST(LocalProviderTest, AgentPathsAreAbsolute) {
  LocalProvider provider({"/bin/true", "relative/work", {}});
  const auto argv = provider.AgentArgv(Group(0), "n0", Join());
  ASSERT_EQ(argv.size(), 16u);
  EXPECT_EQ(argv[10], "--data-dir");
  EXPECT_EQ(argv[11].front(), '/');
  EXPECT_NE(argv[11].find("/relative/work/n0/agent"), std::string::npos);
}

TEST(LocalProviderTest, RejectsBadInput) {
  ScratchDir scratch;
  LocalProvider provider({"/bin/true", scratch.path(), {}});
  EXPECT_EQ(provider.Create(Group(0), "../x", false, Join()).failure().field, "name");
  EXPECT_EQ(provider.Delete("..").failure().field, "name");
  scale::NodeGroup none = Group(0);
  none.gpus = 0;
  EXPECT_EQ(provider.Create(none, "n1", false, Join()).failure().field, "gpus");
  auto list = provider.List();
  ASSERT_TRUE(list.ok()) << list.error();
  EXPECT_TRUE(list.value().empty());
}

}  // namespace
}  // namespace gpufleet::cloud
