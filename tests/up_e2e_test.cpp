// `gpufleet up` end to end: a real server process on loopback, driven through the CLI and raw
// HTTP. Covers submit -> run -> logs -> cancel, bad requests, user isolation, and acknowledged
// jobs surviving a kill -9 of the server.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "controller/auth.h"
#include "controller/job_logs.h"
#include "e2e_cgroups.h"
#include "e2e_process.h"
#include "e2e_up_server.h"
#include "store/store.h"

extern char** environ;

namespace gpufleet {
namespace {

using nlohmann::json;

using e2e::Sh;
using e2e::Slurp;
using e2e::UpServer;

TEST_F(UpServer, SubmitRunsLogsAndCancels) {
  const json submitted =
      json::parse(Cli("submit --json --gpus 2 -- sh -c 'echo gpus=$CUDA_VISIBLE_DEVICES'"));
  const int64_t id = submitted["id"].get<int64_t>();
  const json done = WaitFor(id, "SUCCEEDED");
  EXPECT_EQ(done["exit_code"], 0);
  EXPECT_EQ(done["gpu_indices"].size(), 2U);
  EXPECT_NE(Cli("logs " + std::to_string(id)).find("gpus=0,1"), std::string::npos);
  // Once retention removes a log (controller/log_retention.h, here by hand), `logs` says so.
  {
    const controller::JobLogs logs(dir_.string());
    bool found = false;
    for (const controller::JobLogs::Held& held : logs.Scan()) {
      if (held.job_id != id) continue;
      found = true;
      ASSERT_TRUE(logs.Remove(held, "[gpufleet] removed for the test"));
    }
    ASSERT_TRUE(found);
    EXPECT_EQ(Cli("logs " + std::to_string(id)), "[gpufleet] removed for the test\n");
  }

  const json failing = json::parse(Cli("submit --json -- sh -c 'exit 7'"));
  const json failed = WaitFor(failing["id"].get<int64_t>(), "FAILED");
  EXPECT_EQ(failed["exit_code"], 7);

  const json sleeper = json::parse(Cli("submit --json -- sleep 60"));
  const int64_t sleeper_id = sleeper["id"].get<int64_t>();
  WaitFor(sleeper_id, "RUNNING");
  Cli("cancel " + std::to_string(sleeper_id));
  WaitFor(sleeper_id, "CANCELLED");

  const json jobs = json::parse(Cli("jobs --json"));
  ASSERT_EQ(jobs.size(), 3U);
  for (const json& j : jobs) {
    for (const char* key : {"id", "state", "user", "gpus", "node"}) EXPECT_TRUE(j.contains(key));
  }
  // Paged: two at a time, the next page after the last id of the one before.
  const json first_page = json::parse(Cli("jobs --json --limit 2"));
  ASSERT_EQ(first_page.size(), 2U) << first_page.dump();
  const json next_page = json::parse(
      Cli("jobs --json --limit 2 --after " + std::to_string(first_page[1]["id"].get<int64_t>())));
  ASSERT_EQ(next_page.size(), 1U) << next_page.dump();
  EXPECT_EQ(next_page[0]["id"], jobs[2]["id"]);
  EXPECT_NE(Cli("jobs --after -1").find("--after"), std::string::npos);
  // Too big for the node: refused at submit, with the field named.
  const std::string too_big = Cli("submit --gpus 9 -- true");
  EXPECT_NE(too_big.find("gpus: asks 9 GPUs per node; the largest node has 4"), std::string::npos)
      << too_big;
}

// Found while adding log retention: `gpufleet logs ID` printed the server's first answer only, at
// most 4 MiB, and stopped without a word. Now it reads the whole log, chunk after chunk.
TEST_F(UpServer, LogsPrintsAWholeLogLargerThanOneAnswer) {
  const json submitted = json::parse(Cli(
      "submit --json -- sh -c 'head -c 9437184 /dev/zero | tr \"\\\\000\" x; echo; echo the-end'"));
  const int64_t id = submitted["id"].get<int64_t>();
  WaitFor(id, "SUCCEEDED");
  const std::size_t whole = 9437184 + 1 + 8;  // the x's, a newline, "the-end\n"
  std::string log;
  for (int i = 0; i < 300 && log.size() < whole; ++i) {  // the controller may still be taking it
    log = Cli("logs " + std::to_string(id));
    if (log.size() < whole) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(log.size(), whole);
  EXPECT_EQ(log.substr(log.size() - 8), "the-end\n");
}

class LogQuotaServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--log-quota", "1"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
};

// Running jobs' logs were held to --log-quota only once they ended (the sweep never touches a
// running job's): a user's chatty jobs could fill the controller's disk while they ran.
TEST_F(LogQuotaServer, ARunningJobsLogStopsGrowingOnTheControllerAtItsUsersQuota) {
  const json submitted = json::parse(
      Cli("submit --json -- sh -c 'head -c 3145728 /dev/zero | tr \"\\\\000\" x; sleep 30'"));
  const int64_t id = submitted["id"].get<int64_t>();
  WaitFor(id, "RUNNING");
  bool held_back = false;
  for (int i = 0; i < 150 && !held_back; ++i) {
    const std::string metrics = Http("").Get("/metrics")->body;
    held_back =
        metrics.find("gpufleet_controller_log_chunks_held_back_total 0") == std::string::npos &&
        metrics.find("gpufleet_controller_log_chunks_held_back_total") != std::string::npos;
    if (!held_back) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(held_back) << "the controller never held a chunk back";
  const controller::JobLogs logs(dir_.string());
  EXPECT_EQ(logs.Size(id, 0), int64_t{1} << 20) << "it takes what fits in the 1 MiB quota";
  Cli("cancel " + std::to_string(id));
}

TEST_F(UpServer, TimeLimitsStopJobsAndLetShortJobsBackfillButNeverStarveABigOne) {
  auto id_of = [](const std::string& out) { return json::parse(out)["id"].get<int64_t>(); };
  // 4 GPUs. A holds 2 for about 3 s (limit 20 s); B, asking all 4, must wait for it.
  const int64_t a = id_of(Cli("submit --json --gpus 2 --time-limit 20 -- sleep 3"));
  WaitFor(a, "RUNNING");
  const int64_t b = id_of(Cli("submit --json --gpus 4 -- true"));
  // C ends (by its limit) long before B's reservation: it may use the 2 free GPUs now. D has no
  // limit: it could hold B back for ever, so it waits behind B.
  const int64_t c = id_of(Cli("submit --json --gpus 2 --time-limit 2 -- sleep 0.5"));
  const int64_t d = id_of(Cli("submit --json --gpus 2 -- true"));
  const json c_done = WaitFor(c, "SUCCEEDED");
  const json b_done = WaitFor(b, "SUCCEEDED");
  const json d_done = WaitFor(d, "SUCCEEDED");
  EXPECT_LT(c_done["start_ms"].get<int64_t>(), b_done["start_ms"].get<int64_t>());
  EXPECT_GE(d_done["start_ms"].get<int64_t>(), b_done["start_ms"].get<int64_t>());
  // A job past its time limit is stopped and FAILED, saying why.
  const int64_t e = id_of(Cli("submit --json --time-limit 1 -- sleep 30"));
  const json timed_out = WaitFor(e, "FAILED", 10);
  EXPECT_NE(timed_out["reason"].get<std::string>().find("time limit of 1 s reached"),
            std::string::npos)
      << timed_out.dump();
  EXPECT_LT(timed_out["end_ms"].get<int64_t>() - timed_out["start_ms"].get<int64_t>(), 5000);
  EXPECT_NE(Cli("submit --time-limit soon -- true").find("--time-limit 'soon'"), std::string::npos);
}

TEST_F(UpServer, EndedJobsCarryAGpuUsageSummary) {
  const int64_t id = json::parse(Cli("submit --json --gpus 2 -- sleep 2.5"))["id"].get<int64_t>();
  const json done = WaitFor(id, "SUCCEEDED");
  ASSERT_TRUE(done["usage"].is_object()) << done.dump();
  const json& usage = done["usage"];
  // The simulated GPUs report utilization every second: about 2 samples of each of 2 GPUs.
  EXPECT_GE(usage["gpu_samples"].get<int>(), 2);
  EXPECT_GE(usage["gpu_util_avg_pct"].get<double>(), 0);
  EXPECT_LE(usage["gpu_util_avg_pct"].get<double>(), 100);
  EXPECT_GT(usage["gpu_mem_peak_mib"].get<int64_t>(), 0);
  const double allocated = usage["gpu_hours_allocated"].get<double>();
  EXPECT_NEAR(allocated, 2 * 2.5 / 3600, 2 * 1.5 / 3600);
  EXPECT_LE(usage["gpu_hours_used"].get<double>(), allocated);
}

// What the local node limits and measures jobs with ("none" when it has no usable cgroups).
std::string NodeLimits(const json& nodes) {
  return nodes.is_array() && !nodes.empty() ? nodes[0].value("limits", "none") : "none";
}

// Whether a process whose command line holds `marker` is still alive.
bool AnyProcessNamed(const std::string& marker) {
  // "[g]..." so that pgrep does not find the shell that runs it, whose command line has the text.
  return Sh("pgrep -f '[" + marker.substr(0, 1) + "]" + marker.substr(1) + "' >/dev/null").second ==
         0;
}

// A process a job left in a session of its own, forking all the time (each fork a new pid), ends
// with the job: on v1 its freezer cgroup is frozen before the kill (a frozen process cannot fork)
// and thawed after, on v2 cgroup.kill kills it all at once; either way nothing is left frozen.
TEST_F(UpServer, AForkingLeftoverEndsWithItsJobAndNothingIsLeftFrozen) {
  const json nodes = json::parse(Cli("nodes --json"));
  const std::string limits = NodeLimits(nodes);
  if (limits == "none") GTEST_SKIP() << "no usable cgroup v1 or v2 hierarchy here";
  const std::string marker = "gpufleet-forker-" + std::to_string(::getpid());
  const int64_t id =
      json::parse(Cli("submit --json -- sh -c 'grep -E \"^[0-9]+:freezer:\" /proc/self/cgroup; "
                      "setsid sh -c \"while :; do sh -c true; done\" " +
                      marker + " & sleep 1'"))["id"]
          .get<int64_t>();
  WaitFor(id, "SUCCEEDED", 30);
  if (limits == "cgroup-v1" && std::filesystem::exists("/sys/fs/cgroup/freezer")) {
    EXPECT_NE(Cli("logs " + std::to_string(id)).find("gpufleet-job-" + std::to_string(id)),
              std::string::npos)
        << "the job runs in a freezer cgroup of its own";
  }
  for (int i = 0; i < 200 && AnyProcessNamed(marker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(AnyProcessNamed(marker)) << "the forking leftover outlived its job";
}

// Issue 20: limits hold on whichever cgroup version the machine has (v1 on this kind of machine),
// what a job used is recorded, and what a job leaves behind ends with it.
TEST_F(UpServer, CpuAndMemoryLimitsHoldAndEveryJobIsMeasured) {
  const json nodes = json::parse(Cli("nodes --json"));
  const std::string limits = NodeLimits(nodes);
  if (limits == "none") {
    GTEST_SKIP() << "no usable cgroup v1 or v2 hierarchy here (" << nodes.dump()
                 << "): limits cannot be enforced, so they are not tested";
  }
  EXPECT_NE(Cli("nodes").find(limits), std::string::npos) << "`gpufleet nodes` shows it";
  const std::string marker = "gpufleet-busy-" + std::to_string(::getpid());
  // 4 busy processes for 3 s under half a core; they outlive the script, which ends at once.
  const int64_t busy = json::parse(Cli(
      "submit --json --cpus 0.5 -- sh -c 'for i in 1 2 3 4; do (while :; do :; done) & done; "
      "sleep 3' " + marker))["id"].get<int64_t>();
  const json done = WaitFor(busy, "SUCCEEDED", 30);
  const json& used = done["host_usage"];
  ASSERT_TRUE(used.is_object()) << done.dump();
  EXPECT_EQ(used["source"], limits);
  const double ran_s = (done["end_ms"].get<int64_t>() - done["start_ms"].get<int64_t>()) / 1000.0;
  const double cpu_s = used["cpu_usage_us"].get<int64_t>() / 1e6;
  // Half a core: about ran_s / 2 (unlimited, 4 busy processes would take every core).
  EXPECT_GT(cpu_s, 0.3 * ran_s) << done.dump();
  EXPECT_LT(cpu_s, 0.5 * ran_s * 1.3 + 0.2) << done.dump();
  EXPECT_GT(used["cpu_throttled_periods"].get<int64_t>(), 0) << done.dump();
  EXPECT_GT(used["cpu_throttled_us"].get<int64_t>(), 0) << done.dump();
  EXPECT_EQ(done["oom_killed"], false);
  // The busy processes it left went with it.
  for (int i = 0; i < 100 && AnyProcessNamed(marker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(AnyProcessNamed(marker)) << "a job's leftover processes must end with it";

  // Found by a review: nothing capped a job's processes, so one job could take every pid of the
  // node. Where the pids controller is there, each job holds at most a quarter of pid_max.
  const int64_t counted = json::parse(Cli(
      "submit --json -- sh -c 'p=$(grep -E \"^[0-9]+:pids:\" /proc/self/cgroup | cut -d: -f3); "
      "if [ -n \"$p\" ]; then cat /sys/fs/cgroup/pids$p/pids.max; "
      "else p=$(grep \"^0::\" /proc/self/cgroup | cut -d: -f3); "
      "cat /sys/fs/cgroup$p/pids.max 2>/dev/null || echo no-pids; fi'"))["id"]
                              .get<int64_t>();
  WaitFor(counted, "SUCCEEDED", 30);
  std::string pids_max = Cli("logs " + std::to_string(counted));
  while (!pids_max.empty() && pids_max.back() == '\n') pids_max.pop_back();
  const int64_t pid_max = std::stoll(Slurp("/proc/sys/kernel/pid_max"));
  if (pids_max != "no-pids") {
    EXPECT_EQ(pids_max, std::to_string(std::max<int64_t>(1024, pid_max / 4)));
  }

  // A hog past its memory limit is killed by the kernel, and the job says so.
  const int64_t hog = json::parse(Cli(
      "submit --json --memory 64M -- sh -c 'x=$(head -c 400000000 /dev/zero | tr \"\\0\" a); "
      "echo ${#x}'"))["id"].get<int64_t>();
  const json killed = WaitFor(hog, "FAILED", 30);
  EXPECT_EQ(killed["oom_killed"], true) << killed.dump();
  EXPECT_GE(killed["host_usage"]["oom_kills"].get<int64_t>(), 1) << killed.dump();
  EXPECT_NE(killed["reason"].get<std::string>().find(
                "out of memory: the kernel's OOM killer ended"),
            std::string::npos)
      << killed.dump();
  EXPECT_NE(killed["reason"].get<std::string>().find("memory limit of 64 MiB"), std::string::npos);
  EXPECT_LE(killed["host_usage"]["memory_peak_bytes"].get<int64_t>(), (64 + 1) << 20);

  // A job without limits is measured all the same, and says which figures this node lacks.
  const int64_t plain = json::parse(Cli("submit --json -- sh -c 'sleep 1.5'"))["id"].get<int64_t>();
  const json plain_done = WaitFor(plain, "SUCCEEDED");
  ASSERT_TRUE(plain_done["host_usage"].is_object()) << plain_done.dump();
  EXPECT_EQ(plain_done["host_usage"]["source"], limits);
  EXPECT_GE(plain_done["host_usage"]["cpu_wait_us"].get<int64_t>(), 0) << "sampled while it ran";
  if (limits == "cgroup-v1") {
    EXPECT_NE(plain_done["host_usage"]["missing"].dump().find("cpu_pressure_some_us"),
              std::string::npos)
        << "v1 has no per-cgroup PSI";
  }
  EXPECT_NE(Cli("show " + std::to_string(plain)).find("host_usage   from " + limits),
            std::string::npos);
}

TEST_F(UpServer, AKill9dServerReadoptsALimitedJobAndItsCgroup) {
  const std::string limits = NodeLimits(json::parse(Cli("nodes --json")));
  if (limits == "none") GTEST_SKIP() << "no usable cgroup v1 or v2 hierarchy here";
  const int64_t id = json::parse(Cli(
      "submit --json --cpus 0.5 -- sh -c 'for i in 1 2 3 4; do (while :; do :; done) & done; "
      "sleep 4; kill 0'"))["id"].get<int64_t>();
  WaitFor(id, "RUNNING");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Kill(SIGKILL);
  Start();
  const json done = WaitFor(id, "FAILED", 30);  // `kill 0` ends the script by SIGTERM
  const json& used = done["host_usage"];
  ASSERT_TRUE(used.is_object()) << done.dump();
  const double ran_s = (done["end_ms"].get<int64_t>() - done["start_ms"].get<int64_t>()) / 1000.0;
  const double cpu_s = used["cpu_usage_us"].get<int64_t>() / 1e6;
  // Still held to half a core after the restart, and counted from its start, not the restart's.
  EXPECT_GT(cpu_s, 1.0) << done.dump();
  EXPECT_LT(cpu_s, 0.5 * ran_s * 1.3 + 0.2) << done.dump();
  EXPECT_GT(used["cpu_throttled_periods"].get<int64_t>(), 0);
}

TEST_F(UpServer, BadRequestsGet4xxAndTheServerKeepsServing) {
  auto anonymous = Http("");
  auto r = anonymous.Post("/v1/jobs", R"({"argv":["true"]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  auto wrong = Http("not-a-token");
  EXPECT_EQ(wrong.Get("/v1/jobs")->status, 401);
  auto c = Http(token_);
  r = c.Post("/v1/jobs", "{not json", "application/json");
  EXPECT_EQ(r->status, 400);
  r = c.Post("/v1/jobs", R"({"argv":["true"],"gpus":"two"})", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["field"], "gpus");
  r = c.Post("/v1/jobs", R"({"argv":[]})", "application/json");
  EXPECT_EQ(json::parse(r->body)["field"], "argv");
  r = c.Post("/v1/jobs", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(c.Get("/v1/jobs/abc")->status, 400);
  EXPECT_EQ(c.Get("/v1/jobs/424242")->status, 404);
  EXPECT_EQ(c.Get("/v2/nothing")->status, 404);
  // Still serving.
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  r = c.Post("/v1/jobs", R"({"argv":["true"]})", "application/json");
  EXPECT_EQ(r->status, 201);
}

TEST_F(UpServer, UsersSeeAndCancelOnlyTheirOwnJobs) {
  {
    // Two ordinary users, added straight into the store (the server keeps running: WAL).
    auto store = store::OpenSqliteStore(dir_.string());
    ASSERT_TRUE(store.ok()) << store.error();
    ASSERT_TRUE(store.value()->PutUser("alice", controller::Sha256Hex("token-a"), false).ok());
    ASSERT_TRUE(store.value()->PutUser("bob", controller::Sha256Hex("token-b"), false).ok());
  }
  auto alice = Http("token-a");
  auto bob = Http("token-b");
  auto r = alice.Post("/v1/jobs", R"({"argv":["sleep","30"]})", "application/json");
  ASSERT_EQ(r->status, 201);
  const std::string id = std::to_string(json::parse(r->body)["id"].get<int64_t>());
  EXPECT_EQ(bob.Get("/v1/jobs/" + id)->status, 404);
  EXPECT_EQ(bob.Post("/v1/jobs/" + id + "/cancel")->status, 404);
  EXPECT_EQ(bob.Get("/v1/jobs/" + id + "/logs")->status, 404);
  EXPECT_EQ(json::parse(bob.Get("/v1/jobs")->body).size(), 0U);
  EXPECT_EQ(bob.Get("/v1/jobs?user=alice")->status, 403);
  EXPECT_EQ(json::parse(alice.Get("/v1/jobs")->body).size(), 1U);
  EXPECT_EQ(alice.Get("/v1/jobs/" + id)->status, 200);
  // The local user `gpufleet up` created is an admin: it sees everyone's jobs.
  EXPECT_EQ(json::parse(Http(token_).Get("/v1/jobs?user=all")->body).size(), 1U);
  EXPECT_EQ(bob.Delete("/v1/jobs/" + id)->status, 404);
  EXPECT_EQ(alice.Post("/v1/jobs/" + id + "/cancel")->status, 200);
  // Once it has ended (here it fails at once: alice has no account on this machine), a cancel
  // answers its state and records nothing: a loop of them grew its history and the store
  // without bound.
  json ended;
  for (int k = 0; k < 500; ++k) {
    ended = json::parse(alice.Get("/v1/jobs/" + id)->body);
    if (ended["state"] == "FAILED" || ended["state"] == "CANCELLED") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(ended["state"] == "FAILED" || ended["state"] == "CANCELLED") << ended.dump();
  const auto cancels = [](const json& job) {
    return std::count_if(job["events"].begin(), job["events"].end(),
                         [](const json& e) { return e["what"] == "cancel requested"; });
  };
  for (int k = 0; k < 3; ++k) {
    auto again = alice.Post("/v1/jobs/" + id + "/cancel");
    ASSERT_EQ(again->status, 200);
    EXPECT_EQ(json::parse(again->body)["state"], ended["state"]);
  }
  const json after = json::parse(alice.Get("/v1/jobs/" + id)->body);
  EXPECT_EQ(cancels(after), cancels(ended)) << after["events"].dump();
  EXPECT_LE(cancels(after), 1);
  // Ended, it can be removed by its owner (or an admin), not another user: then it is gone, for
  // the admin too. A job that has not ended cannot (the admin's, which runs: root has an account
  // here).
  auto running = Http(token_).Post("/v1/jobs", R"({"argv":["sleep","30"]})", "application/json");
  ASSERT_EQ(running->status, 201);
  const std::string running_id = std::to_string(json::parse(running->body)["id"].get<int64_t>());
  auto live = Http(token_).Delete("/v1/jobs/" + running_id);
  EXPECT_EQ(live->status, 409) << live->body;
  EXPECT_EQ(json::parse(live->body)["field"], "state") << live->body;
  EXPECT_EQ(Http(token_).Post("/v1/jobs/" + running_id + "/cancel")->status, 200);
  EXPECT_EQ(bob.Delete("/v1/jobs/" + id)->status, 404);
  auto removed = alice.Delete("/v1/jobs/" + id);
  ASSERT_EQ(removed->status, 200) << removed->body;
  EXPECT_EQ(json::parse(removed->body)["removed"], true) << removed->body;
  EXPECT_EQ(alice.Get("/v1/jobs/" + id)->status, 404);
  EXPECT_EQ(Http(token_).Get("/v1/jobs/" + id)->status, 404);
  EXPECT_EQ(alice.Delete("/v1/jobs/" + id)->status, 404);
}

// Security finding 8: the data directory, the store, the token and job logs are private.
TEST_F(UpServer, DataDirectoryStoreTokenAndLogsArePrivate) {
  auto c = Http(token_);
  auto r = c.Post("/v1/jobs", R"({"argv":["echo","secret output"]})", "application/json");
  ASSERT_EQ(r->status, 201);
  WaitFor(json::parse(r->body)["id"].get<int64_t>(), "SUCCEEDED");
  auto mode = [](const std::filesystem::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 0777;
  };
  EXPECT_EQ(mode(dir_), 0700U);
  EXPECT_EQ(mode(dir_ / "gpufleet.db"), 0600U);
  EXPECT_EQ(mode(dir_ / "token"), 0600U);
  int logs = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_)) {
    if (entry.path().extension() == ".log") {
      ++logs;
      EXPECT_EQ(mode(entry.path()), 0600U) << entry.path();
    }
    if (entry.is_directory()) {
      EXPECT_EQ(mode(entry.path()), 0700U) << entry.path();
    }
  }
  EXPECT_GE(logs, 1);
}

// Security finding 10: a planted `token.tmp` symlink is not followed when the token is written.
TEST_F(UpServer, APlantedTokenTmpSymlinkIsNotFollowed) {
  Kill(SIGTERM);
  const std::filesystem::path victim = dir_.string() + ".victim";
  { std::ofstream(victim) << "untouched\n"; }
  std::filesystem::remove(dir_ / "token");
  std::filesystem::create_symlink(victim, dir_ / "token.tmp");
  Start();
  EXPECT_EQ(Slurp(victim.string()), "untouched\n");
  EXPECT_FALSE(std::filesystem::is_symlink(dir_ / "token"));
  EXPECT_EQ(e2e::FirstLine((dir_ / "token").string()), token_);
  std::filesystem::remove(victim);
}

// Security finding 2: `up`'s own environment (an admin's GPUFLEET_TOKEN) never reaches a job.
TEST_F(UpServer, JobsDoNotInheritTheServersToken) {
  Kill(SIGTERM);
  ::setenv("GPUFLEET_TOKEN", "server-admin-token-value", 1);
  Start();
  ::unsetenv("GPUFLEET_TOKEN");
  auto c = Http(token_);
  auto r = c.Post("/v1/jobs", R"({"argv":["env"]})", "application/json");
  ASSERT_EQ(r->status, 201);
  const int64_t id = json::parse(r->body)["id"].get<int64_t>();
  WaitFor(id, "SUCCEEDED");
  const std::string log = c.Get("/v1/jobs/" + std::to_string(id) + "/logs")->body;
  EXPECT_NE(log.find("GPUFLEET_JOB_ID="), std::string::npos) << log;
  EXPECT_EQ(log.find("server-admin-token-value"), std::string::npos) << log;
  EXPECT_EQ(log.find(token_), std::string::npos) << log;
}

// Security findings 1, 9 and 10 through the API: a user without a Unix account here never runs
// as root, impossible gangs and out-of-range numbers are refused, priority is capped for users.
TEST_F(UpServer, HostileSubmitsAreRefusedOrFailSafely) {
  {
    auto store = store::OpenSqliteStore(dir_.string());
    ASSERT_TRUE(store.ok()) << store.error();
    ASSERT_TRUE(
        store.value()->PutUser("no-account-user", controller::Sha256Hex("token-n"), false).ok());
  }
  auto user = Http("token-n");
  auto r = user.Post("/v1/jobs", R"({"argv":["id","-u"]})", "application/json");
  ASSERT_EQ(r->status, 201);
  const json failed = WaitFor(json::parse(r->body)["id"].get<int64_t>(), "FAILED");
  const std::string reason = failed.value("reason", "");
  EXPECT_NE(reason.find("no-account-user"), std::string::npos) << reason;
  EXPECT_NE(reason.find("local"), std::string::npos) << reason;

  auto admin = Http(token_);
  for (const char* body :
       {R"({"argv":["true"],"nodes":2})", R"({"argv":["true"],"nodes":2147483648})",
        R"({"argv":["true"],"nodes":100000})"}) {
    r = admin.Post("/v1/jobs", body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body;
    EXPECT_EQ(json::parse(r->body)["field"], "nodes") << r->body;
  }
  r = admin.Post("/v1/jobs", R"({"argv":["true"],"priority":18446744073709551615})",
                 "application/json");
  EXPECT_EQ(json::parse(r->body)["field"], "priority") << r->body;
  r = user.Post("/v1/jobs", R"({"argv":["true"],"priority":10})", "application/json");
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_EQ(json::parse(r->body)["field"], "priority") << r->body;
  r = user.Post("/v1/jobs", R"({"argv":["true"],"priority":-10})", "application/json");
  EXPECT_EQ(r->status, 201) << r->body;
  r = admin.Post("/v1/jobs", R"({"argv":["true"],"priority":1000})", "application/json");
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(admin.Get("/v1/jobs?limit=0")->status, 400);
}

// Found by a review: out-of-range or malformed list and advice parameters were quietly clamped or
// ignored; each is refused, naming its field.
TEST_F(UpServer, OutOfRangeQueryParametersAreRefusedNamingTheField) {
  auto c = Http(token_);
  auto r = c.Post("/v1/jobs", R"({"argv":["true"]})", "application/json");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string id = std::to_string(json::parse(r->body)["id"].get<int64_t>());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/jobs?limit=10001", "limit"},
      {"/v1/jobs?offset=100000001", "offset"},
      {"/v1/jobs?total=yes", "total"},
      {"/v1/queue/explain?limit=100001", "limit"},
      {"/v1/jobs/" + id + "/advice?deadline_s=abc", "deadline_s"},
      {"/v1/jobs/" + id + "/advice?sizing=maybe", "sizing"},
      // deadline_s means something only to the sizing; without it, it was silently ignored.
      {"/v1/jobs/" + id + "/advice?deadline_s=3600", "deadline_s"},
      {"/v1/jobs/" + id + "/usage?limit=0", "limit"},
      {"/v1/jobs/" + id + "/usage?limit=20161", "limit"},
      {"/v1/jobs/" + id + "/usage?from_s=-1", "from_s"},
  };
  for (const auto& [path, field] : cases) {
    auto got = c.Get(path);
    ASSERT_TRUE(got) << path;
    EXPECT_EQ(got->status, 400) << path << ": " << got->body;
    EXPECT_EQ(json::parse(got->body).value("field", ""), field) << path << ": " << got->body;
  }
  EXPECT_EQ(c.Get("/v1/jobs?limit=10000&total=true")->status, 200);
  EXPECT_EQ(c.Get("/v1/jobs/" + id + "/advice?sizing=0")->status, 200);
  EXPECT_EQ(c.Get("/v1/jobs/" + id + "/advice?sizing=true&deadline_s=3600")->status, 200);
}

// Found by a review: a list of 10,000 jobs with long commands was gigabytes in the controller's
// memory. The answer stops after the job that takes it past 16 MiB and says so; the rest follows
// after its last job.
TEST_F(UpServer, AJobsListIsCutAt16MiBAndTheRestFollowsAfterItsLastJob) {
  auto c = Http(token_);
  // 16 MiB of JSON takes the Debug+ASan server more than the client's usual 5 s to make.
  c.set_read_timeout(60, 0);
  const std::string arg(120 * 1024, 'x');  // under the kernel's 128 KiB for one argument
  const std::string body = json{{"argv", {"true", arg, arg}}}.dump();
  std::set<int64_t> submitted;
  for (int i = 0; i < 75; ++i) {  // 75 x 240 KiB: 17.6 MiB of commands
    auto r = c.Post("/v1/jobs", body, "application/json");
    ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    submitted.insert(json::parse(r->body)["id"].get<int64_t>());
  }
  auto first = c.Get("/v1/jobs?limit=10000");
  ASSERT_TRUE(first && first->status == 200);
  EXPECT_EQ(first->get_header_value("X-Truncated"), "true");
  EXPECT_LT(first->body.size(), (std::size_t{16} << 20) + 300 * 1024);
  const json page1 = json::parse(first->body);
  ASSERT_GT(page1.size(), 60U);
  ASSERT_LT(page1.size(), 75U);
  auto second =
      c.Get("/v1/jobs?limit=10000&after=" + std::to_string(page1.back()["id"].get<int64_t>()));
  ASSERT_TRUE(second && second->status == 200);
  EXPECT_FALSE(second->has_header("X-Truncated"));
  std::set<int64_t> listed;
  for (const json& page : {page1, json::parse(second->body)}) {
    for (const json& j : page) EXPECT_TRUE(listed.insert(j["id"].get<int64_t>()).second);
  }
  EXPECT_EQ(listed, submitted);
}

// Security finding 10: names with terminal escapes are shown escaped by `gpufleet jobs`.
TEST_F(UpServer, JobListingsEscapeControlCharacters) {
  auto c = Http(token_);
  auto r =
      c.Post("/v1/jobs", "{\"argv\":[\"true\"],\"name\":\"evil\\u001b[2J\\u001b]0;pwned\\u0007\"}",
             "application/json");
  ASSERT_EQ(r->status, 201) << r->body;
  const int64_t id = json::parse(r->body)["id"].get<int64_t>();
  WaitFor(id, "SUCCEEDED");
  const std::string listing = Cli("jobs");
  EXPECT_EQ(listing.find('\x1b'), std::string::npos) << listing;
  EXPECT_EQ(listing.find('\x07'), std::string::npos) << listing;
  EXPECT_NE(listing.find("evil\\x1b[2J"), std::string::npos) << listing;
  const std::string shown = Cli("show " + std::to_string(id));
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  // Its history a page at a time: the latest event, then the command that fetches the older
  // ones, and that command gives only events older than the one named.
  const std::string latest = Cli("show --events-limit 1 " + std::to_string(id));
  const std::string hint =
      "(older events: gpufleet show " + std::to_string(id) + " --events-before ";
  const size_t at = latest.find(hint);
  ASSERT_NE(at, std::string::npos) << latest;
  const int64_t before = std::stoll(latest.substr(at + hint.size()));
  const json older = json::parse(
      Cli("show --json --events-before " + std::to_string(before) + " " + std::to_string(id)));
  ASSERT_FALSE(older["events"].empty()) << older.dump();
  for (const json& e : older["events"]) EXPECT_LT(e["id"].get<int64_t>(), before);
  const auto [refused, status] =
      e2e::Sh("GPUFLEET_DATA_DIR='" + dir_.string() + "' '" + GPUFLEET_BINARY +
              "' show --events-limit 0 " + std::to_string(id) + " 2>&1");
  EXPECT_NE(status, 0) << refused;
  EXPECT_NE(refused.find("--events-limit"), std::string::npos) << refused;
  // A right-to-left override would make the rest of the row read backwards (another user's
  // name seeming to be the owner): shown as its code instead.
  r = c.Post("/v1/jobs", "{\"argv\":[\"true\"],\"name\":\"a\\u202eb\\u2066c\\u061cd\"}",
             "application/json");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string bidi = Cli("jobs");
  EXPECT_EQ(bidi.find("\u202e"), std::string::npos) << bidi;
  EXPECT_NE(bidi.find("a\\u202eb\\u2066c\\u061cd"), std::string::npos) << bidi;
}

// Why jobs wait (GET /v1/queue/explain), read by another user: every position and reason, but the
// id, user, name and command only of the caller's own jobs; no token, a node's or a join token's
// gets nothing.
TEST_F(UpServer, QueueExplainShowsOthersJobsWithoutTheirIdentity) {
  const int64_t blocker = RunBlocker();  // the admin's, holding all 4 GPUs
  ASSERT_GT(blocker, 0);
  auto admin = Http(token_);
  auto r = admin.Post("/v1/jobs", R"({"argv":["sleep","1"],"gpus":2,"name":"admins-secret-name"})",
                      "application/json");
  ASSERT_TRUE(r && r->status == 201);
  const std::string bob = json::parse(Cli("users add bob --json"))["token"].get<std::string>();
  r = Http(bob).Post("/v1/jobs", R"({"argv":["sleep","1"],"gpus":1,"name":"bobs-job"})",
                     "application/json");
  ASSERT_TRUE(r && r->status == 201);
  // The controller queues a submitted job at its next step: wait until both are queued.
  auto seen = Http(bob).Get("/v1/queue/explain");
  for (int tries = 0; tries < 100 && seen && seen->status == 200 &&
                      json::parse(seen->body)["jobs"].size() < 2;
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    seen = Http(bob).Get("/v1/queue/explain");
  }
  ASSERT_TRUE(seen && seen->status == 200);
  EXPECT_EQ(seen->body.find("admins-secret-name"), std::string::npos) << seen->body;
  EXPECT_EQ(seen->body.find("\"user\":\"admin\""), std::string::npos) << seen->body;
  const json explained = json::parse(seen->body);
  ASSERT_EQ(explained["jobs"].size(), 2u) << seen->body;
  for (const json& j : explained["jobs"]) {
    EXPECT_FALSE(j["reason"].get<std::string>().empty());
    if (j["mine"].get<bool>()) {
      EXPECT_EQ(j["name"], "bobs-job");
    } else {
      EXPECT_TRUE(j["id"].is_null() && j["user"].is_null() && j["name"].is_null()) << j.dump();
    }
  }
  // Nor the ids of others' jobs in the reasons: the admin's running blocker is what both wait
  // for, and only the admin's view names it.
  const std::string blocker_named = "job " + std::to_string(blocker);
  EXPECT_EQ(seen->body.find(blocker_named), std::string::npos) << seen->body;
  EXPECT_NE(seen->body.find("another user's job"), std::string::npos) << seen->body;
  for (const json& j : explained["jobs"]) EXPECT_TRUE(j["fits_after_job"].is_null()) << j.dump();
  // The admin sees both, named.
  const std::string all = admin.Get("/v1/queue/explain")->body;
  EXPECT_NE(all.find(blocker_named), std::string::npos) << all;
  EXPECT_NE(all.find("admins-secret-name"), std::string::npos);
  EXPECT_NE(all.find("bobs-job"), std::string::npos);
  // No credential, or a join token, reads nothing.
  EXPECT_EQ(Http("").Get("/v1/queue/explain")->status, 401);
  const std::string join =
      json::parse(Cli("token create --join --ttl 10m --json"))["token"].get<std::string>();
  EXPECT_NE(Http(join).Get("/v1/queue/explain")->status, 200);
  EXPECT_NE(Http(join).Get("/v1/scale")->status, 200);
  admin.Post("/v1/jobs/" + std::to_string(blocker) + "/cancel", "", "application/json");
}

// Users, tokens and per-node credentials (security finding 7 and "Users"): an admin adds a user
// and a join token; an agent trades the join token for its node's own credential, which acts as
// that node only; revoking it and removing the user cut them off; the audit log names who did
// what.
TEST_F(UpServer, UsersTokensAndNodeCredentials) {
  const json added = json::parse(Cli("users add alice --json"));
  ASSERT_EQ(added["user"], "alice");
  const std::string alice = added["token"].get<std::string>();
  EXPECT_EQ(Http(alice).Get("/v1/users")->status, 403);
  EXPECT_EQ(Http(alice).Get("/v1/jobs")->status, 200);
  EXPECT_NE(Cli("users add alice").find("exists already"), std::string::npos);
  EXPECT_NE(Cli("users add all").find("'all' is reserved"), std::string::npos);
  EXPECT_NE(Cli("users list").find("alice"), std::string::npos);

  const json join = json::parse(Cli("token create --join --ttl 10m --json"));
  const std::string join_token = join["token"].get<std::string>();
  const std::filesystem::path agent_dir = dir_.string() + ".agent";
  std::filesystem::remove_all(agent_dir);
  const pid_t agent = e2e::Spawn(
      {GPUFLEET_BINARY, "agent", "--controller", url_, "--join-token", join_token, "--hostname",
       "gpu-j", "--data-dir", agent_dir.string(), "--listen", "127.0.0.1:0", "--simulated-gpus",
       "2", "--heartbeat", "0.2", "--allow-root-jobs"},
      agent_dir.string() + ".log");
  ASSERT_GT(agent, 0);
  auto node_state = [&] {
    auto r = Http(token_).Get("/v1/nodes");
    if (!r || r->status != 200) return std::string();
    for (const json& n : json::parse(r->body)) {
      if (n["name"] == "gpu-j") return n["state"].get<std::string>();
    }
    return std::string();
  };
  bool ready = false;
  for (int i = 0; i < 100 && !ready; ++i) {
    ready = node_state() == "READY";
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(ready) << Slurp(agent_dir.string() + ".log");
  const std::string node_token = e2e::FirstLine((agent_dir / "node-token").string());
  ASSERT_FALSE(node_token.empty());
  struct stat st {};
  ASSERT_EQ(::stat((agent_dir / "node-token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  // The node credential acts as its node only.
  EXPECT_EQ(Http(node_token).Get("/v1/jobs")->status, 403);
  auto spoof = Http(node_token)
                   .Post("/v1/agent/heartbeat", R"({"node":"other","gpus":1})", "application/json");
  EXPECT_EQ(spoof->status, 403);
  // A join token is good once.
  EXPECT_EQ(
      Http(join_token).Post("/v1/agent/join", R"({"node":"gpu-k"})", "application/json")->status,
      401);
  // A join token bound to a node name claims that name only, and stays unspent otherwise.
  const json bound = json::parse(Cli("token create --join --node gpu-m --json"));
  EXPECT_EQ(bound["node"], "gpu-m");
  const std::string bound_token = bound["token"].get<std::string>();
  auto elsewhere =
      Http(bound_token).Post("/v1/agent/join", R"({"node":"gpu-n"})", "application/json");
  EXPECT_EQ(elsewhere->status, 403);
  EXPECT_NE(elsewhere->body.find("for node gpu-m only"), std::string::npos) << elsewhere->body;
  EXPECT_EQ(
      Http(bound_token).Post("/v1/agent/join", R"({"node":"gpu-m"})", "application/json")->status,
      201);
  EXPECT_NE(Cli("token create --join --node 'bad name' --json").find("node"),
            std::string::npos);
  // Revoked, the node's agent is refused.
  EXPECT_NE(Cli("nodes revoke gpu-j").find("revoked"), std::string::npos);
  EXPECT_EQ(Http(node_token)
                .Post("/v1/agent/heartbeat", R"({"node":"gpu-j","gpus":2})", "application/json")
                ->status,
            401);
  kill(agent, SIGKILL);
  waitpid(agent, nullptr, 0);
  // A removed user's token stops working.
  auto job = Http(alice).Post("/v1/jobs", R"({"argv":["sleep","0"],"gpus":1,"name":"alices-job"})",
                              "application/json");
  ASSERT_TRUE(job && job->status == 201) << (job ? job->body : "no answer");
  const std::string job_path =
      "/v1/jobs/" + std::to_string(json::parse(job->body)["id"].get<int64_t>());
  EXPECT_NE(Cli("users remove alice").find("removed"), std::string::npos);
  EXPECT_EQ(Http(alice).Get("/v1/jobs")->status, 401);
  // Her name still owns that job, so a new account of that name is refused (it would see her
  // job) unless the admin says it is her again.
  const std::string refused = Cli("users add alice");
  EXPECT_NE(refused.find("still owns 1 job"), std::string::npos) << refused;
  EXPECT_NE(refused.find("--reclaim"), std::string::npos) << refused;
  EXPECT_EQ(Http(token_)
                .Post("/v1/users", R"({"name":"alice","reclaim":"yes"})", "application/json")
                ->status,
            400);
  const std::string back = json::parse(Cli("users add alice --reclaim --json"))["token"];
  EXPECT_EQ(Http(back).Get(job_path)->status, 200);
  const json audit = json::parse(Http(token_).Get("/v1/audit")->body);
  std::set<std::string> seen;
  for (const json& e : audit)
    seen.insert(e["what"].get<std::string>() + "/" + e["actor"].get<std::string>());
  EXPECT_TRUE(seen.count("node joined/join:" + join["id"].get<std::string>())) << audit.dump();
  bool added_by_admin = false;
  for (const json& e : audit)
    added_by_admin |= e["what"] == "user added" && !e["actor"].get<std::string>().empty();
  EXPECT_TRUE(added_by_admin) << audit.dump();
  EXPECT_TRUE(std::any_of(audit.begin(), audit.end(), [](const json& e) {
    return e["what"] == "user added" && e["detail"] == "alice (reclaiming 1 job(s))";
  })) << audit.dump();
  // In pages: the latest one, then the one before it, as X-More-Before says.
  ASSERT_GE(audit.size(), 2u);
  auto page = Http(token_).Get("/v1/audit?limit=1");
  ASSERT_EQ(json::parse(page->body).size(), 1u);
  EXPECT_EQ(json::parse(page->body)[0]["id"], audit.back()["id"]);
  const std::string before = page->get_header_value("X-More-Before");
  ASSERT_FALSE(before.empty());
  const json older = json::parse(Http(token_).Get("/v1/audit?limit=1&before=" + before)->body);
  ASSERT_EQ(older.size(), 1u);
  EXPECT_EQ(older[0]["id"], audit[audit.size() - 2]["id"]);
  EXPECT_EQ(Http(token_).Get("/v1/audit?limit=0")->status, 400);
  EXPECT_EQ(Http(token_).Get("/v1/audit?before=x")->status, 400);
  std::filesystem::remove_all(agent_dir);
}

// Found by a review: nothing kept a second server off a data directory in use, so two `up`s on
// one SQLite store both led and launched the same jobs.
TEST_F(UpServer, ASecondServerOnTheSameDataDirectoryIsRefused) {
  auto [out, rc] = e2e::Sh("'" + std::string(GPUFLEET_BINARY) + "' up --data-dir '" +
                           dir_.string() + "' --listen 127.0.0.1:0 --simulated-gpus 1 2>&1");
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("in use by another gpufleet process (pid " + std::to_string(pid_) + ")"),
            std::string::npos)
      << out;
  EXPECT_EQ(Http(token_).Get("/v1/jobs")->status, 200) << "the first one serves on";
}

class TokenLifetimeServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--user-token-lifetime", "2h"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
  static int64_t WallMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// User tokens used to work for good. Now an admin may give one an end (--ttl), and the
// controller may cap every new one (--user-token-lifetime); an ended token opens neither the
// API nor the dashboard.
TEST_F(TokenLifetimeServer, UserTokensEndAtTheirTimeAndTheCapBoundsNewOnes) {
  const int64_t before = WallMs();
  const json carol = json::parse(Cli("users add carol --json"));
  const int64_t after = WallMs();
  // Made without --ttl: exactly the cap.
  EXPECT_GE(carol["expires_ms"].get<int64_t>(), before + 2 * 3600 * 1000);
  EXPECT_LE(carol["expires_ms"].get<int64_t>(), after + 2 * 3600 * 1000);
  const std::string over = Cli("token create --user carol --ttl 3h");
  EXPECT_NE(over.find("ttl_s"), std::string::npos) << over;
  EXPECT_NE(over.find("--user-token-lifetime"), std::string::npos) << over;
  auto zero = Http(token_).Post("/v1/tokens", R"({"user":"carol","ttl_s":0})", "application/json");
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->status, 400);
  EXPECT_EQ(json::parse(zero->body)["field"], "ttl_s") << zero->body;
  EXPECT_NE(Cli("token create --user carol --ttl soon").find("--ttl 'soon'"), std::string::npos);

  const json brief = json::parse(Cli("token create --user carol --ttl 3s --json"));
  const std::string token = brief["token"].get<std::string>();
  const int64_t ends = brief["expires_ms"].get<int64_t>();
  ASSERT_GT(ends, WallMs());
  const std::string login = json{{"token", token}}.dump();
  auto in = Http("").Post("/ui/login", login, "application/json");
  ASSERT_TRUE(in);
  EXPECT_EQ(in->status, 200) << in->body;
  EXPECT_EQ(Http(token).Get("/v1/jobs")->status, 200);  // and now remembered (Store::CredentialOf)
  const std::string listed = Cli("token list");
  EXPECT_NE(listed.find(brief["id"].get<std::string>()), std::string::npos) << listed;
  EXPECT_EQ(listed.find("(expired)"), std::string::npos) << listed;

  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::max<int64_t>(0, ends - WallMs()) + 50));
  auto refused = Http(token).Get("/v1/jobs");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401) << refused->body;
  auto late = Http("").Post("/ui/login", login, "application/json");
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 401) << late->body;
  EXPECT_NE(late->body.find("expired"), std::string::npos) << late->body;
  EXPECT_NE(Cli("token list").find("(expired)"), std::string::npos);
  // Carol's other token is untouched.
  EXPECT_EQ(Http(carol["token"].get<std::string>()).Get("/v1/jobs")->status, 200);
}

// Found by a review: jobs stayed in the agent's session, so a job could open the controlling
// terminal of whoever started `up` and type commands into their root shell (TIOCSTI). Each job
// now runs in a session of its own, with no controlling terminal.
TEST_F(UpServer, AJobRunsInASessionOfItsOwnWithoutATerminal) {
  auto session_of = [](const std::string& stat) {
    // Fields after the command (in parentheses): state, ppid, pgrp, session.
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));
    std::string state, ppid, pgrp, session;
    rest >> state >> ppid >> pgrp >> session;
    return session;
  };
  const std::string server_session = session_of(Slurp("/proc/" + std::to_string(pid_) + "/stat"));
  ASSERT_FALSE(server_session.empty());
  const int64_t id =
      json::parse(Cli("submit --json -- sh -c 'cat /proc/self/stat; "
                      "(exec 3</dev/tty) 2>/dev/null && echo HAS-TTY || echo NO-TTY'"))["id"]
          .get<int64_t>();
  WaitFor(id, "SUCCEEDED");
  const std::string log = Cli("logs " + std::to_string(id));
  EXPECT_NE(session_of(log.substr(0, log.find('\n'))), server_session) << log;
  EXPECT_NE(log.find("NO-TTY"), std::string::npos) << log;
}

// `up` made its local user an admin with the token in <data-dir>/token at every start, so a
// restart brought back a token an admin had revoked, and made admin again a local user removed
// and re-added without admin rights. Now it writes nothing then; only an absent token file (the
// machine owner's way back in) makes a new admin token, audited.
TEST_F(UpServer, ARestartBringsBackNoRevokedTokenAndNoAdminRights) {
  std::string local = "uid" + std::to_string(::geteuid());
  for (const json& u : json::parse(Http(token_).Get("/v1/users")->body)) {
    if (u["admin"].get<bool>()) local = u["name"].get<std::string>();
  }
  const std::string admin2 =
      json::parse(Cli("users add admin2 --admin --json"))["token"].get<std::string>();
  const std::string first_token = token_;
  const std::string id = store::TokenId(controller::Sha256Hex(first_token));
  ASSERT_EQ(Http(admin2).Delete("/v1/tokens/" + id)->status, 200);
  ASSERT_EQ(Http(first_token).Get("/v1/jobs")->status, 401);
  Kill(SIGTERM);
  Start();
  EXPECT_EQ(token_, first_token);  // the file is left as it was
  EXPECT_EQ(Http(first_token).Get("/v1/jobs")->status, 401) << "a revoked token came back";
  EXPECT_NE(Slurp(dir_.string() + ".up.log").find("no longer works"), std::string::npos);
  // The local user removed, then added again without admin rights, stays without them.
  ASSERT_EQ(Http(admin2).Delete("/v1/users/" + local)->status, 200);
  auto again = Http(admin2).Post("/v1/users", json{{"name", local}}.dump(), "application/json");
  ASSERT_EQ(again->status, 201) << again->body;
  const std::string plain = json::parse(again->body)["token"].get<std::string>();
  Kill(SIGTERM);
  Start();
  EXPECT_EQ(Http(plain).Get("/v1/jobs")->status, 200);
  EXPECT_EQ(Http(plain).Get("/v1/users")->status, 403) << "made admin by a restart";
  // Whoever may delete the token file gets a new admin token for the local user, audited.
  std::filesystem::remove(dir_ / "token");
  Kill(SIGTERM);
  Start();
  EXPECT_NE(token_, first_token);
  EXPECT_EQ(Http(token_).Get("/v1/users")->status, 200);
  const json audit = json::parse(Http(admin2).Get("/v1/audit")->body);
  EXPECT_TRUE(std::any_of(audit.begin(), audit.end(), [&](const json& e) {
    return e["what"] == "user added" &&
           e["detail"].get<std::string>().find(local + " (admin, at startup: a new token") == 0;
  })) << audit.dump();
}

// Found by a review: right after a controller restart, a node restored from the store is
// UNKNOWN until its agent beats again, and a join token could claim its name in that window
// (an agent that used an admin token has no node credential to protect it).
TEST_F(UpServer, AJoinCannotTakeANodeWhoseAgentMayStillReturnAfterARestart) {
  const std::filesystem::path agent_dir = dir_.string() + ".agent";
  std::filesystem::remove_all(agent_dir);
  const pid_t agent = e2e::Spawn(
      {GPUFLEET_BINARY, "agent", "--controller", url_, "--token-file", (dir_ / "token").string(),
       "--hostname", "gpu-a", "--data-dir", agent_dir.string(), "--listen", "127.0.0.1:0",
       "--simulated-gpus", "1", "--heartbeat", "0.2", "--allow-root-jobs"},
      agent_dir.string() + ".log");
  ASSERT_GT(agent, 0);
  auto state_of = [&](const std::string& name) {
    auto r = Http(token_).Get("/v1/nodes");
    if (!r || r->status != 200) return std::string();
    for (const json& n : json::parse(r->body)) {
      if (n["name"] == name) return n["state"].get<std::string>();
    }
    return std::string();
  };
  for (int i = 0; i < 100 && state_of("gpu-a") != "READY"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(state_of("gpu-a"), "READY") << Slurp(agent_dir.string() + ".log");
  kill(agent, SIGKILL);
  waitpid(agent, nullptr, 0);
  Kill(SIGTERM);
  Start();
  ASSERT_EQ(state_of("gpu-a"), "UNKNOWN");
  const std::string join =
      json::parse(Cli("token create --join --ttl 10m --json"))["token"].get<std::string>();
  auto taken = Http(join).Post("/v1/agent/join", R"({"node":"gpu-a"})", "application/json");
  EXPECT_EQ(taken->status, 403) << taken->body;
  EXPECT_NE(taken->body.find("may still return"), std::string::npos) << taken->body;
  std::filesystem::remove_all(agent_dir);
}

// Issue 19: the controller held its lock through a whole pass of launches, so a SIGTERM waited
// minutes for the queue to drain. Now Stop ends the launching at once: with 10,000 jobs queued
// and jobs ending all the time, `up` exits within 2 s, and every job it started is re-adopted.
TEST_F(UpServer, StopsWithinTwoSecondsUnderALaunchStormAndReadoptsWhatItStarted) {
  // The jobs queue behind a blocker (submits are fast while nothing launches), then start.
  auto c = Http(token_);
  const int64_t blocker = RunBlocker();
  ASSERT_GT(blocker, 0);
  constexpr int kClients = 4, kPerClient = 2500;
  std::vector<std::thread> clients;
  std::atomic<int> acknowledged{0};
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&] {
      auto client = Http(token_);
      const json body = {{"argv", {"sleep", "1"}}, {"gpu_share", 0.05}};
      for (int i = 0; i < kPerClient; ++i) {
        auto answer = client.Post("/v1/jobs", body.dump(), "application/json");
        if (answer && answer->status == 201) ++acknowledged;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(acknowledged.load(), kClients * kPerClient);
  ASSERT_EQ(c.Post("/v1/jobs/" + std::to_string(blocker) + "/cancel")->status, 200);
  // Let launches (and the ends of the first jobs) run for a moment, then stop it amid them: with
  // jobs seen running. Under ASan, launches are slow and most started jobs wait SCHEDULED; jobs
  // of 0.2 s were seen RUNNING 0 to 2 at a time, so a stop could find none and the test prove
  // nothing (it failed so once in CI). Jobs of 1 s are seen RUNNING 16 to 23 at a time there.
  const auto count = [&](const char* state) -> std::size_t {
    auto q = Http(token_).Get(std::string("/v1/jobs?user=all&limit=100&state=") + state);
    return q && q->status == 200 ? json::parse(q->body).size() : 0;
  };
  ASSERT_TRUE(
      e2e::WaitUntil([&] { return count("SUCCEEDED") >= 20 && count("RUNNING") >= 5; }, 60));
  const auto before = std::chrono::steady_clock::now();
  kill(pid_, SIGTERM);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid_, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - before < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  ASSERT_EQ(done, pid_) << "still running after 30 s";
  pid_ = -1;
#if defined(__SANITIZE_ADDRESS__)
  constexpr double kBoundS = 6;  // a sanitized exit also checks every allocation for leaks
#else
  constexpr double kBoundS = 2;
#endif
  EXPECT_LT(took_s, kBoundS) << "SIGTERM to exit";
  std::printf("SIGTERM to exit under the launch storm: %.3f s\n", took_s);
  // What the store says ran when it stopped must be re-adopted, not lost or started again.
  std::vector<int64_t> running;
  {
    auto store = store::OpenSqliteStore(dir_.string());
    ASSERT_TRUE(store.ok()) << store.error();
    store::JobFilter filter;
    filter.state = store::JobState::kRunning;
    filter.limit = 100000;
    auto listed = store.value()->ListJobs(filter);
    ASSERT_TRUE(listed.ok()) << listed.error();
    for (const store::JobRecord& j : listed.value()) running.push_back(j.id);
  }
  ASSERT_FALSE(running.empty()) << "stopped while nothing ran: the test proves nothing";
  Start();
  for (int64_t id : running) {
    const json j = WaitFor(id, "SUCCEEDED", 30);
    EXPECT_EQ(j.value("epoch", 0), 1) << j.dump();  // re-adopted, never started a second time
  }
}

// Issue 19: a cancel waited for the whole pass of launches (the lock was held through them). Now
// launches run outside the lock: cancels are answered while a pass starts 500 jobs.
TEST_F(UpServer, CancelsAreAnsweredWhileAPassLaunchesFiveHundredJobs) {
  auto c = Http(token_);
  const int64_t blocker = RunBlocker();
  ASSERT_GT(blocker, 0);
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(c.Post("/v1/jobs", R"({"argv":["sleep","30"],"gpu_share":0.005})", "application/json")
                  ->status,
              201);
  }
  std::vector<int64_t> to_cancel;
  for (int i = 0; i < 5; ++i) {
    auto r = c.Post("/v1/jobs", R"({"argv":["sleep","1"],"gpus":4})", "application/json");
    to_cancel.push_back(json::parse(r->body)["id"].get<int64_t>());
  }
  ASSERT_EQ(c.Post("/v1/jobs/" + std::to_string(blocker) + "/cancel")->status, 200);
  // The next pass places the 500 at once and launches them; cancel others meanwhile, each
  // answer timed, with how many jobs ran when it came.
  std::vector<std::pair<double, int>> timed;  // latency (ms), jobs recorded RUNNING after it
  auto other = Http(token_);
  for (int64_t id : to_cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    auto answer = other.Post("/v1/jobs/" + std::to_string(id) + "/cancel");
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(answer && answer->status == 200);
    // Jobs recorded RUNNING so far (each launch commits its own).
    auto listed = other.Get("/v1/jobs?user=all&state=RUNNING&limit=10000");
    timed.emplace_back(ms, static_cast<int>(json::parse(listed->body).size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string shown;
  std::vector<double> during;
  for (const auto& [ms, running] : timed) {
    shown += std::to_string(ms) + " ms (" + std::to_string(running) + " running) ";
    if (running < 500) during.push_back(ms);
  }
  ASSERT_GE(during.size(), 2U) << "the launches were over before the cancels: " << shown;
#if defined(__SANITIZE_ADDRESS__)
  constexpr double kBoundMs = 300;  // the sanitizers make every fork and request slower
#else
  constexpr double kBoundMs = 100;
#endif
  // The median within the bound, and no answer waiting for the launches as a whole (a lock held
  // across 500 launches, the bug this guards against, takes seconds). One answer alone may pass
  // the bound on a loaded machine: under ASan with four tests at once, one came in 302 ms.
  std::vector<double> sorted = during;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_LT(sorted[(sorted.size() - 1) / 2], kBoundMs) << shown;
  for (double ms : during) EXPECT_LT(ms, 4 * kBoundMs) << shown;
  std::printf("cancel latencies during the launches: %s\n", shown.c_str());
  for (int64_t id : to_cancel) EXPECT_EQ(WaitFor(id, "CANCELLED")["state"], "CANCELLED");
}

TEST_F(UpServer, AcknowledgedJobsSurviveKill9) {
  auto c = Http(token_);
  std::vector<int64_t> acknowledged;
  for (int i = 0; i < 40; ++i) {
    auto r = c.Post("/v1/jobs", R"({"argv":["true"]})", "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201);
    acknowledged.push_back(json::parse(r->body)["id"].get<int64_t>());
  }
  Kill(SIGKILL);
  Start();
  auto after = Http(token_);
  // Every acknowledged job exists, once, and ends: those that had started are LOST (never run
  // twice), the rest run after the restart.
  for (int64_t id : acknowledged) {
    json job;
    for (int t = 0; t < 500; ++t) {
      auto r = after.Get("/v1/jobs/" + std::to_string(id));
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << "acknowledged job " << id << " is missing";
      job = json::parse(r->body);
      if (job["state"] == "SUCCEEDED" || job["state"] == "LOST") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(job["state"] == "SUCCEEDED" || job["state"] == "LOST") << job.dump();
  }
  const json all = json::parse(after.Get("/v1/jobs?user=all&limit=1000")->body);
  EXPECT_EQ(all.size(), acknowledged.size()) << "no job twice, none invented";
}

TEST_F(UpServer, RunningJobsSurviveKill9AndAreReAdopted) {
  // One job still running across the restart, one that ends while the server is down.
  const json slow =
      json::parse(Cli("submit --json -- sh -c 'echo first; sleep 1.5; echo second; exit 4'"));
  const json quick = json::parse(Cli("submit --json -- sh -c 'sleep 0.3; exit 6'"));
  WaitFor(slow["id"].get<int64_t>(), "RUNNING");
  WaitFor(quick["id"].get<int64_t>(), "RUNNING");
  Kill(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Start();
  const json q = WaitFor(quick["id"].get<int64_t>(), "FAILED");
  EXPECT_EQ(q["exit_code"], 6) << "the exit status recorded while nobody watched";
  const json s = WaitFor(slow["id"].get<int64_t>(), "FAILED");
  EXPECT_EQ(s["exit_code"], 4);
  const std::string log = Cli("logs " + std::to_string(slow["id"].get<int64_t>()));
  EXPECT_NE(log.find("first\nsecond"), std::string::npos) << "the log continued: " << log;
  // Cancelling a re-adopted job works too.
  const json sleeper = json::parse(Cli("submit --json -- sleep 60"));
  WaitFor(sleeper["id"].get<int64_t>(), "RUNNING");
  Kill(SIGKILL);
  Start();
  Cli("cancel " + std::to_string(sleeper["id"].get<int64_t>()));
  WaitFor(sleeper["id"].get<int64_t>(), "CANCELLED");
}

TEST_F(UpServer, ConcurrentSubmitsThroughRepeatedKill9) {
  // 8 clients submit 1,000 jobs while the server is killed -9 three times. A client retries with
  // the same client token until it gets 201. Afterwards: every acknowledged job exists, none
  // twice, none invented, and all of them end.
  constexpr int kClients = 8, kPerClient = 125;
  std::mutex mutex;
  std::vector<int64_t> acknowledged;
  std::atomic<bool> failed{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      httplib::Client c(url_);
      c.set_bearer_token_auth(token_);
      c.set_connection_timeout(1, 0);
      for (int i = 0; i < kPerClient; ++i) {
        const json body = {{"argv", {"true"}},
                           {"client_token", "c" + std::to_string(t) + "-" + std::to_string(i)}};
        for (int attempt = 0;; ++attempt) {
          auto r = c.Post("/v1/jobs", body.dump(), "application/json");
          if (r && r->status == 201) {
            std::lock_guard<std::mutex> lock(mutex);
            acknowledged.push_back(json::parse(r->body)["id"].get<int64_t>());
            break;
          }
          if (attempt > 500) {
            failed = true;
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    });
  }
  for (int kill = 0; kill < 3; ++kill) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Kill(SIGKILL);
    Start();
  }
  for (std::thread& t : clients) t.join();
  ASSERT_FALSE(failed) << "a client never got its submit acknowledged";
  ASSERT_EQ(acknowledged.size(), static_cast<std::size_t>(kClients * kPerClient));
  std::set<int64_t> distinct(acknowledged.begin(), acknowledged.end());
  EXPECT_EQ(distinct.size(), acknowledged.size()) << "an acknowledged id came back twice";
  auto c = Http(token_);
  json all;
  int ended = 0, lost = 0;
  for (int wait = 0; wait < 600; ++wait) {
    auto listed = c.Get("/v1/jobs?user=all&limit=5000");
    if (!listed || listed->status != 200) {  // a busy (sanitized) server may answer late
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    all = json::parse(listed->body);
    ended = lost = 0;
    for (const json& j : all) {
      const std::string state = j["state"];
      ended += state == "SUCCEEDED" || state == "LOST";
      lost += state == "LOST";
    }
    if (ended == static_cast<int>(all.size())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(all.size(), distinct.size()) << "jobs in the store: none twice, none invented";
  for (const json& j : all) EXPECT_TRUE(distinct.count(j["id"].get<int64_t>())) << j.dump();
  EXPECT_EQ(ended, static_cast<int>(all.size())) << "every job ends";
  for (const json& j : all) {
    if (j["state"] != "SUCCEEDED" && j["state"] != "LOST") {
      ADD_FAILURE() << "not ended: " << j.dump() << "\nevents: "
                    << Http(token_).Get("/v1/jobs/" + std::to_string(j["id"].get<int64_t>()))->body
                    << "\n"
                    << Slurp(dir_.string() + ".up.log").substr(0, 4000);
    }
  }
  // Only a job caught between SCHEDULED and RUNNING at a kill can be LOST.
  EXPECT_LE(lost, 3);
}

// A drained GPU takes no new share job either, though a share job already there keeps running:
// its free half is held too (it was placed on before).
TEST_F(UpServer, ADrainedGpuTakesNoNewShareOfItWhileAShareJobRunsThere) {
  auto id_of = [](const std::string& out) { return json::parse(out)["id"].get<int64_t>(); };
  const json first = WaitFor(id_of(Cli("submit --json --gpu-share 0.5 -- sleep 60")), "RUNNING");
  const int gpu = first["gpu_indices"][0].get<int>();
  WaitFor(id_of(Cli("submit --json --gpus 3 -- sleep 60")), "RUNNING");  // every other GPU
  ASSERT_NE(Cli("drain local:" + std::to_string(gpu) + " --reason test").find("drained"),
            std::string::npos);
  const int64_t second = id_of(Cli("submit --json --gpu-share 0.5 -- sleep 60"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(json::parse(Cli("show --json " + std::to_string(second)))["state"], "PENDING");
  EXPECT_EQ(json::parse(Cli("show --json " + std::to_string(first["id"].get<int64_t>())))["state"],
            "RUNNING")
      << "an admin drain lets running jobs finish";
  Cli("undrain local:" + std::to_string(gpu));
  const json placed = WaitFor(second, "RUNNING");
  EXPECT_EQ(placed["gpu_indices"][0].get<int>(), gpu);
}

// `up` on a fake NVML whose 4 GPUs have minor numbers 10-13 (not their indices), with device
// nodes for them in a directory of the test's (char 242:10-13, a major no driver here holds: an
// open that the cgroup lets through fails with ENXIO, one it denies with EPERM).
class ConfinedGpuServer : public e2e::FakeNvmlUpServer {
 protected:
  void SetUp() override {
    devices_ =
        std::filesystem::temp_directory_path() / ("gpufleet-devices-" + std::to_string(::getpid()));
    std::filesystem::create_directories(devices_);
    for (int g = 0; g < 4; ++g) {
      const std::string node = (devices_ / ("nvidia" + std::to_string(10 + g))).string();
      made_nodes_ = made_nodes_ && ::mknod(node.c_str(), S_IFCHR | 0666, makedev(242, 10 + g)) == 0;
    }
    setenv("GPUFLEET_NVIDIA_DEVICE_DIR", devices_.c_str(), 1);
    FakeNvmlUpServer::SetUp();
  }
  void TearDown() override {
    FakeNvmlUpServer::TearDown();
    unsetenv("GPUFLEET_NVIDIA_DEVICE_DIR");
    std::filesystem::remove_all(devices_);
  }
  std::string Scenario() const override {
    std::string gpus;
    for (int g = 0; g < 4; ++g) {
      gpus += std::string(g == 0 ? "" : ",") + R"({"minor_number": )" + std::to_string(10 + g) +
              R"(, "timeline": [{"t": 0, "gpu_util": 0, "memory_used_mib": 0}]})";
    }
    return R"({"gpus": [)" + gpus + "]}";
  }
  std::filesystem::path devices_;
  bool made_nodes_ = true;
};

// Found by a review: a job was kept to its GPUs by CUDA_VISIBLE_DEVICES alone, so a job that
// ignores it used (and read the memory of) every other job's GPU on the node. Now its devices
// cgroup denies it the GPUs it was not given, by their device nodes (minor numbers, not indices).
TEST_F(ConfinedGpuServer, AJobCanOpenItsOwnGpuAndNoOther) {
  if (!made_nodes_) GTEST_SKIP() << "mknod is not permitted here";
  const json nodes = json::parse(Cli("nodes --json"));
  if (NodeLimits(nodes) != "cgroup-v1" || !std::filesystem::exists("/sys/fs/cgroup/devices")) {
    GTEST_SKIP() << "no cgroup v1 devices hierarchy here (" << NodeLimits(nodes)
                 << "): GPUs are not confined, so that is not tested";
  }
  std::string script = "for n in 10 11 12 13; do (exec 3<" + devices_.string() +
                       "/nvidia$n) 2>&1;"
                       " done; echo done";
  auto submit = [&](const std::string& gpus) {
    return json::parse(Cli("submit --json --gpus " + gpus + " -- sh -c '" + script + "'"))["id"]
        .get<int64_t>();
  };
  const int64_t one = submit("1");
  const json done = WaitFor(one, "SUCCEEDED", 30);
  const int mine = 10 + done["gpu_indices"][0].get<int>();
  const std::string log = Cli("logs " + std::to_string(one));
  ASSERT_NE(log.find("done"), std::string::npos) << log;
  for (int n = 10; n <= 13; ++n) {
    const std::string line = "nvidia" + std::to_string(n) + ": ";
    const std::string expect = n == mine ? "No such device" : "Operation not permitted";
    const std::size_t at = log.find(line);
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_EQ(log.compare(at + line.size(), expect.size(), expect), 0)
        << "GPU with minor " << n << " (the job's: " << mine << "): " << log;
  }
  // A job given every GPU is denied none of them.
  const int64_t all = submit("4");
  WaitFor(all, "SUCCEEDED", 30);
  const std::string all_log = Cli("logs " + std::to_string(all));
  EXPECT_EQ(all_log.find("Operation not permitted"), std::string::npos) << all_log;
  EXPECT_NE(all_log.find("No such device"), std::string::npos) << all_log;
}

// `up` on a fake NVML (tests/fake_nvml) with 4 H100s; GPUs 0 and 1 raise XID 79 ("fallen off
// the bus", critical and sticky) 5 s after the server starts.
class HealthServer : public e2e::FakeNvmlUpServer {
 protected:
  void SetUp() override {
    FakeNvmlUpServer::SetUp();
    started_ = std::chrono::steady_clock::now();
  }
  std::string Scenario() const override {
    std::string gpus;
    for (int g = 0; g < 4; ++g) {
      gpus += std::string(g == 0 ? "" : ",") +
              R"({"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559,
                  "timeline": [{"t": 0, "gpu_util": 50, "memory_used_mib": 1000}]})";
    }
    return R"({"gpus": [)" + gpus + R"(], "faults": {"xid_events": [
        {"gpu": 0, "at": 5, "xid": 79}, {"gpu": 1, "at": 5, "xid": 79}]}})";
  }
  json Node() {
    const json nodes = json::parse(Cli("nodes --json"));
    return nodes.is_array() && !nodes.empty() ? nodes[0] : json::object();
  }
  std::chrono::steady_clock::time_point started_;
};

// Issue 12, section 6: an unhealthy GPU is drained, its jobs stopped (requeued if restartable,
// FAILED otherwise), and nothing is placed there until an admin undrains it.
TEST_F(HealthServer, AnXidDrainsTheGpuRequeuesItsRestartableJobAndPlacesNothingThereAgain) {
  auto id_of = [](const std::string& out) { return json::parse(out)["id"].get<int64_t>(); };
  const int64_t a = id_of(Cli("submit --json --restartable -- sleep 60"));
  const json a_run = WaitFor(a, "RUNNING");
  const int64_t b = id_of(Cli("submit --json -- sleep 60"));
  const json b_run = WaitFor(b, "RUNNING");
  ASSERT_EQ(a_run["gpu_indices"], json::array({0})) << "a whole GPU: the lowest free one";
  ASSERT_EQ(b_run["gpu_indices"], json::array({1}));
  ASSERT_LT(std::chrono::steady_clock::now() - started_, std::chrono::seconds(4))
      << "the jobs must run before the XIDs at second 5";
  // A: requeued onto a healthy GPU. B: not restartable, FAILED with the health reason.
  const json b_failed = WaitFor(b, "FAILED", 20);
  EXPECT_NE(b_failed["reason"].get<std::string>().find("GPU 1 of node local became unhealthy"),
            std::string::npos)
      << b_failed.dump();
  EXPECT_NE(b_failed["reason"].get<std::string>().find("XID 79"), std::string::npos);
  json a_again;
  for (int i = 0; i < 400; ++i) {
    a_again = json::parse(Cli("show --json " + std::to_string(a)));
    if (a_again["state"] == "RUNNING" && a_again["epoch"].get<int>() >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(a_again["state"], "RUNNING") << a_again.dump();
  EXPECT_EQ(a_again["epoch"], 2) << "placed a second time";
  const int a_gpu = a_again["gpu_indices"][0].get<int>();
  EXPECT_TRUE(a_gpu == 2 || a_gpu == 3) << a_again.dump();
  // The node shows both GPUs drained for health, and the metric counts them.
  json node = Node();
  ASSERT_EQ(node["drained"].size(), 2U) << node.dump();
  EXPECT_EQ(node["drained"][0]["gpu"], 0);
  EXPECT_EQ(node["drained"][0]["cause"], "health");
  EXPECT_NE(node["drained"][0]["reason"].get<std::string>().find("XID 79"), std::string::npos);
  EXPECT_NE(Cli("nodes").find("GPU 1 drained (health): XID 79"), std::string::npos) << Cli("nodes");
  auto metrics = Http("").Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("gpufleet_controller_gpus_drained{cause=\"health\"} 2"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("gpufleet_controller_jobs_stopped_unhealthy_gpu_total 2"),
            std::string::npos)
      << metrics->body;
  // One healthy GPU is left: C takes it; D waits, never on the drained GPUs.
  const int64_t c = id_of(Cli("submit --json -- sleep 60"));
  const json c_run = WaitFor(c, "RUNNING");
  EXPECT_EQ(c_run["gpu_indices"][0].get<int>(), 5 - a_gpu);
  const int64_t d = id_of(Cli("submit --json -- sleep 60"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(json::parse(Cli("show --json " + std::to_string(d)))["state"], "PENDING");
  // Users may not undrain; an admin may, and D runs on the GPU undrained.
  const std::string alice = json::parse(Cli("users add alice --json"))["token"];
  EXPECT_EQ(Http(alice).Post("/v1/nodes/local/undrain", "{}", "application/json")->status, 403);
  EXPECT_EQ(Http(alice)
                .Post("/v1/nodes/local/drain", R"({"gpu":2,"reason":"mine"})", "application/json")
                ->status,
            403);
  EXPECT_EQ(Http(token_)
                .Post("/v1/nodes/local/drain", R"({"gpu":2,"reason":"a\u0007b"})",
                      "application/json")
                ->status,
            400)
      << "control characters in a reason";
  EXPECT_NE(Cli("undrain local:9").find("gpu: node local has GPUs 0..3"), std::string::npos);
  EXPECT_NE(Cli("undrain nowhere:0").find("no node nowhere"), std::string::npos);
  EXPECT_NE(Cli("undrain local:0").find("GPUs [0] undrained"), std::string::npos);
  const json d_run = WaitFor(d, "RUNNING");
  EXPECT_EQ(d_run["gpu_indices"], json::array({0}));
  // An admin drain: shown with who and why; the job running there goes on.
  EXPECT_NE(Cli("drain local:0 --reason 'fan replacement'").find("GPUs [0] drained"),
            std::string::npos);
  node = Node();
  bool found = false;
  for (const json& g : node["drained"]) {
    if (g["gpu"] == 0) {
      found = true;
      EXPECT_EQ(g["cause"], "admin");
      EXPECT_EQ(g["reason"], "fan replacement");
      EXPECT_EQ(g["by"], "root");
    }
  }
  EXPECT_TRUE(found) << node.dump();
  EXPECT_EQ(json::parse(Cli("show --json " + std::to_string(d)))["state"], "RUNNING");
  EXPECT_NE(Cli("drain local:0").find("--reason is required"), std::string::npos);
  // The admin drain outlives a restart of the server.
  Kill(SIGTERM);
  Start();
  node = Node();
  found = false;
  for (const json& g : node["drained"]) found = found || (g["gpu"] == 0 && g["cause"] == "admin");
  EXPECT_TRUE(found) << node.dump();
}

// Issue 12, section 4: run times learnt from the store's finished jobs, live. QSSF ranks by them.
// Elastic jobs: resizes are checkpoint-restarts a real process sees.
class ElasticServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--elastic-grow-after", "1"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
};

TEST_F(ElasticServer, AnElasticJobGrowsIntoIdleGpusAndShrinksForANewJobRestartingEachTime) {
  auto id_of = [](const std::string& out) { return json::parse(out)["id"].get<int64_t>(); };
  const std::filesystem::path runs = std::filesystem::temp_directory_path() /
                                     ("gpufleet-elastic-" + std::to_string(::getpid()) + ".txt");
  std::filesystem::remove(runs);
  auto lines = [&] {
    std::vector<std::string> out;
    std::ifstream in(runs);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  // 4 GPUs: A holds 2 for 3 s.
  const int64_t a = id_of(Cli("submit --json --gpus 2 -- sleep 3"));
  WaitFor(a, "RUNNING");
  // E takes 1 to 4 GPUs; every run appends "WORLD_SIZE RESTART_COUNT GPUS" and checkpoints
  // (here: exits 0) on SIGTERM.
  const std::string body = "echo \"$WORLD_SIZE $GPUFLEET_RESTART_COUNT $CUDA_VISIBLE_DEVICES\" >> " +
                           runs.string() + "; trap \"exit 0\" TERM; while :; do sleep 0.1; done";
  const std::string submitted = Cli("submit --json --gpus 1..4 -- sh -c '" + body + "'");
  const int64_t e = id_of(submitted);
  ASSERT_TRUE(e2e::WaitUntil([&] { return lines().size() >= 1; }, 15));
  EXPECT_EQ(lines()[0].substr(0, 4), "2 0 ") << "started at the 2 GPUs free";
  // A ends: E grows into its 2 GPUs, restarting with WORLD_SIZE 4.
  ASSERT_TRUE(e2e::WaitUntil([&] { return lines().size() >= 2; }, 20)) << Cli("show " + std::to_string(e));
  EXPECT_EQ(lines()[1], "4 1 0,1,2,3");
  // B asks 2 of the 4 GPUs E holds: E gives back all above its min and restarts with what B
  // leaves (WORLD_SIZE 2); nobody waits for E to end and nobody is preempted.
  const int64_t b = id_of(Cli("submit --json --gpus 2 -- sleep 30"));
  WaitFor(b, "RUNNING", 20);
  ASSERT_TRUE(e2e::WaitUntil([&] { return lines().size() >= 3; }, 20));
  EXPECT_EQ(lines()[2].substr(0, 4), "2 2 ");
  const json shown = json::parse(Cli("show --json " + std::to_string(e)));
  std::string reasons;
  for (const json& ev : shown["events"]) reasons += ev.dump() + "\n";
  EXPECT_NE(reasons.find("resizing: growing from 2 GPUs toward 4"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("resizing: shrinking from 4 GPUs toward 1"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("resized: growing"), std::string::npos) << reasons;  // its end
  EXPECT_EQ(reasons.find("preempted by"), std::string::npos) << reasons;
  EXPECT_EQ(shown["state"], "RUNNING");
  EXPECT_EQ(shown["min_gpus"], 1);
  EXPECT_EQ(shown["gpus"], 4);
  EXPECT_NE(Cli("jobs").find("1..4"), std::string::npos) << Cli("jobs");
  EXPECT_EQ(shown["gpu_indices"].size(), 2U);
  // Bad ranges are refused with the field named.
  EXPECT_NE(Cli("submit --gpus 3..2 -- true").find("--gpus"), std::string::npos);
  auto r = Http(token_).Post("/v1/jobs", R"({"argv":["true"],"gpus":2,"min_gpus":2})",
                             "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("min_gpus"), std::string::npos) << r->body;
  Cli("cancel " + std::to_string(b));
  Cli("cancel " + std::to_string(e));
  WaitFor(e, "CANCELLED", 20);
  std::filesystem::remove(runs);
}

// Found by a review: a node kept every job's log for good (each up to --log-limit), so one user's
// many chatty jobs could fill its disk. Once the controller holds the whole log and the job is
// settled, the node's copy goes; `gpufleet logs` still shows it.
TEST_F(UpServer, AShippedLogLeavesTheNodeOnceItsJobIsSettled) {
  const int64_t id = json::parse(Cli("submit --json -- sh -c 'seq 1 20000'"))["id"].get<int64_t>();
  const json done = WaitFor(id, "SUCCEEDED", 30);
  const std::filesystem::path node_log =
      dir_ / "node" / "logs" /
      (std::to_string(id) + "-" + std::to_string(done["epoch"].get<int64_t>()) + ".log");
  for (int i = 0; i < 100 && std::filesystem::exists(node_log); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(std::filesystem::exists(node_log)) << node_log;
  const std::string log = Cli("logs " + std::to_string(id));
  EXPECT_NE(log.find("\n20000\n"), std::string::npos) << log.size();
}

// Job history retention through `up`: restarted with --job-retention 1h, it removes at once the
// jobs that ended over an hour ago, with their history and logs; a newer one stays.
TEST_F(UpServer, JobRetentionRemovesJobsEndedLongerAgoWithTheirLogs) {
  const auto run = [this](const std::string& word) {
    const int64_t id = json::parse(Cli("submit --json -- echo " + word))["id"].get<int64_t>();
    WaitFor(id, "SUCCEEDED", 30);
    const controller::JobLogs logs(dir_.string());
    for (int i = 0; i < 200 && logs.Size(id, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    EXPECT_GT(logs.Size(id, 0), 0) << word;
    return id;
  };
  const int64_t old_job = run("old");
  const int64_t new_job = run("new");
  Kill(SIGTERM);
  {
    // The first ended two hours ago, as far as the store knows.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "gpufleet.db").string().c_str(), &db), SQLITE_OK);
    const std::string age =
        "UPDATE jobs SET end_ms = end_ms - 7200000 WHERE id = " + std::to_string(old_job);
    EXPECT_EQ(sqlite3_exec(db, age.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  up_args_.insert(up_args_.end(), {"--job-retention", "1h"});
  Start();
  auto c = Http(token_);
  int status = 0;
  for (int i = 0; i < 400 && status != 404; ++i) {
    status = c.Get("/v1/jobs/" + std::to_string(old_job))->status;
    if (status != 404) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(status, 404) << "the job that ended two hours ago is still there";
  EXPECT_EQ(c.Get("/v1/jobs/" + std::to_string(new_job))->status, 200);
  const controller::JobLogs logs(dir_.string());
  EXPECT_EQ(logs.Size(old_job, 0), 0);
  EXPECT_FALSE(logs.RemovedNote(old_job));
  EXPECT_GT(logs.Size(new_job, 0), 0);
  EXPECT_NE(Cli("logs " + std::to_string(new_job)).find("new"), std::string::npos);
  EXPECT_NE(Slurp(dir_.string() + ".up.log").find("job retention: removed 1 jobs"),
            std::string::npos)
      << Slurp(dir_.string() + ".up.log");
}

// Found by a review: a removal note left by an earlier job of the same id (a store made anew
// beside this data dir) was shown as a live job's log, naming another user and their quota.
TEST_F(UpServer, ALiveJobsLogNeverShowsARemovalNote) {
  const int64_t id = json::parse(Cli("submit --json -- sleep 30"))["id"].get<int64_t>();
  WaitFor(id, "RUNNING", 30);
  {
    std::filesystem::create_directories(dir_ / "logs");
    std::ofstream note(dir_ / "logs" / (std::to_string(id) + ".removed"));
    note << "[gpufleet] this job's log (9 bytes) was removed: over user alice's log quota\n";
  }
  EXPECT_EQ(Cli("logs " + std::to_string(id)).find("alice"), std::string::npos);
  auto c = Http(token_);
  const auto res = c.Get("/v1/jobs/" + std::to_string(id) + "/logs");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body.find("alice"), std::string::npos) << res->body;
  EXPECT_FALSE(res->has_header("X-Log-Removed"));
  Cli("cancel " + std::to_string(id));
}

// Found by a review: a node keeps a log the controller did not take whole. When the controller's
// store was made anew and numbered jobs from 1 again, the new job of that id and epoch appended
// to the kept log, was made its owner, and shipped it as its own output.
TEST_F(UpServer, AJobNeverGetsANodeLogLeftByAnEarlierJobOfItsId) {
  const int64_t first = json::parse(Cli("submit --json -- echo first"))["id"].get<int64_t>();
  WaitFor(first, "SUCCEEDED", 30);
  const int64_t next = first + 1;
  std::filesystem::create_directories(dir_ / "node" / "logs");
  std::ofstream(dir_ / "node" / "logs" / (std::to_string(next) + "-1.log"))
      << "the earlier job's secret\n";
  const int64_t id = json::parse(Cli("submit --json -- echo mine"))["id"].get<int64_t>();
  ASSERT_EQ(id, next);
  WaitFor(id, "SUCCEEDED", 30);
  const std::string log = Cli("logs " + std::to_string(id));
  EXPECT_EQ(log.find("secret"), std::string::npos) << log;
  EXPECT_NE(log.find("mine"), std::string::npos) << log;
}

// Found by a review: a node's agent matched the jobs it recorded by id and epoch alone. With the
// store made anew beside the node's data (jobs numbered from 1 again), the new job 1 was taken
// for the old job 1 the node still recorded: it never ran, and got the old job's end.
TEST_F(UpServer, AStoreMadeAnewRunsItsOwnJobOneNotTheOneTheNodeRecorded) {
  const int64_t old_job = json::parse(Cli("submit --json -- sleep 300"))["id"].get<int64_t>();
  ASSERT_EQ(old_job, 1);
  WaitFor(old_job, "RUNNING", 30);
  Kill(SIGTERM);  // the node keeps its record of job 1 (stopped with the server, not settled)
  for (const char* file : {"gpufleet.db", "gpufleet.db-wal", "gpufleet.db-shm", "token"}) {
    std::filesystem::remove(dir_ / file);
  }
  Start();
  const int64_t id = json::parse(Cli("submit --json -- echo mine"))["id"].get<int64_t>();
  ASSERT_EQ(id, 1) << "a store made anew numbers jobs from 1 again";
  const json done = WaitFor(id, "SUCCEEDED", 30);
  EXPECT_NE(Cli("logs 1").find("mine"), std::string::npos) << done.dump();
  EXPECT_NE(Slurp(dir_.string() + ".up.log").find("came from another store"), std::string::npos);
}

// A job's output could set the clipboard (OSC 52) of whoever read its log on a terminal, or
// rewrite their screen. On a terminal `gpufleet logs` shows escape sequences as text; into a
// pipe, or with --raw, the log goes as it is.
TEST_F(UpServer, LogsOnATerminalShowEscapeSequencesInsteadOfObeyingThem) {
  const int64_t id =
      json::parse(Cli("submit --json -- printf 'ok \\033]52;c;ZXZpbA==\\007 done\\n'"))["id"]
          .get<int64_t>();
  WaitFor(id, "SUCCEEDED", 30);
  const std::string cli = "GPUFLEET_DATA_DIR='" + dir_.string() + "' '" + GPUFLEET_BINARY +
                          "' logs " + std::to_string(id);
  // `script` gives the command a terminal and copies what it printed.
  const std::string on_tty = Sh("script -qec \"" + cli + "\" /dev/null").first;
  EXPECT_NE(on_tty.find("ok \\x1b]52;c;ZXZpbA==\\x07 done"), std::string::npos) << on_tty;
  EXPECT_EQ(on_tty.find('\x1b'), std::string::npos) << on_tty;
  const std::string raw = Sh("script -qec \"" + cli + " --raw\" /dev/null").first;
  EXPECT_NE(raw.find("ok \x1b]52;c;ZXZpbA==\x07 done"), std::string::npos) << raw;
  EXPECT_NE(Cli("logs " + std::to_string(id)).find("ok \x1b]52;c;ZXZpbA==\x07 done"),
            std::string::npos)
      << "into a pipe, as it is";
}

class CappedServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--max-jobs-per-user", "3", "--run-as-map", "bob=nobody"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
};

// Found by a review: nothing bounded how many jobs one user could queue, and each waiting job is
// held whole in the controller's memory (argv and env up to 256 KiB each): 100,000 submits of
// 500 KiB took 50 GB. Now a user holds at most --max-jobs-per-user live jobs.
TEST_F(CappedServer, AUserHoldsAtMostTheCapOfLiveJobsAndAdminsAreNotHeld) {
  const std::string bob = json::parse(Cli("users add bob --json"))["token"].get<std::string>();
  // (bob runs as nobody, whose home is not there: in / instead.)
  std::vector<int64_t> ids;
  const std::string first = R"({"argv":["sleep","60"],"gpus":4,"workdir":"/","client_token":"b1"})";
  for (int k = 0; k < 3; ++k) {
    auto r = Http(bob).Post("/v1/jobs",
                            k == 0 ? first : R"({"argv":["sleep","60"],"gpus":4,"workdir":"/"})",
                            "application/json");
    ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    ids.push_back(json::parse(r->body)["id"].get<int64_t>());
  }
  auto refused = Http(bob).Post("/v1/jobs", R"({"argv":["sleep","60"],"gpus":1,"workdir":"/"})",
                                "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403) << refused->body;
  EXPECT_EQ(json::parse(refused->body)["field"], "jobs") << refused->body;
  EXPECT_NE(refused->body.find("--max-jobs-per-user"), std::string::npos) << refused->body;
  // A retry of a submit already added (its answer lost) is that job, not one over the cap.
  auto retried = Http(bob).Post("/v1/jobs", first, "application/json");
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, 201) << retried->body;
  EXPECT_EQ(json::parse(retried->body)["id"], ids.front()) << retried->body;
  // Another user, and the admin, are not held by bob's jobs.
  const std::string carol = json::parse(Cli("users add carol --json"))["token"].get<std::string>();
  auto other = Http(carol).Post("/v1/jobs", R"({"argv":["true"],"gpus":1})", "application/json");
  EXPECT_TRUE(other && other->status == 201) << (other ? other->body : "no answer");
  auto admin = Http(token_).Post("/v1/jobs", R"({"argv":["true"],"gpus":1})", "application/json");
  EXPECT_TRUE(admin && admin->status == 201);
  // Once one of bob's jobs ends, bob may submit again.
  Cli("cancel " + std::to_string(ids.back()));
  WaitFor(ids.back(), "CANCELLED", 20);
  auto again = Http(bob).Post("/v1/jobs", R"({"argv":["true"],"gpus":1})", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 201) << again->body;
  for (int64_t id : ids) Cli("cancel " + std::to_string(id));
}

class WriteRateServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--user-write-rate", "0.5",       "--user-write-burst", "2",
                     "--run-as-map",      "bob=nobody"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
};

// Found by a review: a user's loop of submits and cancels (each a synced store write and an event
// to every dashboard) got the store's whole write rate; other users' submits waited behind it.
// Now each user but admins has a bucket of writing requests; past it they are answered 429 before
// their body is read, and the CLI waits the Retry-After out.
TEST_F(WriteRateServer, AUsersWritesAreLimitedAndTheCliWaitsItsTurn) {
  const std::string bob = json::parse(Cli("users add bob --json"))["token"].get<std::string>();
  const std::string job = R"({"argv":["true"],"gpus":1,"workdir":"/"})";
  for (int k = 0; k < 2; ++k) {
    auto r = Http(bob).Post("/v1/jobs", job, "application/json");
    ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
  }
  auto refused = Http(bob).Post("/v1/jobs", job, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429) << refused->body;
  EXPECT_NE(refused->body.find("--user-write-rate"), std::string::npos) << refused->body;
  const std::string retry_after = refused->get_header_value("Retry-After");
  EXPECT_TRUE(retry_after == "1" || retry_after == "2") << retry_after;
  // Reads are not writes, and another user and the admin have their own budgets.
  EXPECT_EQ(Http(bob).Get("/v1/jobs")->status, 200);
  const std::string carol = json::parse(Cli("users add carol --json"))["token"].get<std::string>();
  auto other = Http(carol).Post("/v1/jobs", job, "application/json");
  EXPECT_TRUE(other && other->status == 201) << (other ? other->body : "no answer");
  for (int k = 0; k < 5; ++k) {
    auto admin = Http(token_).Post("/v1/jobs", R"({"argv":["true"],"gpus":1})", "application/json");
    EXPECT_TRUE(admin && admin->status == 201) << k;
  }
  // The CLI waits for its turn: the submit lands, after the 2 s a token takes at 0.5 a second.
  const auto started = std::chrono::steady_clock::now();
  const std::string said = e2e::Sh("GPUFLEET_SERVER='" + url_ + "' GPUFLEET_TOKEN='" + bob + "' '" +
                                   GPUFLEET_BINARY + "' submit --workdir / -- true 2>&1")
                               .first;
  EXPECT_NE(said.find("submitted job"), std::string::npos) << said;
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(900)) << said;
}

class QssfServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--policy", "qssf", "--run-as-map", "bob=nobody"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
};

TEST_F(QssfServer, PredictionsLearntFromFinishedJobsRankTheQueueAndSurviveARestart) {
  auto id_of = [](const std::string& out) { return json::parse(out)["id"].get<int64_t>(); };
  // History: three short and three long runs of root's jobs.
  std::vector<int64_t> history;
  for (int i = 0; i < 3; ++i) {
    history.push_back(id_of(Cli("submit --json --name quick -- sleep 0.2")));
    history.push_back(id_of(Cli("submit --json --name slow -- sleep 1.5")));
  }
  for (int64_t id : history) WaitFor(id, "SUCCEEDED", 30);
  // The GPUs busy; the long job queued before the short one, each on all 4 GPUs.
  const int64_t blocker = RunBlocker();
  ASSERT_GT(blocker, 0);
  const int64_t slow = id_of(Cli("submit --json --gpus 4 --name slow -- sleep 1.5"));
  const int64_t quick = id_of(Cli("submit --json --gpus 4 --name quick -- sleep 0.2"));
  auto check = [&](bool after_restart) {
    const json s = json::parse(Cli("show --json " + std::to_string(slow)));
    const json q = json::parse(Cli("show --json " + std::to_string(quick)));
    ASSERT_EQ(s["state"], "PENDING") << s.dump();
    EXPECT_EQ(s["prediction_basis"], "user+name") << s.dump();  // 4 GPUs: not the 1-GPU runs
    EXPECT_GT(s["predicted_runtime_s"].get<double>(), 1.0) << s.dump();
    EXPECT_LT(s["predicted_runtime_s"].get<double>(), 4.0) << s.dump();
    EXPECT_LT(q["predicted_runtime_s"].get<double>(), 1.0) << q.dump();
    EXPECT_GE(q["predictor"]["learnt_jobs"].get<int>(), 6) << q.dump();
    if (after_restart) {
      // The history replayed: each job predicted from those that ended before it, then learnt.
      // (Before the restart, how many were scored depends on how the six met the passes: those
      // queued before any had ended were predicted from the prior, which is not scored.)
      EXPECT_GE(q["predictor"]["checked_jobs"].get<int>(), 3) << q.dump();
      EXPECT_GT(q["predictor"]["mean_absolute_error_s"].get<double>(), 0) << q.dump();
    }
    EXPECT_NE(Cli("show " + std::to_string(quick)).find("predicted_runtime_s"), std::string::npos)
        << (after_restart ? "after the restart" : "");
  };
  check(false);
  // Another user's job, predicted from root's jobs: bob sees the basis, not their run times.
  const std::string bob = json::parse(Cli("users add bob --json"))["token"].get<std::string>();
  auto posted = Http(bob).Post("/v1/jobs", R"({"argv":["true"],"gpus":4,"name":"quick"})",
                               "application/json");
  ASSERT_TRUE(posted && posted->status == 201);
  const std::string bobs = std::to_string(json::parse(posted->body)["id"].get<int64_t>());
  json seen;
  for (int tries = 0; tries < 100 && !seen.contains("prediction_basis"); ++tries) {
    if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // queued next step
    auto got = Http(bob).Get("/v1/jobs/" + bobs);
    ASSERT_TRUE(got && got->status == 200);
    seen = json::parse(got->body);
  }
  EXPECT_EQ(seen["prediction_basis"], "queue") << seen.dump();
  EXPECT_EQ(seen["predicted_runtime_s"], nullptr) << seen.dump();
  EXPECT_FALSE(seen.contains("prediction_samples") || seen.contains("predictor")) << seen.dump();
  const json as_admin = json::parse(Cli("show --json " + bobs));
  EXPECT_GT(as_admin["predicted_runtime_s"].get<double>(), 0) << as_admin.dump();
  // Nor when room appears for it, from root's blocker's predicted end: only the admin sees that.
  const auto fits = [&](const std::string& token) {
    const json all = json::parse(Http(token).Get("/v1/queue/explain")->body);
    for (const json& j : all["jobs"]) {
      if (j["mine"] == true && j["id"].is_number() &&
          std::to_string(j["id"].get<int64_t>()) == bobs)
        return j;
    }
    return json();
  };
  const json bobs_explained = fits(bob);
  EXPECT_TRUE(bobs_explained["fits_after_basis"].is_null()) << bobs_explained.dump();
  EXPECT_TRUE(bobs_explained["fits_after_s"].is_null()) << bobs_explained.dump();
  EXPECT_EQ(bobs_explained["reason"].get<std::string>().find("expected in"), std::string::npos)
      << "nor in the reason's words: " << bobs_explained.dump();
  const json admins_explained = json::parse(Http(token_).Get("/v1/queue/explain")->body);
  bool admin_sees_when = false;
  for (const json& j : admins_explained["jobs"]) {
    if (j["id"].is_number() && std::to_string(j["id"].get<int64_t>()) == bobs) {
      admin_sees_when = j["fits_after_s"].is_number();
      // So the user's nulls above hide an estimated end, not a search that never happened.
      EXPECT_EQ(j["fits_after_basis"], "estimate") << j.dump();
    }
  }
  EXPECT_TRUE(admin_sees_when) << admins_explained.dump();
  Cli("cancel " + bobs);
  // A restart learns the same history again from the store.
  Kill(SIGTERM);
  Start();
  check(true);
  // Once the GPUs free up, the shorter prediction goes first though it was submitted second.
  Cli("cancel " + std::to_string(blocker));
  const json q_done = WaitFor(quick, "SUCCEEDED", 30);
  const json s_done = WaitFor(slow, "SUCCEEDED", 30);
  EXPECT_LT(q_done["start_ms"].get<int64_t>(), s_done["start_ms"].get<int64_t>());
  EXPECT_EQ(s_done["predicted_runtime_s"], nullptr) << "an ended job has no prediction";
  // Bob's own job, predicted from a mean of root's run times (no history of his own), holds the
  // GPUs his second job waits for: he is told what it waits on, but not when it is expected to
  // end, as his own job's view hides that prediction too, nor whether that end is an estimate
  // (against his own time limit, that would say whether the mean is shorter).
  auto bobs_job = [&](const std::string& argv) {
    auto r = Http(bob).Post("/v1/jobs",
                            R"({"argv":)" + argv + R"(,"gpus":4,"name":"long","workdir":"/"})",
                            "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<int64_t>() : 0;
  };
  const int64_t holder = bobs_job(R"(["sleep","60"])");
  WaitFor(holder, "RUNNING", 30);
  const int64_t waiter = bobs_job(R"(["true"])");
  json bobs_wait;
  std::string explained;
  for (int tries = 0; tries < 100 && !bobs_wait.contains("fits_after_job"); ++tries) {
    if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    explained = Http(bob).Get("/v1/queue/explain")->body;
    const json all = json::parse(explained);
    for (const json& j : all["jobs"]) {
      if (j["id"] == waiter && j["fits_after_job"].is_number()) bobs_wait = j;
    }
  }
  EXPECT_EQ(bobs_wait["fits_after_job"], holder) << explained;
  EXPECT_TRUE(bobs_wait["fits_after_basis"].is_null()) << bobs_wait.dump();
  EXPECT_TRUE(bobs_wait["fits_after_s"].is_null()) << bobs_wait.dump();
  EXPECT_EQ(bobs_wait["reason"].get<std::string>().find("expected in"), std::string::npos)
      << bobs_wait.dump();
  Cli("cancel " + std::to_string(holder));
  Cli("cancel " + std::to_string(waiter));
}

class FairShareServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--policy", "fairshare"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
  // Submits `n` copies of `job`; their ids.
  std::vector<int64_t> SubmitAll(const json& job, int n) {
    std::vector<int64_t> ids;
    for (int i = 0; i < n; ++i) {
      auto r = Http(token_).Post("/v1/jobs", job.dump(), "application/json");
      EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
      if (r && r->status == 201) ids.push_back(json::parse(r->body)["id"].get<int64_t>());
    }
    return ids;
  }
  // The job as `show` sees it (with its events); {} while the server does not answer.
  json JobOf(int64_t id) {
    auto r = Http(token_).Get("/v1/jobs/" + std::to_string(id));
    return r && r->status == 200 ? json::parse(r->body) : json::object();
  }
  // Whether every job of `ids` runs a second time (RUNNING, epoch 2) within `seconds`.
  bool AllRunAgain(const std::vector<int64_t>& ids, double seconds) {
    return e2e::WaitUntil(
        [&] {
          for (int64_t id : ids) {
            const json j = JobOf(id);
            if (j.value("state", "") != "RUNNING" || j.value("epoch", 0) != 2) return false;
          }
          return true;
        },
        seconds);
  }
  // Whether every job of `ids` is in `state` within `seconds`.
  bool AllReach(const std::vector<int64_t>& ids, const std::string& state, double seconds) {
    return e2e::WaitUntil(
        [&] {
          for (int64_t id : ids) {
            if (JobOf(id).value("state", "") != state) return false;
          }
          return true;
        },
        seconds);
  }
};

TEST_F(FairShareServer, PreemptsWithGraceThenRequeuesAndRunsTheVictimsAgain) {
  // Queue team-a fills the 4 GPUs; team-b (same weight: a quota of 2 GPUs) asks for 2. Fair share
  // preempts two team-a jobs: SIGTERM (they note it, as a checkpoint would), then they end
  // PREEMPTED, wait again, and run again (epoch 2) once team-b's job is done. team-b's job starts
  // only after its victims ended: no GPU is ever given twice.
  auto c = Http(token_);
  const json a_job = {
      {"argv", {"sh", "-c", "trap 'echo got-term; exit 0' TERM; echo run; sleep 60 & wait"}},
      {"queue", "team-a"}};
  const std::vector<int64_t> a_ids = SubmitAll(a_job, 4);
  ASSERT_TRUE(AllReach(a_ids, "RUNNING", 10));
  for (int64_t id : a_ids) {  // the trap is set (RUNNING means only exec'd)
    const std::string log = (dir_ / "logs" / (std::to_string(id) + ".log")).string();
    ASSERT_TRUE(e2e::WaitUntil([&] { return Slurp(log).find("run\n") != std::string::npos; }, 10))
        << log;
  }
  const json b_job = {
      {"argv", {"sh", "-c", "echo b-ran; sleep 1"}}, {"queue", "team-b"}, {"gpus", 2}};
  const std::vector<int64_t> b_ids = SubmitAll(b_job, 1);
  ASSERT_EQ(b_ids.size(), 1U);
  const int64_t b_id = b_ids[0];
  ASSERT_TRUE(e2e::WaitUntil([&] { return JobOf(b_id)["state"] == "SUCCEEDED"; }, 20))
      << JobOf(b_id).dump();

  // Exactly two victims, each stopped with SIGTERM, recorded PREEMPTED, then queued again.
  std::vector<int64_t> victims;
  int64_t last_victim_end_ms = 0;
  for (int64_t id : a_ids) {
    const json j = JobOf(id);
    bool preempted = false, requeued = false;
    for (const json& e : j["events"]) {
      if (e["what"] == "RUNNING->PREEMPTED") {
        preempted = true;
        last_victim_end_ms = std::max(last_victim_end_ms, e["time_ms"].get<int64_t>());
      }
      if (e["what"] == "PREEMPTED->PENDING") requeued = true;
    }
    if (!preempted) continue;
    victims.push_back(id);
    EXPECT_TRUE(requeued) << j.dump();
  }
  ASSERT_EQ(victims.size(), 2U);
  int64_t b_scheduled_ms = 0;
  const json b = JobOf(b_id);
  for (const json& e : b["events"]) {
    if (e["what"] == "PENDING->SCHEDULED") b_scheduled_ms = e["time_ms"].get<int64_t>();
  }
  EXPECT_GE(b_scheduled_ms, last_victim_end_ms)
      << "placed only once its victims had ended: " << b.dump();

  // With team-b done, the victims run again, under a new epoch.
  ASSERT_TRUE(AllRunAgain(victims, 20));
  // The first run's output is kept beside the new one's, as <id>.log.attempt1 (moved aside when
  // the second run starts, so only once it runs).
  for (int64_t id : victims) {
    const std::string first_run =
        Slurp((dir_ / "logs" / (std::to_string(id) + ".log.attempt1")).string());
    EXPECT_NE(first_run.find("run\ngot-term"), std::string::npos)
        << "the victim had its SIGTERM, to checkpoint: " << first_run;
  }
  const std::string metrics = c.Get("/metrics")->body;
  EXPECT_NE(metrics.find("gpufleet_controller_jobs_preempted_total 2"), std::string::npos)
      << metrics;
  for (int64_t id : a_ids) c.Post("/v1/jobs/" + std::to_string(id) + "/cancel");
}

TEST_F(FairShareServer, AVictimAlreadyStoppingIsWaitedForNotDoubleBooked) {
  // Every team-a job is cancelled (and ignores SIGTERM, so each holds its GPU for the 1 s grace)
  // just before team-b's job arrives. Fair share would reclaim a GPU from team-a, whose jobs are
  // all stopping already: team-b's job must wait for a GPU to be free, not be placed on one still
  // in use (which stopped the server with a failed check before).
  auto c = Http(token_);
  const json a_job = {{"argv", {"sh", "-c", "trap '' TERM; echo ignoring-term; sleep 60"}},
                      {"queue", "team-a"}};
  const std::vector<int64_t> a_ids = SubmitAll(a_job, 4);
  ASSERT_TRUE(AllReach(a_ids, "RUNNING", 10));
  // RUNNING means exec'd, not that the shell has set its trap yet: a SIGTERM before it ends that
  // job at once (launches got fast enough for this to happen).
  for (int64_t id : a_ids) {
    const std::string log = (dir_ / "logs" / (std::to_string(id) + ".log")).string();
    ASSERT_TRUE(e2e::WaitUntil([&] { return Slurp(log).find("ignoring-term") != std::string::npos; },
                               10))
        << log;
  }
  for (int64_t id : a_ids) c.Post("/v1/jobs/" + std::to_string(id) + "/cancel");
  const json b_job = {{"argv", {"true"}}, {"queue", "team-b"}};
  const std::vector<int64_t> b_ids = SubmitAll(b_job, 1);
  ASSERT_EQ(b_ids.size(), 1U);
  const int64_t b_id = b_ids[0];
  ASSERT_TRUE(e2e::WaitUntil([&] { return JobOf(b_id).value("state", "") == "SUCCEEDED"; }, 20))
      << JobOf(b_id).dump() << "\n"
      << Slurp(dir_.string() + ".up.log");
  for (int64_t id : a_ids) {
    EXPECT_TRUE(e2e::WaitUntil([&] { return JobOf(id).value("state", "") == "CANCELLED"; }, 10))
        << JobOf(id).dump();
  }
  EXPECT_EQ(c.Get("/healthz")->status, 200);
}

TEST_F(FairShareServer, AControllerKilledDuringTheGracePeriodStillEndsTheVictimPreempted) {
  // On SIGTERM the victims take 0.7 s to checkpoint, then exit 0. In that time team-b's job is
  // cancelled (so nothing would preempt them again) and the server is killed -9. The restarted
  // one must finish the preemption from its store (PREEMPTED, queued again, run again), not take
  // the victims' exit 0 after a checkpoint for success.
  auto c = Http(token_);
  const json a_job = {
      {"argv", {"sh", "-c", "trap 'sleep 0.7; exit 0' TERM; echo trapped; sleep 60 & wait"}},
      {"queue", "team-a"}};
  const std::vector<int64_t> a_ids = SubmitAll(a_job, 4);
  ASSERT_TRUE(AllReach(a_ids, "RUNNING", 10));
  for (int64_t id : a_ids) {  // the trap is set (RUNNING means only exec'd)
    const std::string log = (dir_ / "logs" / (std::to_string(id) + ".log")).string();
    ASSERT_TRUE(
        e2e::WaitUntil([&] { return Slurp(log).find("trapped") != std::string::npos; }, 10))
        << log;
  }
  const json b_job = {{"argv", {"true"}}, {"queue", "team-b"}, {"gpus", 2}};
  const std::vector<int64_t> b_ids = SubmitAll(b_job, 1);
  ASSERT_EQ(b_ids.size(), 1U);
  const int64_t b_id = b_ids[0];
  std::vector<int64_t> victims;
  ASSERT_TRUE(e2e::WaitUntil(
      [&] {
        victims.clear();
        for (int64_t id : a_ids) {
          if (JobOf(id).value("reason", "").rfind("preempting", 0) == 0) victims.push_back(id);
        }
        return victims.size() == 2;
      },
      5));
  ASSERT_EQ(c.Post("/v1/jobs/" + std::to_string(b_id) + "/cancel")->status, 200);
  Kill(SIGKILL);  // inside the victims' checkpoint time
  Start();
  ASSERT_TRUE(AllRunAgain(victims, 20)) << JobOf(victims[0]).dump();
  EXPECT_EQ(JobOf(b_id)["state"], "CANCELLED");
  for (int64_t id : victims) {
    const json j = JobOf(id);
    std::string history;
    for (const json& e : j["events"]) history += e["what"].get<std::string>() + " ";
    EXPECT_NE(history.find("RUNNING->PREEMPTED PREEMPTED->PENDING"), std::string::npos) << history;
    EXPECT_EQ(history.find("FAILED"), std::string::npos) << history;
    EXPECT_EQ(history.find("SUCCEEDED"), std::string::npos) << history;
  }
  for (int64_t id : a_ids) c.Post("/v1/jobs/" + std::to_string(id) + "/cancel");
}

class FullDisk : public UpServer {
 protected:
  void SetUp() override {
    tmpfs_kib = 2048;
    UpServer::SetUp();
    tmpfs_kib = 0;
  }
};

TEST_F(FullDisk, SubmitsFailClearlyAndNothingCommittedIsLost) {
  auto c = Http(token_);
  // Each job carries 16 KiB of arguments, so the 2 MiB data directory fills within a few dozen
  // jobs.
  const json body = {{"argv", {"true", std::string(16 * 1024, 'x')}}};
  std::vector<int64_t> acknowledged;
  std::string refusal;
  for (int i = 0; i < 200 && refusal.empty(); ++i) {
    auto r = c.Post("/v1/jobs", body.dump(), "application/json");
    ASSERT_TRUE(r);
    if (r->status == 201) {
      acknowledged.push_back(json::parse(r->body)["id"].get<int64_t>());
    } else {
      EXPECT_EQ(r->status, 503);
      refusal = json::parse(r->body)["error"].get<std::string>();
    }
  }
  ASSERT_FALSE(refusal.empty()) << "the disk never filled";
  EXPECT_NE(refusal.find("disk is full"), std::string::npos) << refusal;
  // What the store said names the data directory's path: that goes to the controller's log only.
  EXPECT_EQ(refusal.find(dir_.string()), std::string::npos) << refusal;
  EXPECT_GT(acknowledged.size(), 5U);
  // Still serving, and every acknowledged job is there.
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  for (int64_t id : acknowledged) {
    auto r = c.Get("/v1/jobs/" + std::to_string(id));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << "acknowledged job " << id << " is missing";
  }
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// Live, a policy that orders jobs by their true run times has nothing to order by (issue 12): it
// is refused at start with a reason, not run on time limits as if they were run times.
TEST(UpCommand, RefusesAnOracleQueuePolicyLive) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpufleet-oracle-" + std::to_string(::getpid()));
  auto [out, rc] = e2e::Sh("GPUFLEET_DATA_DIR='" + dir.string() + "' '" + GPUFLEET_BINARY +
                           "' up --simulated-gpus 1 --listen 127.0.0.1:0 --policy sjf-oracle 2>&1");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("only a replay knows"), std::string::npos) << out;
}

}  // namespace
// `up` on a fake NVML with GPU 0 idle (0% SM) and GPU 1 busy (90%), an idle timeout of one
// minute: issue 13's idle reclaim end to end, and the usage and advice endpoints.
class IdleServer : public e2e::FakeNvmlUpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--idle-timeout", "1m"};
    FakeNvmlUpServer::SetUp();
    extra_up_args.clear();
  }
  std::string Scenario() const override {
    return R"({"gpus": [
      {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "power_limit_w": 700,
       "timeline": [{"t": 0, "gpu_util": 0, "mem_util": 0, "memory_used_mib": 500, "power_w": 70}]},
      {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "power_limit_w": 700,
       "timeline": [{"t": 0, "gpu_util": 90, "mem_util": 40, "memory_used_mib": 60000,
                     "power_w": 600, "pcie_rx_kbps": 100000, "pcie_tx_kbps": 50000}]}]})";
  }
};

TEST_F(IdleServer, AJobWhoseGpuStaysIdleIsWarnedThenStoppedAndABusyOneRunsOn) {
  auto id_of = [](const std::string& out) { return json::parse(out)["id"].get<int64_t>(); };
  const int64_t idle = id_of(Cli("submit --json -- sleep 300"));
  ASSERT_EQ(WaitFor(idle, "RUNNING")["gpu_indices"], json::array({0})) << "the lowest free GPU";
  const int64_t busy = id_of(Cli("submit --json -- sleep 300"));
  ASSERT_EQ(WaitFor(busy, "RUNNING")["gpu_indices"], json::array({1}));
  // Warned at 48 s (80% of the minute), stopped at 60 s, CANCELLED with the reason.
  const json ended = WaitFor(idle, "CANCELLED", 120);
  EXPECT_EQ(ended["reason"].get<std::string>().rfind("idle for 1 min", 0), 0u) << ended.dump();
  bool warned = false;
  for (const json& e : ended["events"]) warned = warned || e["what"] == "idle warning";
  EXPECT_TRUE(warned) << ended.dump();
  EXPECT_EQ(json::parse(Cli("show --json " + std::to_string(busy)))["state"], "RUNNING");
  // Open, /metrics has the controller's figures; a job's series (its id and user) take a token.
  auto metrics = Http("").Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("gpufleet_controller_idle_reclaims_total 1"), std::string::npos);
  const std::string busy_series =
      "gpufleet_job_gpu_efficiency_pct{job=\"" + std::to_string(busy) + "\"";
  EXPECT_EQ(metrics->body.find(busy_series), std::string::npos) << metrics->body;
  metrics = Http(token_).Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find(busy_series), std::string::npos) << metrics->body;
  EXPECT_EQ(Http("not-a-token").Get("/metrics")->status, 401);

  // The series of each: the idle one at 0% SM, kept after it ended; the busy one live at 90%.
  const json idle_usage = json::parse(Http(token_).Get("/v1/jobs/" + std::to_string(idle) +
                                                       "/usage")->body);
  ASSERT_TRUE(idle_usage.contains("buckets")) << idle_usage.dump();
  EXPECT_FALSE(idle_usage["live"].get<bool>());
  ASSERT_GE(idle_usage["buckets"].size(), 1u);
  EXPECT_EQ(idle_usage["buckets"][0]["sm_mean"], 0.0);
  EXPECT_EQ(idle_usage["gpus"][0]["index"], 0);
  const json busy_usage = json::parse(Http(token_).Get("/v1/jobs/" + std::to_string(busy) +
                                                       "/usage")->body);
  EXPECT_TRUE(busy_usage["live"].get<bool>());
  EXPECT_NEAR(busy_usage["buckets"][0]["sm_mean"].get<double>(), 90, 0.5);
  EXPECT_NEAR(busy_usage["buckets"][0]["power_pct"].get<double>(), 600.0 / 7, 0.5);
  // A window of the series: a long job's whole series was one answer (a year is 525,600 buckets).
  const std::size_t total = busy_usage["buckets_total"].get<std::size_t>();
  EXPECT_EQ(busy_usage["buckets"].size(), total);
  EXPECT_FALSE(busy_usage["truncated"].get<bool>());
  const json latest =
      json::parse(Http(token_).Get("/v1/jobs/" + std::to_string(busy) + "/usage?limit=1")->body);
  ASSERT_EQ(latest["buckets"].size(), 1u) << latest.dump();
  EXPECT_EQ(latest["buckets"][0]["start_s"], busy_usage["buckets"][total - 1]["start_s"]);
  EXPECT_EQ(latest["truncated"].get<bool>(), total > 1);
  const json later = json::parse(
      Http(token_).Get("/v1/jobs/" + std::to_string(busy) + "/usage?from_s=86400")->body);
  EXPECT_TRUE(later["buckets"].empty()) << later.dump();
  EXPECT_TRUE(later["truncated"].get<bool>());
  // Advice answers with findings in the interface's shape, and `advise` prints them.
  const json advice = json::parse(Cli("advise --json " + std::to_string(busy)));
  ASSERT_TRUE(advice["findings"].is_array()) << advice.dump();
  ASSERT_FALSE(advice["findings"].empty()) << advice.dump();
  for (const char* key : {"kind", "severity", "waste_gpu_h", "evidence", "advice"}) {
    EXPECT_TRUE(advice["findings"][0].contains(key)) << key;
  }
  EXPECT_NE(Cli("show " + std::to_string(busy)).find("advice"), std::string::npos);
  // Another user sees neither.
  const std::string alice = json::parse(Cli("users add alice --json"))["token"];
  EXPECT_EQ(Http(alice).Get("/v1/jobs/" + std::to_string(busy) + "/usage")->status, 404);
  EXPECT_EQ(Http(alice).Get("/v1/jobs/" + std::to_string(busy) + "/advice")->status, 404);
  // The report counts the reclaim; alice's covers only her (no) jobs.
  const json report = json::parse(Cli("report --json --since 1h"));
  EXPECT_EQ(report["total"]["idle_reclaims"], 1) << report.dump();
  EXPECT_EQ(report["total"]["jobs"], 1);
  const json hers = json::parse(Http(alice).Get("/v1/report?since=1h")->body);
  EXPECT_EQ(hers["total"]["jobs"], 0);
  EXPECT_EQ(Http(alice).Get("/v1/report?since=forever")->status, 400);
  EXPECT_EQ(Http(alice).Get("/v1/report?by=color")->status, 400);
  Cli("cancel " + std::to_string(busy));
}

// --metrics-auth: /metrics asks for a user's token. An admin's shows every running job's series;
// another user's the controller's own figures and their own jobs' series only (the series name
// each job's id and user, which no other user may learn).
class MetricsAuthServer : public UpServer {
 protected:
  void SetUp() override {
    extra_up_args = {"--metrics-auth", "--run-as-map", "bob=nobody"};
    UpServer::SetUp();
    extra_up_args.clear();
  }
};

TEST_F(MetricsAuthServer, MetricsAskForATokenAndShowOthersJobsToAdminsOnly) {
  EXPECT_EQ(Http("").Get("/metrics")->status, 401);
  EXPECT_EQ(Http("not-a-token").Get("/metrics")->status, 401);
  const std::string bob = json::parse(Cli("users add bob --json"))["token"].get<std::string>();
  const int64_t admins = json::parse(Cli("submit --json -- sleep 120"))["id"].get<int64_t>();
  auto r = Http(bob).Post("/v1/jobs", R"({"argv":["sleep","120"],"gpus":1,"workdir":"/tmp"})",
                          "application/json");
  ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no reply");
  const int64_t bobs = json::parse(r->body)["id"].get<int64_t>();
  WaitFor(admins, "RUNNING");
  WaitFor(bobs, "RUNNING");
  auto series = [](int64_t id) {
    return "gpufleet_job_gpu_efficiency_pct{job=\"" + std::to_string(id) + "\"";
  };
  // Each job's series appears once its GPUs have reported a sample.
  std::string all;
  e2e::WaitUntil(
      [&] {
        all = Http(token_).Get("/metrics")->body;
        return all.find(series(admins)) != std::string::npos &&
               all.find(series(bobs)) != std::string::npos;
      },
      20);
  EXPECT_NE(all.find(series(admins)), std::string::npos) << all;
  EXPECT_NE(all.find(series(bobs)), std::string::npos) << all;
  const std::string bobs_view = Http(bob).Get("/metrics")->body;
  EXPECT_NE(bobs_view.find(series(bobs)), std::string::npos) << bobs_view;
  EXPECT_EQ(bobs_view.find(series(admins)), std::string::npos) << bobs_view;
  for (size_t at = bobs_view.find("user=\""); at != std::string::npos;
       at = bobs_view.find("user=\"", at + 1)) {
    EXPECT_EQ(bobs_view.compare(at, 10, "user=\"bob\""), 0) << bobs_view.substr(at, 40);
  }
  EXPECT_NE(bobs_view.find("gpufleet_controller_jobs_running 2"), std::string::npos) << bobs_view;
  Cli("cancel " + std::to_string(admins));
  Cli("cancel " + std::to_string(bobs));
}

}  // namespace gpufleet
