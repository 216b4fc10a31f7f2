// Issue 14 end to end: `gpufleet up --autoscale FILE.toml` with no GPUs of its own grows the fleet
// through the `local` provider (real `gpufleet agent` processes with simulated GPUs, started
// after the group's boot time), runs the jobs there, and retires the nodes once unneeded; a
// controller killed with SIGKILL while its nodes boot leaves neither a duplicate nor an orphan;
// a failing provider script is an event and a backoff, and loses no job.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cstdlib>
#include <set>

#include "e2e_up_server.h"

namespace gpufleet::e2e {
namespace {

constexpr const char* kGroups = R"(
[[groups]]
name = "v100-2"
gpu_model = "V100M32"
gpus = 2
cpu_cores = 8
memory_gib = 32
price_per_hour = 6.0
min = 0
max = 4
boot_s = 2

[[groups]]
name = "a100-1"
gpu_model = "A100-80GB"
gpus = 1
cpu_cores = 8
memory_gib = 32
price_per_hour = 4.1
min = 0
max = 2
boot_s = 1

[policy]
scan_interval_s = 1
scale_down_unneeded_s = 4
)";

class ScaleE2E : public UpServer {
 protected:
  void SetUp() override {
    config_ = std::filesystem::temp_directory_path() /
              ("gpufleet-scale-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml");
    std::ofstream(config_) << kGroups << Provider();
    extra_up_args = {"--autoscale", config_.string(), "--lease", "5"};
    gpu_args = {"--simulated-gpus", "0"};  // the controller's own node has no GPU
    UpServer::SetUp();
  }
  void TearDown() override {
    // The local provider's agents outlive the controller (as instances would): each leads a
    // session of its own, ended here with everything in it.
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "instances", ec)) {
      const std::string pid = Slurp((e.path() / "pid").string());
      const int leader = std::atoi(pid.c_str());
      if (leader > 1) Sh("pkill -KILL -s " + std::to_string(leader));
    }
    UpServer::TearDown();
    std::filesystem::remove(config_);
    if (!script_dir_.empty()) std::filesystem::remove_all(script_dir_);
  }
  virtual std::string Provider() { return "[provider]\nkind = \"local\"\n"; }

  json ScaleStatus() {
    auto r = Http(token_).Get("/v1/scale");
    if (!r || r->status != 200) return json::object();
    return json::parse(r->body);
  }
  int64_t Submit(const json& body) {
    auto r = Http(token_).Post("/v1/jobs", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<int64_t>() : 0;
  }
  // The nodes a job ran on ("node" is their names, comma-joined).
  static std::set<std::string> NodesOf(const json& job) {
    std::set<std::string> names;
    std::string list = job.value("node", "");
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at) names.insert(list.substr(at, comma - at));
      at = comma + 1;
    }
    return names;
  }
  // The instances the local provider holds now (one folder each).
  std::set<std::string> Instances() {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "instances", ec)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }
  // Every node the audit log says was created (or adopted: created by a controller killed before
  // it could record so).
  std::set<std::string> CreatedEver() {
    std::set<std::string> names;
    auto r = Http(token_).Get("/v1/audit?limit=10000");
    if (!r || r->status != 200) return names;
    for (const json& e : json::parse(r->body)) {
      if (e.value("what", "") != "created" && e.value("what", "") != "adopted") continue;
      const std::string detail = e.value("detail", "");  // "node NAME of group ..."
      names.insert(detail.substr(5, detail.find(' ', 5) - 5));
    }
    return names;
  }
  template <typename F>
  bool Eventually(F done, double seconds) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(int(seconds * 1000));
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return done();
  }

  std::filesystem::path config_;
  std::filesystem::path script_dir_;
};

