// `gpufleet controller` with remote `gpufleet agent --controller` processes on loopback (each
// agent a separate node by name): multi-node jobs and their torchrun variables, logs shipped to
// the controller, an agent killed while its jobs run, an agent silent past its lease (LOST,
// requeue of restartable jobs, fencing when it returns), a controller killed while agents run
// jobs, and malformed or unauthorized heartbeats.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "e2e_cgroups.h"
#include "e2e_process.h"

namespace gpufleet {
namespace {

using e2e::Slurp;
using e2e::WaitUntil;
using nlohmann::json;

bool Alive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

class Cluster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-cluster-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    for (auto& [name, pid] : agents_) Stop(pid);
    Stop(controller_);
    // Jobs outlive agents by design: kill what the tests left (their commands name the dir).
    e2e::Sh("pkill -9 -f '" + dir_.string() + "' 2>/dev/null");
    e2e::ReleaseJobCgroupsUnder(dir_.string());  // what the servers left running
    std::filesystem::remove_all(dir_);
  }
  static void Stop(pid_t& pid) { e2e::KillAndReap(pid); }
  std::string Ctl() const { return (dir_ / "ctl").string(); }

  void StartController(double lease_s) {
    std::filesystem::remove(dir_ / "ctl" / "server");
    std::vector<std::string> args = {GPUFLEET_BINARY, controller_command_, "--data-dir", Ctl(),
                                     "--listen",      listen_,    "--lease",
                                     std::to_string(lease_s),     "--stop-grace", "1"};
    args.insert(args.end(), controller_flags_.begin(), controller_flags_.end());
    controller_ = e2e::Spawn(args, (dir_ / "controller.log").string());
    ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_ / "ctl" / "server"); }, 10))
        << Slurp((dir_ / "controller.log").string());
    url_ = e2e::FirstLine((dir_ / "ctl" / "server").string());
    listen_ = url_.substr(url_.find("//") + 2);  // a restart keeps the port agents know
    token_ = e2e::FirstLine((dir_ / "ctl" / "token").string());
  }
  void StartAgent(const std::string& node, int gpus) {
    agents_[node] = e2e::Spawn({GPUFLEET_BINARY, "agent", "--controller", url_, "--token-file",
                                (dir_ / "ctl" / "token").string(), "--hostname", node, "--data-dir",
                                (dir_ / node).string(), "--listen", "127.0.0.1:0",
                                "--simulated-gpus", std::to_string(gpus), "--heartbeat", "0.2",
                                "--advertise-address", "127.0.0.1", "--allow-root-jobs"},
                               (dir_ / (node + ".log")).string());
    ASSERT_GT(agents_[node], 0);
    ASSERT_TRUE(WaitUntil([&] { return NodeState(node) == "READY"; }, 10))
        << Slurp((dir_ / (node + ".log")).string());
  }
  httplib::Client Http() {
    httplib::Client c(url_);
    c.set_bearer_token_auth(token_);
    if (url_.rfind("https://", 0) == 0) {
      c.set_ca_cert_path((dir_ / "ctl" / "tls" / "ca.pem").string().c_str());
      c.enable_server_certificate_verification(true);
    }
    return c;
  }
  json Get(const std::string& path) {
    auto r = Http().Get(path);
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }
  std::string NodeState(const std::string& node) {
    for (const json& n : Get("/v1/nodes")) {
      if (n["name"] == node) return n["state"];
    }
    return "";
  }
  int64_t Submit(json body) {
    auto r = Http().Post("/v1/jobs", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<int64_t>() : -1;
  }
  json WaitFor(int64_t id, const std::string& state, double seconds = 20) {
    json job;
    WaitUntil(
        [&] {
          job = Get("/v1/jobs/" + std::to_string(id));
          return job.is_object() && job["state"] == state;
        },
        seconds);
    EXPECT_EQ(job.is_object() ? job["state"] : json(), state) << job.dump();
    return job;
  }
  std::string Logs(int64_t id) {
    auto r = Http().Get("/v1/jobs/" + std::to_string(id) + "/logs");
    return r && r->status == 200 ? r->body : "";
  }
  std::string File(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
  pid_t controller_ = -1;
  std::map<std::string, pid_t> agents_;
  std::string url_, token_;
  std::string listen_ = "127.0.0.1:0";
  std::vector<std::string> controller_flags_;
  std::string controller_command_ = "controller";  // or "up": a controller with its own node
};

TEST_F(Cluster, MultiNodeJobGetsTorchrunVariablesOnEveryNode) {
  StartController(5);
  StartAgent("alpha", 4);
  StartAgent("beta", 4);
  const std::string print =
      "echo rank=$NODE_RANK global=$RANK world=$WORLD_SIZE local=$LOCAL_WORLD_SIZE "
      "master=$MASTER_ADDR:$MASTER_PORT gpus=$CUDA_VISIBLE_DEVICES nnodes=$GPUFLEET_NNODES";
  const int64_t id = Submit({{"argv", {"sh", "-c", print}}, {"gpus", 2}, {"nodes", 2}});
  const json done = WaitFor(id, "SUCCEEDED");
  EXPECT_EQ(done["node"], "alpha,beta");
  EXPECT_EQ(done["gpu_indices"].size(), 4U);
  // Both agents measured their rank (from their cgroups, or /proc without), and said with what.
  ASSERT_TRUE(done["host_usage"].is_object()) << done.dump();
  EXPECT_GE(done["host_usage"]["cpu_usage_us"].get<int64_t>(), 0) << done.dump();
  auto nodes = Http().Get("/v1/nodes");
  ASSERT_TRUE(nodes && nodes->status == 200);
  for (const json& n : json::parse(nodes->body)) {
    const std::string limits = n.value("limits", "");
    EXPECT_TRUE(limits == "cgroup-v1" || limits == "cgroup-v2" || limits == "none") << n.dump();
    if (limits != "none") {
      EXPECT_EQ(done["host_usage"]["source"], limits) << "measured from the node's cgroups";
    }
  }
  const std::string port = std::to_string(29500 + id % 1000);
  // Rank 0's log reaches the controller (the agent ships it with its heartbeats).
  EXPECT_NE(Logs(id).find("rank=0 global=0 world=4 local=2 master=127.0.0.1:" + port +
                          " gpus=0,1 nnodes=2"),
            std::string::npos)
      << Logs(id);
  const std::string rank1 = Slurp(Ctl() + "/logs/" + std::to_string(id) + ".rank1.log");
  EXPECT_NE(rank1.find("rank=1 global=2 world=4 local=2 master=127.0.0.1:" + port),
            std::string::npos)
      << rank1;
  // Too wide for the nodes there are: waits, and the queue says so; a per-node ask larger than
  // any node is refused at submit, naming the field.
  auto r = Http().Post("/v1/jobs", json({{"argv", {"true"}}, {"gpus", 8}, {"nodes", 2}}).dump(),
                       "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["field"], "gpus");
  // A failing rank fails the job and stops the other rank.
  const int64_t failing = Submit(
      {{"argv",
        {"sh", "-c",
         "if [ $NODE_RANK = 1 ]; then exit 3; fi; echo $$ > " + File("rank0.pid") + "; sleep 60"}},
       {"gpus", 1},
       {"nodes", 2}});
  const json failed = WaitFor(failing, "FAILED");
  EXPECT_EQ(failed["exit_code"], 3);
  EXPECT_NE(failed["reason"].get<std::string>().find("node beta"), std::string::npos)
      << failed.dump();
  const pid_t rank0 = std::atoi(e2e::FirstLine(File("rank0.pid")).c_str());
  EXPECT_TRUE(WaitUntil([&] { return !Alive(rank0); }, 5)) << "rank 0 still runs";
}

TEST_F(Cluster, AgentKilledWhileItsJobRunsReadoptsItAndItsLogContinues) {
  StartController(5);
  StartAgent("alpha", 4);
  const int64_t id = Submit(
      {{"argv",
        {"sh", "-c", "i=0; while [ $i -lt 40 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done"}},
       {"gpus", 1}});
  WaitFor(id, "RUNNING");
  ASSERT_TRUE(WaitUntil([&] { return Logs(id).find("tick 3") != std::string::npos; }, 10));
  kill(agents_["alpha"], SIGKILL);  // the agent only: its jobs run under their own shims
  waitpid(agents_["alpha"], nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "RUNNING");
  StartAgent("alpha", 4);  // same data directory: re-adopts the job
  const json done = WaitFor(id, "SUCCEEDED");
  EXPECT_EQ(done["exit_code"], 0);
  const std::string log = Logs(id);
  for (int i : {0, 15, 39}) {
    EXPECT_NE(log.find("tick " + std::to_string(i) + "\n"), std::string::npos) << log;
  }
  EXPECT_EQ(done["epoch"], 1);  // one placement: never started twice
  // Its agent's GPU figures, sent with the heartbeats, summarize its GPU's use.
  ASSERT_TRUE(done["usage"].is_object()) << done.dump();
  EXPECT_GE(done["usage"]["gpu_samples"].get<int>(), 2);
}

// Issue 20 through a remote agent: its node reports what it enforces with; a limited job keeps
// its limit across a kill -9 and restart of the agent, which re-adopts it; an OOM kill reaches
// the controller through the heartbeat and names the limit.
TEST_F(Cluster, ARemoteAgentLimitsAndMeasuresItsJobsAcrossItsRestart) {
  StartController(5);
  StartAgent("alpha", 2);
  const json nodes = Get("/v1/nodes");
  ASSERT_EQ(nodes.size(), 1U);
  const std::string limits = nodes[0].value("limits", "");
  if (limits == "none") {
    GTEST_SKIP() << "no usable cgroups here: " << nodes[0].value("limits_why", "");
  }
  const int64_t busy = Submit(
      {{"argv", {"sh", "-c", "for i in 1 2 3 4; do (while :; do :; done) & done; sleep 3"}},
       {"gpus", 1},
       {"cpus", 0.5}});
  WaitFor(busy, "RUNNING");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  kill(agents_["alpha"], SIGKILL);
  waitpid(agents_["alpha"], nullptr, 0);
  StartAgent("alpha", 2);  // same data directory: re-adopts the job and its cgroups
  const json done = WaitFor(busy, "SUCCEEDED");
  ASSERT_TRUE(done["host_usage"].is_object()) << done.dump();
  EXPECT_EQ(done["host_usage"]["source"], limits);
  const double ran_s = (done["end_ms"].get<int64_t>() - done["start_ms"].get<int64_t>()) / 1000.0;
  const double cpu_s = done["host_usage"]["cpu_usage_us"].get<int64_t>() / 1e6;
  EXPECT_GT(cpu_s, 0.3 * ran_s) << done.dump();
  EXPECT_LT(cpu_s, 0.5 * ran_s * 1.3 + 0.3) << "half a core, also after the restart: "
                                           << done.dump();
  EXPECT_GT(done["host_usage"]["cpu_throttled_periods"].get<int64_t>(), 0);

  const int64_t hog = Submit(
      {{"argv", {"sh", "-c", "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}"}},
       {"gpus", 1},
       {"memory_mib", 64}});
  const json killed = WaitFor(hog, "FAILED");
  EXPECT_EQ(killed["oom_killed"], true) << killed.dump();
  EXPECT_NE(killed["reason"].get<std::string>().find("memory limit of 64 MiB"), std::string::npos)
      << killed.dump();
}

TEST_F(Cluster, SilentAgentLosesItsJobsRestartableOnesRequeueAndItIsFencedOnReturn) {
  StartController(2);
  StartAgent("alpha", 4);
  // A restartable job and a plain one, both on alpha (the only node yet).
  const std::string pids = File("pids");
  auto job = [&](const std::string& tag) {
    return json::array(
        {"sh", "-c", "echo " + tag + " $$ >> " + pids + "; exec sleep 120 # " + dir_.string()});
  };
  const int64_t restartable = Submit({{"argv", job("r")}, {"gpus", 2}, {"restartable", true}});
  const int64_t plain = Submit({{"argv", job("p")}, {"gpus", 2}});
  WaitFor(restartable, "RUNNING");
  WaitFor(plain, "RUNNING");
  StartAgent("beta", 4);
  auto pid_of = [&](const std::string& tag, int nth) {
    std::istringstream in(Slurp(pids));
    std::string t;
    pid_t pid = 0;
    int seen = 0;
    while (in >> t >> pid) {
      if (t == tag && seen++ == nth) return pid;
    }
    return pid_t{0};
  };
  ASSERT_TRUE(WaitUntil([&] { return pid_of("r", 0) > 0 && pid_of("p", 0) > 0; }, 5));
  const pid_t first_r = pid_of("r", 0), first_p = pid_of("p", 0);

  kill(agents_["alpha"], SIGSTOP);  // silent, not dead: its jobs' processes go on
  EXPECT_TRUE(WaitUntil([&] { return NodeState("alpha") == "LOST"; }, 8));
  const json lost = WaitFor(plain, "LOST");
  EXPECT_NE(lost["reason"].get<std::string>().find("missed its lease"), std::string::npos)
      << lost.dump();
  // The restartable job runs again, on beta, in a new placement (epoch) ...
  const json again = WaitFor(restartable, "RUNNING");
  EXPECT_EQ(again["node"], "beta");
  EXPECT_EQ(again["epoch"], 2);
  ASSERT_TRUE(WaitUntil([&] { return pid_of("r", 1) > 0; }, 5));
  // ... and its first run was already stopped by its shim at half the lease, though its agent is
  // frozen: the two never ran together.
  EXPECT_FALSE(Alive(first_r)) << "the restartable job's first run still runs";
  EXPECT_TRUE(Alive(first_p)) << "a plain job keeps running while its agent is only silent";

  kill(agents_["alpha"], SIGCONT);  // it returns: fenced, the plain job's process is stopped
  EXPECT_TRUE(WaitUntil([&] { return NodeState("alpha") == "READY"; }, 5));
  EXPECT_TRUE(WaitUntil([&] { return !Alive(first_p); }, 10)) << "a fenced job still runs";
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(plain))["state"], "LOST");
  EXPECT_EQ(pid_of("p", 1), 0) << "a job that is not restartable ran twice";
  EXPECT_NE(Slurp((dir_ / "alpha.log").string()).find("declared this node lost"),
            std::string::npos);
  auto metrics = Http().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("gpufleet_controller_nodes_lost_total 1"), std::string::npos);
}

