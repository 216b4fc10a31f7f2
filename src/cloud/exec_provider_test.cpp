#include "cloud/exec_provider.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "cloud/cloud_test_support.h"
#include "cloud/provider.h"
#include "cloud/run_program.h"

namespace gpufleet::cloud {
namespace {

using testing::ProcessGone;
using testing::ScratchDir;
using testing::Slurp;

// A provider script that keeps its instances as files beside itself, and records how it was
// called (arguments and the GPUFLEET_* environment of `create`).
constexpr const char* kFakeCloud = R"SH(#!/bin/sh
set -eu
here=$(dirname "$0")
cmd=$1; shift
echo "$cmd $*" >> "$here/calls"
case "$cmd" in
  create)
    group=; name=; spot=false
    while [ $# -gt 0 ]; do
      case "$1" in
        --group) group=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --spot) spot=true; shift ;;
        *) echo "unknown flag $1" >&2; exit 2 ;;
      esac
    done
    env | grep '^GPUFLEET_' | sort > "$here/create.env"
    printf '{"name": "%s", "group": "%s", "spot": %s, "state": "pending"}\n' \
      "$name" "$group" "$spot" > "$here/inst-$name"
    printf '{"name": "%s"}\n' "$name" ;;
  delete)
    [ "$1" = --name ] || exit 2
    rm -f "$here/inst-$2" ;;
  list)
    printf '{"instances": ['
    sep=
    for f in "$here"/inst-*; do
      [ -e "$f" ] || continue
      printf '%s%s' "$sep" "$(cat "$f")"; sep=,
    done
    printf ']}\n' ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
)SH";

scale::NodeGroup Group() {
  scale::NodeGroup g;
  g.name = "a100-8";
  g.model_name = "A100-80G";
  g.gpus = 8;
  return g;
}

JoinInfo Join() { return JoinInfo{"http://127.0.0.1:8080", "s3cret-join-token", ""}; }

// Found by a review: the controller's database password (PGPASSWORD) reached every provider
// script and every node the local provider started.
TEST(InheritedEnvironment, LeavesOutTheControllersOwnSettingsAndDatabaseCredentials) {
  ::setenv("PGPASSWORD", "s3cret", 1);
  ::setenv("PGPASSFILE", "/root/.pgpass", 1);
  ::setenv("GPUFLEET_TOKEN", "admin", 1);
  ::setenv("PGNOT_THIS_lower", "kept", 1);
  ::setenv("GPUFLEET_TEST_KEPT", "x", 1);
  const std::vector<std::string> env = InheritedEnvironment("GPUFLEET_");
  const auto has = [&env](const std::string& prefix) {
    return std::any_of(env.begin(), env.end(),
                       [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  };
  EXPECT_FALSE(has("PGPASSWORD="));
  EXPECT_FALSE(has("PGPASSFILE="));
  EXPECT_FALSE(has("GPUFLEET_TOKEN="));
  EXPECT_TRUE(has("PGNOT_THIS_lower="));
  EXPECT_TRUE(has("PATH="));
  for (const char* name :
       {"PGPASSWORD", "PGPASSFILE", "GPUFLEET_TOKEN", "PGNOT_THIS_lower", "GPUFLEET_TEST_KEPT"}) {
    ::unsetenv(name);
  }
}

TEST(ExecProviderTest, CreateListDelete) {
  ScratchDir dir;
  ::setenv("GPUFLEET_TOKEN", "controller-admin-token", 1);
  ExecProvider provider(dir.Script("cloud.sh", kFakeCloud), 10);
  EXPECT_EQ(provider.Kind(), "exec");
  auto created = provider.Create(Group(), "a100-8-0", true, Join());
  ASSERT_TRUE(created.ok()) << created.error();
  ASSERT_TRUE(provider.Create(Group(), "a100-8-1", false, Join()).ok());

  auto list = provider.List();
  ASSERT_TRUE(list.ok()) << list.error();
  ASSERT_EQ(list.value().size(), 2u);
  EXPECT_EQ(list.value()[0].name, "a100-8-0");
  EXPECT_EQ(list.value()[0].group, "a100-8");
  EXPECT_TRUE(list.value()[0].spot);
  EXPECT_EQ(list.value()[0].state, "pending");
  EXPECT_FALSE(list.value()[1].spot);

  ASSERT_TRUE(provider.Delete("a100-8-0").ok());
  ASSERT_TRUE(provider.Delete("a100-8-0").ok());  // gone already: the script exits 0 too
  list = provider.List();
  ASSERT_TRUE(list.ok()) << list.error();
  ASSERT_EQ(list.value().size(), 1u);
  EXPECT_EQ(list.value()[0].name, "a100-8-1");

  const std::string calls = Slurp(dir.path() + "/calls");
  EXPECT_NE(calls.find("create --group a100-8 --name a100-8-0 --spot\n"), std::string::npos);
  EXPECT_NE(calls.find("create --group a100-8 --name a100-8-1\n"), std::string::npos);
  EXPECT_NE(calls.find("delete --name a100-8-0\n"), std::string::npos);
  // The join token travels in the environment, never on the command line; the controller's own
  // GPUFLEET_* settings (its admin token) do not reach the script.
  EXPECT_EQ(calls.find("s3cret"), std::string::npos);
  EXPECT_EQ(Slurp(dir.path() + "/create.env"),
            "GPUFLEET_CA_FILE=\n"
            "GPUFLEET_CONTROLLER_URL=http://127.0.0.1:8080\n"
            "GPUFLEET_GPUS=8\n"
            "GPUFLEET_GPU_MODEL=A100-80G\n"
            "GPUFLEET_GROUP=a100-8\n"
            "GPUFLEET_JOIN_TOKEN=s3cret-join-token\n");
  ::unsetenv("GPUFLEET_TOKEN");
}

TEST(ExecProviderTest, FailureQuotesTheFirstLinesOfStderr) {
  ScratchDir dir;
  ExecProvider provider(dir.Script("cloud.sh",
                                   "#!/bin/sh\n"
                                   "echo 'InsufficientInstanceCapacity: none left' >&2\n"
                                   "printf 'try\\033[31m later\\n\\n' >&2\n"
                                   "exit 3\n"),
                        10);
  auto created = provider.Create(Group(), "n1", false, Join());
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.error().find(
                "exited with status 3: InsufficientInstanceCapacity: none left | try[31m later"),
            std::string::npos)
      << created.error();
  EXPECT_EQ(created.failure().code, core::ErrorCode::kUnavailable);
}

TEST(ExecProviderTest, TimeoutKillsTheScriptAndItsChildren) {
  ScratchDir dir;
  const std::string pid_file = dir.path() + "/child.pid";
  ExecProvider provider(
      dir.Script("cloud.sh", "#!/bin/sh\nsleep 30 &\necho $! > " + pid_file + "\nwait\n"), 1);
  const auto start = std::chrono::steady_clock::now();
  auto list = provider.List();
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.error().find("timed out after 1 s"), std::string::npos) << list.error();
  EXPECT_LT(took, std::chrono::seconds(4));
  const int child = std::atoi(Slurp(pid_file).c_str());
  ASSERT_GT(child, 0);
  EXPECT_TRUE(testing::WaitFor([&] { return ProcessGone(child); }, 2000));
}

