// Several `gpufleet controller` processes sharing one PostgreSQL store (issue 16), with remote
// agents given every controller's URL, under a submit load from 8 clients:
//   - the leader is killed with kill -9 ten times: no acknowledged job is lost, none runs twice,
//     every job ends, and a standby takes over within 5 s (the times are printed);
//   - the database crashes (pg_ctl stop -m immediate) and comes back: nothing is lost;
//   - a leader paused past its lease (SIGSTOP) finds, when it wakes, that it no longer leads:
//     it answers as a standby and writes nothing more.
// PostgreSQL is started by the test (store/pg_test_server.h); without it the tests skip (fail
// under CI).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_cgroups.h"
#include "e2e_process.h"
#include "store/pg_test_server.h"

namespace gpufleet {
namespace {

using e2e::Slurp;
using e2e::WaitUntil;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kToken = "e2e-failover-admin-token-0123456789abcdef";

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool UnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) != "" && std::string(ci) != "false";
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

class Failover : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = store::PgTestServer::Unavailable()) {
      if (UnderCi()) FAIL() << *why;
      GTEST_SKIP() << *why;
    }
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-failover-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "runs");
    std::string error;
    ASSERT_TRUE(pg_.Start(&error)) << error;
    ASSERT_TRUE(pg_.CreateDatabase("fleet", &error)) << error;
    conninfo_ = pg_.ConnInfo("fleet");
    std::ofstream(dir_ / "token") << kToken << "\n";
  }
  void TearDown() override {
    stop_load_ = true;
    for (std::thread& t : clients_) {
      if (t.joinable()) t.join();
    }
    for (auto& [name, pid] : agents_) Stop(pid);
    for (pid_t& pid : controllers_) Stop(pid);
    if (!dir_.empty()) {
      e2e::Sh("pkill -9 -f '" + dir_.string() + "' 2>/dev/null");
      e2e::ReleaseJobCgroupsUnder(dir_.string());
      std::filesystem::remove_all(dir_);
    }
  }
  static void Stop(pid_t& pid) { e2e::KillAndReap(pid); }
  std::string Url(int k) const { return "http://127.0.0.1:" + std::to_string(ports_[k]); }
  std::string AllUrls() const {
    std::string all;
    for (std::size_t k = 0; k < ports_.size(); ++k) all += (k ? "," : "") + Url(int(k));
    return all;
  }
  std::string Log(int k) const { return (dir_ / ("controller" + std::to_string(k) + ".log")).string(); }

  void StartController(int k) {
    const std::filesystem::path data = dir_ / ("c" + std::to_string(k));
    std::filesystem::create_directories(data);
    std::filesystem::copy_file(dir_ / "token", data / "token",
                               std::filesystem::copy_options::overwrite_existing);
    controllers_[k] = e2e::Spawn(
        {GPUFLEET_BINARY, "controller", "--data-dir", data.string(), "--listen",
         "127.0.0.1:" + std::to_string(ports_[k]), "--store", conninfo_, "--lease", "10",
         "--stop-grace", "1"},
        Log(k));
    ASSERT_GT(controllers_[k], 0);
  }
  void StartControllers(int n) {
    for (int k = 0; k < n; ++k) ports_.push_back(FreePort());
    controllers_.assign(n, -1);
    for (int k = 0; k < n; ++k) StartController(k);
    ASSERT_TRUE(WaitUntil([&] { return Leader() >= 0; }, 20)) << Slurp(Log(0));
  }
  void StartAgent(const std::string& node, int gpus) {
    agents_[node] = e2e::Spawn(
        {GPUFLEET_BINARY, "agent", "--controller", AllUrls(), "--token-file",
         (dir_ / "token").string(), "--hostname", node, "--data-dir", (dir_ / node).string(),
         "--listen", "127.0.0.1:0", "--simulated-gpus", std::to_string(gpus), "--heartbeat",
         "0.2", "--advertise-address", "127.0.0.1", "--allow-root-jobs"},
        (dir_ / (node + ".log")).string());
    ASSERT_GT(agents_[node], 0);
  }

  // The controller that says it leads, or -1.
  int Leader() {
    for (std::size_t k = 0; k < ports_.size(); ++k) {
      if (controllers_[k] <= 0) continue;
      httplib::Client c(Url(int(k)));
      c.set_connection_timeout(0, 300000);
      c.set_read_timeout(1, 0);
      auto r = c.Get("/healthz");
      if (!r || r->status != 200) continue;
      const json h = json::parse(r->body, nullptr, false);
      if (h.is_object() && h.value("role", "") == "leader") return int(k);
    }
    return -1;
  }

  // One request to whichever controller leads: tries each in turn until one answers other
  // than "standby" or "cannot connect", for up to `seconds`.
  httplib::Result ToLeader(const std::function<httplib::Result(httplib::Client&)>& send,
                           double seconds = 30) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(int(seconds * 1000));
    int k = preferred_.load();
    for (;;) {
      httplib::Client c(Url(k));
      c.set_bearer_token_auth(kToken);
      c.set_connection_timeout(1, 0);
      c.set_read_timeout(10, 0);
      auto r = send(c);
      if (r && !(r->status == 503 && r->get_header_value("X-Gpufleet-Role") == "standby")) {
        preferred_ = k;
        return r;
      }
      if (Clock::now() > deadline) return r;
      k = (k + 1) % int(ports_.size());
      if (k == preferred_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  json GetJson(const std::string& path) {
    auto r = ToLeader([&](httplib::Client& c) { return c.Get(path); });
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }

  // `n` clients submitting short jobs until stop_load_; every job appends one line to its own
  // file, so a job that ran twice has two. A submit is retried with its client token until a
  // controller acknowledges it (201): the acknowledged ids are what must never be lost.
  void StartLoad(int n, double job_s, int pause_ms) {
    for (int t = 0; t < n; ++t) {
      clients_.emplace_back([this, t, job_s, pause_ms] {
        for (int i = 0; !stop_load_; ++i) {
          const std::string token = "c" + std::to_string(t) + "-" + std::to_string(i);
          const json body = {
              {"argv",
               {"sh", "-c",
                "echo run >> " + (dir_ / "runs").string() + "/$GPUFLEET_JOB_ID; sleep " +
                    std::to_string(job_s)}},
              {"gpus", 1},
              {"client_token", token}};
          const std::string text = body.dump();
          for (;;) {
            auto r = ToLeader(
                [&](httplib::Client& c) { return c.Post("/v1/jobs", text, "application/json"); },
                5);
            if (r && r->status == 201) {
              std::lock_guard<std::mutex> lock(acked_mutex_);
              acked_.insert(json::parse(r->body)["id"].get<int64_t>());
              break;
            }
            if (r && r->status != 503) {
              ADD_FAILURE() << "submit answered " << r->status << ": " << r->body;
              return;
            }
            ++retries_;
            if (stop_load_ && Clock::now() > stop_deadline_) return;  // never acknowledged
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        }
      });
    }
  }
  void StopLoad() {
    stop_deadline_ = Clock::now() + std::chrono::seconds(30);
    stop_load_ = true;
    for (std::thread& t : clients_) t.join();
    clients_.clear();
  }

  // Waits until no job is live; then checks: every acknowledged job is in the store and
  // SUCCEEDED, the store has no job besides them, and each ran exactly once.
  void ExpectEveryJobRanOnceAndEnded(double seconds) {
    std::set<int64_t> acked;
    {
      std::lock_guard<std::mutex> lock(acked_mutex_);
      acked = acked_;
    }
    ASSERT_FALSE(acked.empty());
    std::map<int64_t, std::string> states;
    const bool drained = WaitUntil(
        [&] {
          states.clear();
          for (int64_t after = 0;;) {
            const json page =
                GetJson("/v1/jobs?user=all&limit=1000&after=" + std::to_string(after));
            if (!page.is_array()) return false;
            if (page.empty()) break;
            for (const json& j : page) states[j["id"].get<int64_t>()] = j["state"];
            after = page.back()["id"].get<int64_t>();
          }
          return std::all_of(states.begin(), states.end(), [](const auto& s) {
            return s.second != "PENDING" && s.second != "SCHEDULED" && s.second != "RUNNING";
          });
        },
        seconds);
    EXPECT_TRUE(drained) << "jobs still live after " << seconds << " s";
    std::map<std::string, int> by_state;
    for (const auto& [id, state] : states) ++by_state[state];
    for (const auto& [state, n] : by_state) std::printf("  %s: %d\n", state.c_str(), n);
    int lost = 0, not_succeeded = 0, twice = 0, never = 0;
    for (int64_t id : acked) {
      auto it = states.find(id);
      if (it == states.end()) {
        ++lost;
        continue;
      }
      if (it->second != "SUCCEEDED") {
        if (++not_succeeded <= 5) ADD_FAILURE() << "job " << id << " ended " << it->second << ": "
                      << GetJson("/v1/jobs/" + std::to_string(id)).dump();
      }
      const std::string runs = Slurp((dir_ / "runs" / std::to_string(id)).string());
      const auto n = std::count(runs.begin(), runs.end(), '\n');
      if (n > 1) ++twice;
      if (n == 0) ++never;
    }
    std::printf("jobs: %zu acknowledged, %zu in the store; lost %d, ran twice %d, never ran %d, "
                "ended other than SUCCEEDED %d; submit retries %d\n",
                acked.size(), states.size(), lost, twice, never, not_succeeded, retries_.load());
    EXPECT_EQ(lost, 0);
    EXPECT_EQ(twice, 0);
    EXPECT_EQ(never, 0);
    EXPECT_EQ(not_succeeded, 0);
    // No job besides the acknowledged ones: a retried submit never made a second job.
    EXPECT_EQ(states.size(), acked.size());
  }

  store::PgTestServer pg_;
  std::string conninfo_;
  std::filesystem::path dir_;
  std::vector<int> ports_;
  std::vector<pid_t> controllers_;
  std::map<std::string, pid_t> agents_;
  std::atomic<int> preferred_{0};
  std::vector<std::thread> clients_;
  std::atomic<bool> stop_load_{false};
  Clock::time_point stop_deadline_ = Clock::now();
  std::mutex acked_mutex_;
  std::set<int64_t> acked_;
  std::atomic<int> retries_{0};
};

TEST_F(Failover, LeaderKilledTenTimesUnderLoadLosesNothingAndRunsNothingTwice) {
  StartControllers(3);
  StartAgent("alpha", 4);
  StartAgent("beta", 4);
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json nodes = GetJson("/v1/nodes");
        return nodes.is_array() && nodes.size() == 2;
      },
      20));
  // Two long jobs that run through several fail-overs: they must keep running, be re-adopted,
  // and end once.
  for (int k = 0; k < 2; ++k) {
    const json body = {{"argv",
                        {"sh", "-c",
                         "echo run >> " + (dir_ / "runs").string() + "/$GPUFLEET_JOB_ID; sleep 12"}},
                       {"gpus", 1}};
    auto r = ToLeader([&](httplib::Client& c) {
      return c.Post("/v1/jobs", body.dump(), "application/json");
    });
    ASSERT_TRUE(r && r->status == 201);
    acked_.insert(json::parse(r->body)["id"].get<int64_t>());
  }
  StartLoad(8, 0.1, 300);  // about 24 submits/s; the 8 GPUs run about 50 jobs/s
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::vector<double> takeover_s;
  for (int round = 0; round < 10; ++round) {
    const int leader = Leader();
    ASSERT_GE(leader, 0) << "round " << round;
    const auto killed = Clock::now();
    kill(controllers_[leader], SIGKILL);
    waitpid(controllers_[leader], nullptr, 0);
    controllers_[leader] = -1;
    int next = -1;
    ASSERT_TRUE(WaitUntil(
        [&] {
          next = Leader();
          return next >= 0;
        },
        15))
        << "round " << round << ": no standby took over\n"
        << Slurp(Log((leader + 1) % 3));
    takeover_s.push_back(std::chrono::duration<double>(Clock::now() - killed).count());
    StartController(leader);  // back as a standby
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // jobs run on the new leader
  }
  StopLoad();
  ExpectEveryJobRanOnceAndEnded(120);
  std::printf("fail-over (kill -9 of the leader to a standby answering as leader), 10 times: "
              "median %.2f s, max %.2f s\n",
              Median(takeover_s), *std::max_element(takeover_s.begin(), takeover_s.end()));
  // The target is 5 s; a sanitized build (the ASan tree) is given twice that.