TEST_F(ScaleE2E, AGangGetsTwoNodesThatRetireWhenUnneededAndAnotherGpuTypeGetsItsOwnGroup) {
  const int64_t gang = Submit({{"argv", {"sleep", "2"}}, {"gpus", 2}, {"nodes", 2},
                               {"gpu_type", "V100M32"}, {"name", "gang"}});
  ASSERT_GT(gang, 0);
  const json done = WaitFor(gang, "SUCCEEDED", 60);
  ASSERT_EQ(done["state"], "SUCCEEDED") << Slurp(dir_.string() + ".up.log");
  const std::set<std::string> used = NodesOf(done);
  ASSERT_EQ(used.size(), 2u) << done.dump();
  for (const std::string& node : used) EXPECT_EQ(node.rfind("gf-v100-2-", 0), 0u) << node;
  EXPECT_EQ(CreatedEver(), used) << "exactly the gang's two nodes were bought";
  // Both retired after the unneeded time: instances deleted, nodes RETIRED. The provider's
  // instances are gone before the tick that deleted them ends and updates the status: wait for
  // that too.
  ASSERT_TRUE(Eventually([&] { return Instances().empty(); }, 30)) << ScaleStatus().dump(2);
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = ScaleStatus();
        return s.value("retired", 0) == 2 && s.value("spend_per_hour", -1.0) == 0.0;
      },
      30))
      << ScaleStatus().dump(2);
  auto nodes = json::parse(Http(token_).Get("/v1/nodes")->body);
  for (const json& n : nodes) {
    if (used.count(n["name"].get<std::string>())) {
      EXPECT_EQ(n["state"], "RETIRED") << n.dump();
    }
  }
  const json status = ScaleStatus();
  EXPECT_EQ(status["created"], 2);
  EXPECT_EQ(status["retired"], 2);
  EXPECT_EQ(status["spend_per_hour"], 0.0);

  // Another GPU type: a node of its own group.
  const int64_t other = Submit({{"argv", {"sleep", "1"}}, {"gpus", 1}, {"gpu_type", "A100-80GB"}});
  const json ran = WaitFor(other, "SUCCEEDED", 60);
  ASSERT_EQ(ran["state"], "SUCCEEDED");
  EXPECT_EQ(ran["node"].get<std::string>().rfind("gf-a100-1-", 0), 0u) << ran.dump();
  // The CLI shows it, with its group and price while it is held.
  const std::string cli = Cli("scale status");
  EXPECT_NE(cli.find("a100-1"), std::string::npos) << cli;
  EXPECT_NE(cli.find("created"), std::string::npos) << cli;
}

TEST_F(ScaleE2E, AControllerKilledWhileItsNodesBootLeavesNoDuplicateAndNoOrphan) {
  const int64_t gang = Submit({{"argv", {"sleep", "1"}}, {"gpus", 2}, {"nodes", 2},
                               {"gpu_type", "V100M32"}});
  ASSERT_TRUE(Eventually([&] { return Instances().size() == 2; }, 20));
  Kill(SIGKILL);  // while they boot (boot_s = 2)
  const std::set<std::string> before = Instances();
  Start();
  const json done = WaitFor(gang, "SUCCEEDED", 60);
  ASSERT_EQ(done["state"], "SUCCEEDED") << Slurp(dir_.string() + ".up.log") << "\n"
                                        << ScaleStatus().dump(2);
  EXPECT_EQ(CreatedEver(), before) << "no node was bought twice";
  EXPECT_EQ(NodesOf(done), before) << "the job ran on the nodes bought before the kill";
  ASSERT_TRUE(Eventually([&] { return Instances().empty(); }, 30))
      << "every instance retired, none orphaned: " << ScaleStatus().dump(2);
  EXPECT_EQ(ScaleStatus()["orphans_deleted"], 0);
}

class FailingProviderE2E : public ScaleE2E {
 protected:
  std::string Provider() override {
    script_dir_ = std::filesystem::temp_directory_path() /
                  ("gpufleet-scale-script-" + std::to_string(::getpid()));
    std::filesystem::create_directories(script_dir_);
    const std::string script = (script_dir_ / "cloud.sh").string();
    std::ofstream(script) << "#!/bin/sh\n"
                             "case \"$1\" in\n"
                             "  list) echo '{\"instances\": []}' ;;\n"
                             "  create) echo 'InsufficientInstanceCapacity: quota exceeded' >&2; "
                             "exit 3 ;;\n"
                             "  delete) exit 0 ;;\n"
                             "esac\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    return "[provider]\nkind = \"exec\"\nscript = \"" + script + "\"\ntimeout_s = 10\n";
  }
};

TEST_F(FailingProviderE2E, AFailingScriptIsAnEventAndABackoffAndLosesNoJob) {
  const int64_t id = Submit({{"argv", {"true"}}, {"gpus", 1}, {"gpu_type", "A100-80GB"}});
  ASSERT_TRUE(Eventually([&] { return ScaleStatus().value("provider_errors", 0) >= 1; }, 20));
  const json s = ScaleStatus();
  bool named = false;
  for (const json& e : s["events"]) {
    named = named || (e["what"].get<std::string>().find("failed") != std::string::npos &&
                      e["detail"].get<std::string>().find("quota exceeded") != std::string::npos);
  }
  EXPECT_TRUE(named) << s.dump(2);
  bool backing_off = false;
  for (const json& g : s["groups"]) backing_off = backing_off || g["backoff_until_ms"] > 0;
  EXPECT_TRUE(backing_off) << s.dump(2);
  // Within the first backoff (30 s) the script is not asked again.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(ScaleStatus()["provider_errors"], s["provider_errors"]);
  auto job = json::parse(Http(token_).Get("/v1/jobs/" + std::to_string(id))->body);
  EXPECT_EQ(job["state"], "PENDING") << "the job waits; nothing is lost";
  const std::string metrics = Http("").Get("/metrics")->body;
  EXPECT_NE(metrics.find("gpufleet_autoscaler_provider_errors_total 1"), std::string::npos);
  EXPECT_NE(Cli("scale status").find("quota exceeded"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::e2e
