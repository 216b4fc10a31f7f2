#pragma once
// `UpServer`: a gtest fixture that runs `gpufleet up` as a real server process on loopback, in a
// data directory of its own, and drives it through the CLI and raw HTTP; on teardown it stops the
// server and ends what its jobs left running (e2e_cgroups.h). Used by up_e2e_test and
// advise_e2e_test, whose targets define GPUFLEET_BINARY (the built `gpufleet`).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "e2e_cgroups.h"
#include "e2e_process.h"

namespace gpufleet::e2e {

class UpServer : public ::testing::Test {
 public:
  using json = nlohmann::json;

  // Set by a test before SetUp runs Start: mount a tmpfs of this many KiB as the data directory.
  static inline int tmpfs_kib = 0;
  // Set by a test before SetUp runs Start: more flags for `gpufleet up`.
  static inline std::vector<std::string> extra_up_args;
  // Set by a test before SetUp runs Start: where `up`'s GPUs come from.
  static inline std::vector<std::string> gpu_args = {"--simulated-gpus", "4"};

 protected:
  void SetUp() override {
    up_args_ = extra_up_args;
    up_args_.insert(up_args_.end(), gpu_args.begin(), gpu_args.end());
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-up-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    if (tmpfs_kib > 0) {
      std::filesystem::create_directories(dir_);
      const std::string mount = "mount -t tmpfs -o size=" + std::to_string(tmpfs_kib) +
                                "k tmpfs '" + dir_.string() + "' 2>/dev/null";
      if (std::system(mount.c_str()) != 0) {
        GTEST_SKIP() << "cannot mount a small tmpfs here (needs root): full-disk test skipped";
      }
      mounted_ = true;
    }
    Start();
  }
  void TearDown() override {
    Kill(SIGTERM);
    e2e::ReleaseJobCgroupsUnder(dir_.string());  // the jobs they left running, and cgroups
    e2e::ReleaseJobCgroups(dir_.string() + ".agent");  // an agent a test started beside
    if (mounted_) std::system(("umount '" + dir_.string() + "'").c_str());
    // GPUFLEET_KEEP_TEST_DATA=1 keeps a failed test's data directory (store, logs) and the
    // server's output beside it to look into.
    if (!(HasFailure() && std::getenv("GPUFLEET_KEEP_TEST_DATA") != nullptr)) {
      std::filesystem::remove_all(dir_);
      std::filesystem::remove(dir_.string() + ".up.log");
    }
  }
  bool mounted_ = false;
  std::vector<std::string> up_args_;  // extra_up_args as SetUp found them, kept for restarts
  void Start() {
    std::filesystem::remove(dir_ / "server");
    const std::string data = dir_.string();
    std::vector<std::string> args = {GPUFLEET_BINARY, "up",          "--data-dir",
                                     data,            "--listen",    listen_,
                                     "--stop-grace",  "1",           "--allow-root-jobs"};
    args.insert(args.end(), up_args_.begin(), up_args_.end());
    const std::string log = data + ".up.log";
    pid_ = e2e::Spawn(args, log);
    ASSERT_GT(pid_, 0);
    // Up to 30 s: a restart recovers every job of the store first (10,000 after a launch storm,
    // slow under the sanitizers beside another test).
    for (int i = 0; i < 1200 && !std::filesystem::exists(dir_ / "server"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    url_ = Slurp((dir_ / "server").string());
    while (!url_.empty() && url_.back() == '\n') url_.pop_back();
    ASSERT_FALSE(url_.empty()) << Slurp(log);
    listen_ = url_.substr(url_.find("//") + 2);  // restarts keep the port clients know
    token_ = Slurp((dir_ / "token").string());
    while (!token_.empty() && token_.back() == '\n') token_.pop_back();
  }
  // Sends `sig` and reaps the server; one that ignores a SIGTERM for 30 s is a failure, then
  // killed, so that a hung server fails its test instead of hanging the suite.
  void Kill(int sig) {
    if (pid_ > 0) {
      kill(pid_, sig);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (waitpid(pid_, nullptr, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ADD_FAILURE() << "the server did not stop within 30 s of signal " << sig;
          kill(pid_, SIGKILL);
          waitpid(pid_, nullptr, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      pid_ = -1;
    }
  }
  std::string Cli(const std::string& args) {
    return Sh("GPUFLEET_DATA_DIR='" + dir_.string() + "' '" + GPUFLEET_BINARY + "' " + args +
              " 2>&1")
        .first;
  }
  httplib::Client Http(const std::string& token) {
    httplib::Client c(url_);
    if (!token.empty()) c.set_bearer_token_auth(token);
    return c;
  }
  // Starts a job that holds all 4 GPUs until cancelled; its id once it runs (0 on failure).
  int64_t RunBlocker() {
    auto r =
        Http(token_).Post("/v1/jobs", R"({"argv":["sleep","600"],"gpus":4})", "application/json");
    if (!r || r->status != 201) return 0;
    const int64_t id = json::parse(r->body)["id"].get<int64_t>();
    WaitFor(id, "RUNNING");
    return id;
  }
  // Waits until job `id` is in `state` (via the API); returns the job.
  json WaitFor(int64_t id, const std::string& state, double seconds = 15) {
    auto c = Http(token_);
    json job;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(int(seconds * 1000));
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = c.Get("/v1/jobs/" + std::to_string(id));
      if (r && r->status == 200) {
        job = json::parse(r->body);
        if (job["state"] == state) return job;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "job " << id << " never reached " << state << ": " << job.dump();
    return job;
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  std::string url_, token_;
  std::string listen_ = "127.0.0.1:0";
};

#ifdef FAKE_NVML_FULL
// `up` on the fake NVML (tests/fake_nvml) with the scenario `Scenario()` gives, written to a file
// of the test's own for the server to read.
class FakeNvmlUpServer : public UpServer {
 protected:
  virtual std::string Scenario() const = 0;
  void SetUp() override {
    scenario_ = std::filesystem::temp_directory_path() /
                ("gpufleet-scenario-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json");
    std::ofstream(scenario_) << Scenario();
    setenv("FAKE_NVML_SCENARIO", scenario_.c_str(), 1);
    gpu_args = {"--nvml-library", FAKE_NVML_FULL};
    UpServer::SetUp();
    gpu_args = {"--simulated-gpus", "4"};
  }
  void TearDown() override {
    UpServer::TearDown();
    unsetenv("FAKE_NVML_SCENARIO");
    std::filesystem::remove(scenario_);
  }
  std::filesystem::path scenario_;
};
#endif

}  // namespace gpufleet::e2e