#if defined(__SANITIZE_ADDRESS__)
  constexpr double kTakeoverLimitS = 10.0;
#else
  constexpr double kTakeoverLimitS = 5.0;
#endif
  EXPECT_LE(*std::max_element(takeover_s.begin(), takeover_s.end()), kTakeoverLimitS);
}

TEST_F(Failover, DatabaseCrashMidLoadLosesNothingAndIsReported) {
  StartControllers(2);
  StartAgent("alpha", 4);
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json nodes = GetJson("/v1/nodes");
        return nodes.is_array() && nodes.size() == 1;
      },
      20));
  StartLoad(4, 0.1, 200);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::string error;
  ASSERT_TRUE(pg_.Stop(/*immediate=*/true, &error)) << error;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(pg_.Start(&error)) << error;
  ASSERT_TRUE(WaitUntil([&] { return Leader() >= 0; }, 20));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  StopLoad();
  ExpectEveryJobRanOnceAndEnded(90);
  // The controllers said what happened.
  const std::string logs = Slurp(Log(0)) + Slurp(Log(1));
  std::printf("what the controllers said:\n");
  std::istringstream lines(logs);
  std::set<std::string> said;
  for (std::string line; std::getline(lines, line);) {
    if (said.insert(line.substr(0, 160)).second && said.size() <= 12) {
      std::printf("  %s\n", line.substr(0, 160).c_str());
    }
  }
  EXPECT_NE(logs.find("connection"), std::string::npos) << logs.substr(0, 4000);
  // Both are still there: a controller waits for its database, it does not give up.
  for (pid_t pid : controllers_) EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0);
}