TEST_F(Cluster, ControllerKilledWhileAgentsRunJobsFindsThemAgain) {
  // A lease long enough that a sanitized controller's restart on a busy machine stays within
  // half of it (the agent self-fences restartable jobs after half a lease without an answer).
  StartController(6);
  StartAgent("alpha", 2);
  const int64_t id = Submit(
      {{"argv", {"sh", "-c", "sleep 1.5; echo finished"}}, {"gpus", 2}, {"restartable", true}});
  WaitFor(id, "RUNNING");
  Stop(controller_);  // kill -9
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  StartController(6);
  const json done = WaitFor(id, "SUCCEEDED");
  EXPECT_EQ(done["epoch"], 1);
  EXPECT_NE(Logs(id).find("finished"), std::string::npos);
}

// A node that boots while its controller is down (restarting) joins once it is back: a refused
// connection carried nothing, so the agent sends its join again (it used to give up at once, and
// an autoscaled node booting during a controller restart never joined).
TEST_F(Cluster, AnAgentBootingWhileTheControllerIsDownJoinsWhenItIsBack) {
  StartController(10);
  auto [created, rc] = e2e::Sh(std::string(GPUFLEET_BINARY) + " token create --join --json " +
                               "--data-dir " + Ctl() + " 2>&1");
  ASSERT_EQ(rc, 0) << created;
  const std::string join = json::parse(created, nullptr, false).value("token", "");
  ASSERT_FALSE(join.empty()) << created;
  Stop(controller_);
  agents_["late"] = e2e::Spawn(
      {GPUFLEET_BINARY, "agent", "--controller", url_, "--join-token", join, "--hostname", "late",
       "--data-dir", File("late"), "--listen", "127.0.0.1:0", "--simulated-gpus", "1",
       "--heartbeat", "0.2", "--advertise-address", "127.0.0.1", "--allow-root-jobs"},
      File("late.log"));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(Alive(agents_["late"])) << Slurp(File("late.log"));
  StartController(10);
  ASSERT_TRUE(WaitUntil([&] { return NodeState("late") == "READY"; }, 20))
      << Slurp(File("late.log"));
}

