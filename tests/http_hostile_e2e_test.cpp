// `gpufleet controller` and a remote `gpufleet agent` against hostile HTTP clients: slow-loris
// connections plus a flood of concurrent clients must never cost the agent its lease nor a job
// its run, and bodies or heads built to exhaust memory (a gzip bomb, a huge chunked body, 200,000
// header fields) sent without a token must leave the controller small.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e_cgroups.h"
#include "e2e_process.h"

namespace gpufleet {
namespace {

using e2e::Slurp;
using e2e::WaitUntil;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A Debug+ASan controller is several times slower and its shadow memory counts in its RSS.
#if GPUFLEET_SANITIZED
constexpr double kProbeLimitS = 3.0;
constexpr int kMinAnswers = 1000;
constexpr long kPeakRssLimitKib = 400 * 1024;
#else
constexpr double kProbeLimitS = 1.0;
constexpr int kMinAnswers = 5000;
constexpr long kPeakRssLimitKib = 100 * 1024;
#endif

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may answer and close before taking it all
    sent += static_cast<std::size_t>(n);
  }
}

// Sends `request` from a second thread while reading the answer's status line (-1: none).
int StatusOfSent(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return -1;
  std::thread sender([&] { SendAll(fd, request); });
  std::string answer;
  char buffer[4096];
  while (answer.find("\r\n") == std::string::npos) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  shutdown(fd, SHUT_RDWR);
  sender.join();
  close(fd);
  return answer.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(answer.substr(9, 3)) : -1;
}

long PeakRssKib(pid_t pid) {
  const std::string status = Slurp("/proc/" + std::to_string(pid) + "/status");
  const std::size_t at = status.find("VmHWM:");
  return at == std::string::npos ? -1 : std::stol(status.substr(at + 6));
}

class HttpHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufleet-hostile-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    Stop(agent_);
    Stop(controller_);
    e2e::Sh("pkill -9 -f '" + dir_.string() + "' 2>/dev/null");
    e2e::ReleaseJobCgroupsUnder(dir_.string());  // what the servers left running
    std::filesystem::remove_all(dir_);
  }
  static void Stop(pid_t& pid) {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  void StartController(double lease_s) {
    controller_ =
        e2e::Spawn({GPUFLEET_BINARY, "controller", "--data-dir", Ctl(), "--listen", "127.0.0.1:0",
                    "--lease", std::to_string(lease_s), "--stop-grace", "1"},
                   (dir_ / "controller.log").string());
    ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_ / "ctl" / "server"); }, 10))
        << Slurp((dir_ / "controller.log").string());
    url_ = e2e::FirstLine((dir_ / "ctl" / "server").string());
    port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
    token_ = e2e::FirstLine((dir_ / "ctl" / "token").string());
  }
  void StartAgent(const std::string& node, int gpus) {
    agent_ = e2e::Spawn({GPUFLEET_BINARY, "agent", "--controller", url_, "--token-file",
                         (dir_ / "ctl" / "token").string(), "--hostname", node, "--data-dir",
                         (dir_ / node).string(), "--listen", "127.0.0.1:0", "--simulated-gpus",
                         std::to_string(gpus), "--heartbeat", "0.2", "--advertise-address",
                         "127.0.0.1", "--allow-root-jobs"},
                        (dir_ / (node + ".log")).string());
    ASSERT_GT(agent_, 0);
    ASSERT_TRUE(WaitUntil([&] { return NodeState(node) == "READY"; }, 10))
        << Slurp((dir_ / (node + ".log")).string());
  }
  std::string Ctl() const { return (dir_ / "ctl").string(); }
  httplib::Client Http() {
    httplib::Client c(url_);
    c.set_bearer_token_auth(token_);
    c.set_read_timeout(10, 0);
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

  std::filesystem::path dir_;
  pid_t controller_ = -1;
  pid_t agent_ = -1;
  std::string url_, token_;
  int port_ = 0;
};