TEST_F(Failover, APausedLeaderWakesAsAStandbyAndWritesNothing) {
  StartControllers(2);
  StartAgent("alpha", 2);
  const int paused = Leader();
  ASSERT_GE(paused, 0);
  kill(controllers_[paused], SIGSTOP);
  const int other = 1 - paused;
  ASSERT_TRUE(WaitUntil([&] { return Leader() == other; }, 10)) << Slurp(Log(other));
  // Work under the new leader while the old one sleeps.
  auto r = ToLeader([&](httplib::Client& c) {
    return c.Post("/v1/jobs", R"({"argv":["true"],"gpus":1})", "application/json");
  });
  ASSERT_TRUE(r && r->status == 201)
      << (r ? std::to_string(r->status) + " " + r->body : "no answer") << "\n"
      << Slurp(Log(other));
  kill(controllers_[paused], SIGCONT);
  // Asked directly, the woken controller takes nothing: it answers as a standby (its lease ran
  // out while it slept) or, while it stands down, not at all; it says it lost the lead, and
  // comes back as a standby naming the new leader.
  httplib::Client old(Url(paused));
  old.set_bearer_token_auth(kToken);
  auto refused = old.Post("/v1/jobs", R"({"argv":["true"],"gpus":1})", "application/json");
  if (refused) {
    EXPECT_EQ(refused->status, 503) << refused->body;
    EXPECT_EQ(refused->get_header_value("X-Gpufleet-Role"), "standby");
  }
  EXPECT_TRUE(WaitUntil(
      [&] { return Slurp(Log(paused)).find("lost the lead") != std::string::npos; }, 10))
      << Slurp(Log(paused));
  EXPECT_TRUE(WaitUntil(
      [&] {
        auto h = old.Get("/healthz");
        return h && h->status == 200 &&
               json::parse(h->body, nullptr, false).value("role", "") == "standby";
      },
      10))
      << Slurp(Log(paused));
  EXPECT_EQ(Leader(), other);
  // Its write, had it made one, is refused by the store's fencing: store_test's
  // PausedLeaderIsFenced shows that on the store itself.
  const json jobs = GetJson("/v1/jobs?user=all");
  ASSERT_TRUE(jobs.is_array());
  EXPECT_EQ(jobs.size(), 1u);
}

}  // namespace
}  // namespace gpufleet