TEST(ExecProviderTest, TimeoutEscalatesToSigkill) {
  ScratchDir dir;
  ExecProvider provider(dir.Script("cloud.sh", "#!/bin/sh\ntrap '' TERM\nsleep 30\n"), 1);
  provider.set_kill_grace_ms(200);
  const auto start = std::chrono::steady_clock::now();
  auto deleted = provider.Delete("n1");
  ASSERT_FALSE(deleted.ok());
  EXPECT_NE(deleted.error().find("timed out"), std::string::npos) << deleted.error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(ExecProviderTest, MalformedListNamesTheField) {
  ScratchDir dir;
  ExecProvider provider(dir.Script("cloud.sh",
                                   "#!/bin/sh\necho '{\"instances\": [{\"name\": \"a\", \"group\": "
                                   "\"g\", \"spot\": \"yes\", \"state\": \"running\"}]}'\n"),
                        10);
  auto list = provider.List();
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.failure().field, "instances[0].spot");
  EXPECT_NE(list.error().find("list: its reply: instances[0].spot"), std::string::npos)
      << list.error();
}

TEST(ExecProviderTest, CreateReplyMustNameTheInstance) {
  ScratchDir dir;
  ExecProvider provider(dir.Script("cloud.sh", "#!/bin/sh\necho '{\"name\": \"other\"}'\n"), 10);
  auto created = provider.Create(Group(), "n1", false, Join());
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.failure().field, "name");
}

TEST(ExecProviderTest, BadNamesNeverReachTheScript) {
  ScratchDir dir;
  ExecProvider provider(dir.Script("cloud.sh", "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\n"), 10);
  EXPECT_EQ(provider.Delete("--all").failure().field, "name");
  scale::NodeGroup bad = Group();
  bad.name = "a;b";
  EXPECT_EQ(provider.Create(bad, "n1", false, Join()).failure().field, "group");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/ran"));
}

TEST(ExecProviderTest, MissingScript) {
  ScratchDir dir;
  ExecProvider provider(dir.path() + "/nope.sh", 10);
  auto list = provider.List();
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.error().find("cannot run"), std::string::npos) << list.error();
}

TEST(MakeProviderTest, ChecksTheProviderKeys) {
  scale::AutoscaleConfig config;
  LocalProviderOptions local{"", "/nonexistent-work-dir", {}};
  config.provider.kind = "exec";
  EXPECT_EQ(MakeProvider(config, local).failure().field, "script");
  config.provider.script = "/bin/true";
  auto exec = MakeProvider(config, local);
  ASSERT_TRUE(exec.ok()) << exec.error();
  EXPECT_EQ(exec.value()->Kind(), "exec");
  config.provider.kind = "local";
  auto made = MakeProvider(config, local);
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_EQ(made.value()->Kind(), "local");
  config.provider.netns = true;
  auto netns = MakeProvider(config, local);
  ASSERT_FALSE(netns.ok());
  EXPECT_NE(netns.error().find("not implemented"), std::string::npos);
  config.provider.kind = "ec2";
  EXPECT_EQ(MakeProvider(config, local).failure().field, "kind");
}

}  // namespace
}  // namespace gpufleet::cloud