TEST_F(Cluster, TheNodeRegistrySurvivesAControllerRestart) {
  StartController(1.5);
  StartAgent("alpha", 2);
  kill(agents_["alpha"], SIGSTOP);  // silent across the restart
  Stop(controller_);
  StartController(1.5);
  json alpha;
  for (const json& n : Get("/v1/nodes")) {
    if (n["name"] == "alpha") alpha = n;
  }
  ASSERT_TRUE(alpha.is_object()) << "the restarted controller forgot node alpha";
  EXPECT_EQ(alpha["state"], "UNKNOWN");  // known, not heard from since the restart
  EXPECT_EQ(alpha["gpus"], 2);
  // Submits are checked against the registered sizes before any agent is back.
  auto r =
      Http().Post("/v1/jobs", json({{"argv", {"true"}}, {"gpus", 3}}).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_TRUE(WaitUntil([&] { return NodeState("alpha") == "LOST"; }, 5));
  kill(agents_["alpha"], SIGCONT);
  EXPECT_TRUE(WaitUntil([&] { return NodeState("alpha") == "READY"; }, 5));
}

TEST_F(Cluster, BadHeartbeatsGetClearErrorsAndTheControllerKeepsServing) {
  StartController(5);
  httplib::Client c(url_);
  auto anonymous = c.Post("/v1/agent/heartbeat", "{}", "application/json");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  auto http = Http();
  auto malformed = http.Post("/v1/agent/heartbeat", "{not json", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_NE(malformed->body.find("malformed JSON"), std::string::npos);
  auto bad_node =
      http.Post("/v1/agent/heartbeat", R"({"node":"a,b","gpus":1})", "application/json");
  ASSERT_TRUE(bad_node);
  EXPECT_EQ(bad_node->status, 400);
  EXPECT_EQ(json::parse(bad_node->body)["field"], "node");
  auto bad_state = http.Post(
      "/v1/agent/heartbeat",
      R"({"node":"n","gpus":1,"jobs":[{"id":1,"epoch":1,"state":"dancing"}]})", "application/json");
  ASSERT_TRUE(bad_state);
  EXPECT_EQ(bad_state->status, 400);
  // A heartbeat for jobs the controller never placed there changes nothing.
  auto stray = http.Post("/v1/agent/heartbeat",
                         R"({"node":"n","gpus":1,"jobs":[{"id":77,"epoch":3,"state":"exited"}]})",
                         "application/json");
  ASSERT_TRUE(stray);
  EXPECT_EQ(stray->status, 200);
  EXPECT_TRUE(json::parse(stray->body)["assignments"].empty());
  EXPECT_EQ(NodeState("n"), "READY");
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// The whole TLS path (issue 11, finding 7): a controller on https, a join token that pins its CA,
// an agent that refuses a server without that CA before sending the secret, heartbeats and logs
// over TLS, and a restarted agent that trusts the CA its join saved.
TEST_F(Cluster, AgentsJoinAnHttpsControllerByPinningItsCaAndRunJobsOverTls) {
  controller_flags_ = {"--tls", "on"};
  StartController(5);
  ASSERT_EQ(url_.rfind("https://", 0), 0u) << url_;
  const std::string jobs_cli = std::string(GPUFLEET_BINARY) + " jobs --data-dir " + Ctl();
  auto [created, rc] = e2e::Sh(std::string(GPUFLEET_BINARY) + " token create --join --json " +
                               "--data-dir " + Ctl() + " 2>&1");
  ASSERT_EQ(rc, 0) << created;
  const json answer = json::parse(created, nullptr, false);
  ASSERT_TRUE(answer.is_object()) << created;
  const std::string join = answer["token"];
  const std::string ca_sha = answer["ca_sha256"];
  ASSERT_EQ(join.size(), 64u + 1 + 64u) << join;
  ASSERT_EQ(join.substr(65), ca_sha);

  // A token whose pin names another CA: the agent stops before sending the secret, so the token
  // stays valid for the real node.
  std::string forged = join;
  forged.back() = forged.back() == '0' ? '1' : '0';
  auto [refused, refused_rc] = e2e::Sh(
      std::string(GPUFLEET_BINARY) + " agent --controller " + url_ + " --join-token " + forged +
      " --hostname mallory --data-dir " + File("mallory") +
      " --listen 127.0.0.1:0 --simulated-gpus 1 2>&1");
  EXPECT_NE(refused_rc, 0);
  EXPECT_NE(refused.find("does not present the CA the join token names"), std::string::npos)
      << refused;
  EXPECT_FALSE(std::filesystem::exists(File("mallory") + "/node-token"));
  // Found by a review: the same token with an http:// URL went out in the clear (the join then
  // failed, leaving the token valid for whoever saw it). Now nothing is sent.
  std::string clear_url = url_;
  clear_url.replace(0, 5, "http");
  auto [clear, clear_rc] =
      e2e::Sh(std::string(GPUFLEET_BINARY) + " agent --controller " + clear_url + " --join-token " +
              join + " --hostname mallory --data-dir " + File("mallory") +
              " --listen 127.0.0.1:0 --simulated-gpus 1 2>&1");
  EXPECT_NE(clear_rc, 0);
  EXPECT_NE(clear.find("in the clear"), std::string::npos) << clear;
  // A CA an earlier join saved (another cluster's) must be the one the token pins.
  std::filesystem::create_directories(File("beta"));
  std::filesystem::copy_file(Ctl() + "/tls/server.pem", File("beta") + "/controller-ca.pem");
  auto [stale, stale_rc] = e2e::Sh(std::string(GPUFLEET_BINARY) + " agent --controller " + url_ +
                                   " --join-token " + join + " --hostname beta --data-dir " +
                                   File("beta") + " --listen 127.0.0.1:0 --simulated-gpus 1 2>&1");
  EXPECT_NE(stale_rc, 0);
  EXPECT_NE(stale.find("which an earlier join saved"), std::string::npos) << stale;
  EXPECT_FALSE(std::filesystem::exists(File("beta") + "/node-token"));
  // So must a --ca given (before, the token's CA hash was then not looked at).
  auto [given, given_rc] =
      e2e::Sh(std::string(GPUFLEET_BINARY) + " agent --controller " + url_ + " --join-token " +
              join + " --ca " + File("beta") + "/controller-ca.pem --hostname gamma --data-dir " +
              File("gamma") + " --listen 127.0.0.1:0 --simulated-gpus 1 2>&1");
  EXPECT_NE(given_rc, 0);
  EXPECT_NE(given.find("(--ca)"), std::string::npos) << given;

  auto join_agent = [&] {
    agents_["alpha"] = e2e::Spawn(
        {GPUFLEET_BINARY, "agent", "--controller", url_, "--join-token", join, "--hostname",
         "alpha", "--data-dir", File("alpha"), "--listen", "127.0.0.1:0", "--simulated-gpus", "2",
         "--heartbeat", "0.2", "--advertise-address", "127.0.0.1", "--allow-root-jobs"},
        File("alpha.log"));
    ASSERT_TRUE(WaitUntil([&] { return NodeState("alpha") == "READY"; }, 10))
        << Slurp(File("alpha.log"));
  };
  join_agent();
  EXPECT_EQ(Slurp(File("alpha") + "/controller-ca.pem"), Slurp(Ctl() + "/tls/ca.pem"));
  const int64_t id = Submit({{"argv", {"sh", "-c", "echo over-tls"}}, {"gpus", 1}});
  WaitFor(id, "SUCCEEDED");
  EXPECT_NE(Logs(id).find("over-tls"), std::string::npos);

  // Restarted, the agent uses its saved credential and the CA its join pinned.
  Stop(agents_["alpha"]);
  ASSERT_TRUE(WaitUntil([&] { return NodeState("alpha") != "READY"; }, 15));
  join_agent();

  // The CLI trusts the data directory's CA; plain HTTP to the https port is told what to do.
  auto [jobs, jobs_rc] = e2e::Sh(jobs_cli + " 2>&1");
  EXPECT_EQ(jobs_rc, 0) << jobs;
  EXPECT_NE(jobs.find("SUCCEEDED"), std::string::npos) << jobs;
  std::string plain = url_;
  plain.replace(0, 5, "http");
  auto [wrong, wrong_rc] = e2e::Sh(jobs_cli + " --server " + plain + " 2>&1");
  EXPECT_NE(wrong_rc, 0);
  EXPECT_NE(wrong.find("speaks https"), std::string::npos) << wrong;
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// A two-node job with one rank on `up`'s own node and one on a remote agent: when the remote node
// is lost, the job ends LOST and its rank on the controller's node is stopped too (it went on
// running on GPUs the scheduler gave away).
TEST_F(Cluster, ALostNodeStopsTheJobsRankOnTheControllersOwnNode) {
  controller_command_ = "up";
  controller_flags_ = {"--simulated-gpus", "2", "--allow-root-jobs"};
  StartController(2);
  StartAgent("alpha", 2);
  const std::string pids = File("pids");
  const int64_t id = Submit({{"argv", {"sh", "-c",
                                       "echo $GPUFLEET_NODE_RANK $$ >> " + pids +
                                           "; exec sleep 300"}},
                             {"gpus", 2},
                             {"nodes", 2}});
  const json running = WaitFor(id, "RUNNING");
  ASSERT_TRUE(WaitUntil([&] { return e2e::Sh("wc -l < " + pids).first == "2\n"; }, 10));
  // The rank on node "local" (the job's nodes are listed in rank order).
  const std::string nodes = running["node"];
  const int local_rank = nodes.rfind("local", 0) == 0 ? 0 : 1;
  pid_t local_pid = -1;
  std::istringstream lines(Slurp(pids));
  int rank = -1;
  pid_t pid = -1;
  while (lines >> rank >> pid) {
    if (rank == local_rank) local_pid = pid;
  }
  ASSERT_GT(local_pid, 0) << Slurp(pids) << nodes;
  kill(agents_["alpha"], SIGSTOP);  // silent past its 2 s lease
  WaitFor(id, "LOST", 20);
  EXPECT_TRUE(WaitUntil([&] { return !Alive(local_pid); }, 10))
      << "the rank on the controller's node still runs after its job was declared LOST";
  // The remote rank outlives its stopped agent by design; its `sleep` names no test path.
  std::istringstream again(Slurp(pids));
  while (again >> rank >> pid) kill(pid, SIGKILL);
}

}  // namespace
}  // namespace gpufleet