TEST_F(HttpHostile, SlowLorisAndAFloodOfClientsNeverCostAnAgentItsLease) {
  StartController(3);
  StartAgent("alpha", 2);
  auto submitted = Http().Post("/v1/jobs", json({{"argv", {"sleep", "300"}}, {"gpus", 1}}).dump(),
                               "application/json");
  ASSERT_TRUE(submitted && submitted->status == 201);
  const std::string job =
      "/v1/jobs/" + std::to_string(json::parse(submitted->body)["id"].get<int>());
  ASSERT_TRUE(WaitUntil([&] { return Get(job)["state"] == "RUNNING"; }, 20));

  std::atomic<bool> stop{false};
  // 40 slow-loris connections, each sending a header line every 4 s, reopened when closed.
  std::thread loris([&] {
    constexpr int kSlow = 40;
    std::vector<int> fds(kSlow, -1);
    std::vector<Clock::time_point> next(kSlow, Clock::now());
    while (!stop) {
      for (int i = 0; i < kSlow; ++i) {
        char peek;
        if (fds[i] >= 0 && recv(fds[i], &peek, 1, MSG_DONTWAIT | MSG_PEEK) >= 0) {
          close(fds[i]);  // answered (408) or closed by the server
          fds[i] = -1;
        }
        if (fds[i] < 0) {
          fds[i] = Connect(port_);
          if (fds[i] >= 0) SendAll(fds[i], "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n");
          next[i] = Clock::now() + std::chrono::seconds(4);
        } else if (Clock::now() >= next[i]) {
          send(fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
          next[i] = Clock::now() + std::chrono::seconds(4);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  });
  // 200 concurrent clients, each asking again 100 ms after every answer.
  std::atomic<int> answered{0}, failed{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 200; ++i) {
    clients.emplace_back([&] {
      httplib::Client c = Http();
      while (!stop) {
        auto r = c.Get("/v1/queue");
        if (r && r->status == 200) {
          ++answered;
        } else {
          ++failed;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  double worst_s = 0;
  int not_ready = 0;
  const auto start = Clock::now();
  while (SecondsSince(start) < 30) {
    const auto asked = Clock::now();
    const std::string state = NodeState("alpha");
    worst_s = std::max(worst_s, SecondsSince(asked));
    if (state != "READY") ++not_ready;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  stop = true;
  for (auto& t : clients) t.join();
  loris.join();

  std::printf("slowest probe %.3f s, %d answers to the 200 clients, %d failed\n", worst_s,
              answered.load(), failed.load());
  EXPECT_LT(worst_s, kProbeLimitS);
  EXPECT_EQ(not_ready, 0);
  EXPECT_EQ(Get(job)["state"], "RUNNING");
  EXPECT_GT(answered.load(), kMinAnswers);
  EXPECT_EQ(failed.load(), 0);
  auto metrics = Http().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("gpufleet_controller_nodes_lost_total 0\n"), std::string::npos);
}

TEST_F(HttpHostile, BombsWithoutATokenLeaveTheControllerSmall) {
  StartController(5);
  // A gzip bomb: the first MiB of a gzip stream of zeros, which would inflate to hundreds of MB.
  const std::string bomb =
      e2e::Sh("head -c 1000000000 /dev/zero | gzip -1 | head -c 1048576").first;
  ASSERT_GT(bomb.size(), 100000U);
  const int gzip_status =
      StatusOfSent(port_,
                   "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Content-Encoding: gzip\r\nContent-Length: " +
                       std::to_string(bomb.size()) + "\r\n\r\n" + bomb);
  EXPECT_TRUE(gzip_status == 415 || gzip_status == 401) << gzip_status;
  // 5 MiB in chunks, no Content-Length to check up front.
  std::string chunked =
      "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 80; ++i) chunked += "10000\r\n" + std::string(65536, '{') + "\r\n";
  chunked += "0\r\n\r\n";
  EXPECT_EQ(StatusOfSent(port_, chunked), 401);
  // The same with a token: the body limit holds under the chunked coding too.
  const std::string with_token =
      "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token_ + "\r\n";
  EXPECT_EQ(StatusOfSent(port_, with_token + chunked.substr(chunked.find("Transfer"))), 413);
  // The dashboard's login and logout take no token: a body above their 4 KiB is refused on its
  // head, at once (before, the server read up to 1 MiB of it first, from anyone). The sender
  // sends the head only: a server waiting for the body would answer nothing in 10 s.
  for (const char* path : {"/ui/login", "/ui/logout"}) {
    const auto start = Clock::now();
    EXPECT_EQ(
        StatusOfSent(port_, std::string("POST ") + path +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                "Content-Length: 1048576\r\n\r\n"),
        413)
        << path;
    EXPECT_LT(SecondsSince(start), 5) << path;
    EXPECT_EQ(StatusOfSent(
                  port_, std::string("POST ") + path +
                             " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
              413)
        << path;
  }
  // 200,000 header fields.
  std::string heads = "GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 200000; ++i) heads += "X-Many: " + std::to_string(i) + "\r\n";
  EXPECT_EQ(StatusOfSent(port_, heads + "\r\n"), 431);

  std::printf("controller peak RSS: %ld KiB\n", PeakRssKib(controller_));
  EXPECT_LT(PeakRssKib(controller_), kPeakRssLimitKib);
  auto health = Http().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// A stream of made-up tokens costs no store lookup each: every one is refused (401) from the
// hashes of the stored tokens, read at most once per 2 s, while real tokens keep working.
TEST_F(HttpHostile, AFloodOfMadeUpTokensCostsNoLookupEach) {
  StartController(5);
  auto reads = [&]() -> int64_t {
    auto metrics = Http().Get("/metrics");
    if (!metrics) return -1;
    const std::string name = "gpufleet_controller_credential_reads_total ";
    const std::size_t at = metrics->body.find("\n" + name);
    return at == std::string::npos ? -1 : std::stoll(metrics->body.substr(at + 1 + name.size()));
  };
  ASSERT_FALSE(Get("/v1/jobs").is_null());
  const int64_t before = reads();
  ASSERT_GE(before, 0);
  int unauthorized = 0;
  for (int i = 0; i < 200; ++i) {
    httplib::Client c(url_);
    c.set_bearer_token_auth("made-up-" + std::to_string(i));
    auto r = c.Get("/v1/jobs");
    ASSERT_TRUE(r);
    unauthorized += r->status == 401;
  }
  httplib::Client c(url_);
  auto login = c.Post("/ui/login", R"({"token": "made-up-login"})", "application/json");
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 401);
  EXPECT_EQ(unauthorized, 200);
  auto jobs = Http().Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200) << "the admin's token still works";
  // One read of the hashes per 2 s at most, plus the admin's own token read again when its
  // memory lapses: a handful, where it was one per made-up token.
  const int64_t spent = reads() - before;
  std::printf("store reads for 201 made-up tokens: %lld\n", static_cast<long long>(spent));
  EXPECT_LE(spent, 10);
}

}  // namespace
}  // namespace gpufleet
