#include "net/failover_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpufleet::net {
namespace {

// A loopback HTTP server scripted by the test: `answer` gets each request's bytes and returns the
// bytes to answer with ("" : close the connection without answering). Connections are served one
// at a time, each until the client closes it; requests are counted and the last one kept.
class FakeController {
 public:
  explicit FakeController(std::function<std::string(const std::string&)> answer)
      : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        const int conn = ::accept(fd_, nullptr, nullptr);
        if (conn < 0) continue;
        ++accepted_;
        Serve(conn);
        ::close(conn);
      }
    });
  }
  ~FakeController() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_; }
  int requests() const { return requests_; }
  std::string last_request() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

 private:
  void Serve(int fd) {
    std::string data;
    char buf[4096];
    for (;;) {
      const std::size_t end = data.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::size_t length = 0;
        const std::size_t cl = data.find("Content-Length: ");
        if (cl != std::string::npos && cl < end) length = std::stoul(data.substr(cl + 16));
        if (data.size() >= end + 4 + length) {
          const std::string request = data.substr(0, end + 4 + length);
          data.erase(0, end + 4 + length);
          ++requests_;
          {
            std::lock_guard<std::mutex> lock(mu_);
            last_ = request;
          }
          const std::string reply = answer_(request);
          if (reply.empty()) return;  // cut: the request arrived, no answer leaves
          if (::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) return;
          continue;
        }
      }
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) == 0) {
        if (stop_) return;
        continue;
      }
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      data.append(buf, static_cast<std::size_t>(n));
    }
  }

  std::function<std::string(const std::string&)> answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  std::string last_;
  std::thread thread_;
};

std::string Answer(int status, const std::string& headers, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\n" + headers +
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string Ok(const std::string& body) { return Answer(200, "", body); }

// What a standby controller answers every request but GET /healthz.
std::string Standby(const std::string& leader) {
  return Answer(
      503, "X-Gpufleet-Role: standby\r\nX-Gpufleet-Leader: " + leader + "\r\nRetry-After: 1\r\n",
      R"({"error":"this controller is a standby","code":"unavailable",)"
      R"("role":"standby","leader":")" +
          leader + "\"}");
}

// A URL where nothing listens (a port just closed).
std::string DeadUrl() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

FailoverHttpClient ClientFor(const std::string& urls, int deadline_ms = 2000) {
  auto client = FailoverHttpClient::ForUrls(urls);
  EXPECT_TRUE(client.ok()) << client.error();
  FailoverHttpClient c = std::move(client).value();
  c.SetTimeouts(1000, 1000);
  c.SetPolicy(FailoverPolicy{deadline_ms, 20, 80});
  return c;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(FailoverHttpClient, ParsesACommaSeparatedListAndNamesABadUrl) {
  auto two = FailoverHttpClient::ForUrls("http://10.0.0.1:8080, http://10.0.0.2:8080/");
  ASSERT_TRUE(two.ok()) << two.error();
  EXPECT_EQ(two.value().size(), 2u);
  EXPECT_EQ(two.value().url(1), "http://10.0.0.2:8080/");
  EXPECT_EQ(two.value().current_url(), "http://10.0.0.1:8080");
  // The same endpoint twice counts once.
  auto same = FailoverHttpClient::ForUrls("http://ctl:80,http://CTL,http://ctl:81");
  ASSERT_TRUE(same.ok()) << same.error();
  EXPECT_EQ(same.value().size(), 2u);
  EXPECT_TRUE(FailoverHttpClient::ForUrls("https://a:1,https://b:2").value().tls());

  const std::pair<const char*, const char*> bad[] = {
      {"http://a:1,ftp://b:2", "'ftp://b:2': expected http://HOST:PORT"},
      {"http://a:1,http://b:0", "'http://b:0': the port must be"},
      {"http://a:1,,http://b:2", "an empty URL"},
      {"http://a:1,", "an empty URL"},
      {"http://a:1,https://b:2", "'https://b:2': the URLs of one list must all be"},
  };
  for (const auto& [urls, expected] : bad) {
    auto client = FailoverHttpClient::ForUrls(urls);
    ASSERT_FALSE(client.ok()) << urls;
    EXPECT_TRUE(Has(client.error(), expected)) << urls << ": " << client.error();
  }
}

TEST(FailoverHttpClient, ARefusedFirstUrlMovesToTheSecond) {
  FakeController second([](const std::string&) { return Ok(R"({"id":1})"); });
  const std::string dead = DeadUrl();
  FailoverHttpClient client = ClientFor(dead + "," + second.url());
  client.SetBearerToken("tok");
  // Not repeatable, and still sent again: the first endpoint never got it.
  auto reply = client.Post("/v1/jobs", "{}");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 200);
  EXPECT_EQ(second.requests(), 1);
  EXPECT_TRUE(Has(second.last_request(), "Authorization: Bearer tok\r\n"));
  EXPECT_EQ(client.current_url(), second.url());
  // Later requests start there.
  ASSERT_TRUE(client.Get("/v1/jobs").ok());
  EXPECT_EQ(second.requests(), 2);
  EXPECT_EQ(second.accepted(), 1);  // on the kept connection
}

TEST(FailoverHttpClient, AStandbyIsLeftForTheLeaderItNamesWhichThenSticks) {
  FakeController leader([](const std::string&) { return Ok("{}"); });
  FakeController other_standby([](const std::string&) { return Standby(""); });
  // The standby names the leader in another spelling of its URL.
  const std::string leader_spelled = leader.url() + "/";
  FakeController standby([&](const std::string&) { return Standby(leader_spelled); });
  FailoverHttpClient client =
      ClientFor(standby.url() + "," + other_standby.url() + "," + leader.url());
  auto reply = client.Post("/v1/jobs/7/cancel");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 200);
  EXPECT_EQ(standby.requests(), 1);
  EXPECT_EQ(other_standby.requests(), 0);  // the named leader came first
  EXPECT_EQ(leader.requests(), 1);
  EXPECT_TRUE(Has(leader.last_request(), "POST /v1/jobs/7/cancel HTTP/1.1\r\n"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.Get("/v1/nodes").ok());
  EXPECT_EQ(leader.requests(), 4);
  EXPECT_EQ(standby.requests(), 1);
  EXPECT_EQ(client.current_url(), leader.url());
}

TEST(FailoverHttpClient, AStandbyWithoutALeaderIsLeftForTheNextUrl) {
  FakeController leader([](const std::string&) { return Ok("{}"); });
  FakeController standby([](const std::string&) { return Standby(""); });
  FailoverHttpClient client = ClientFor(standby.url() + "," + leader.url());
  auto reply = client.Send("DELETE", "/v1/users/bob", "", "");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 200);
  EXPECT_EQ(standby.requests(), 1);
  EXPECT_EQ(leader.requests(), 1);
}

TEST(FailoverHttpClient, ALeaderOutsideTheListIsNeverContacted) {
  FakeController elsewhere([](const std::string&) { return Ok("{}"); });
  FakeController first([&](const std::string&) { return Standby(elsewhere.url()); });
  // A hostile answer tries to put control characters on the user's terminal, too.
  FakeController second([](const std::string&) { return Standby("http://evil\x1b[2J:1"); });
  std::string error;
  {
    FailoverHttpClient client = ClientFor(first.url() + "," + second.url(), 300);
    client.SetBearerToken("secret-token");
    auto reply = client.Get("/v1/jobs");
    ASSERT_FALSE(reply.ok());
    error = reply.error();
  }
  EXPECT_EQ(elsewhere.accepted(), 0);
  EXPECT_GE(first.requests(), 2);  // more than one round
  EXPECT_TRUE(Has(error, first.url() + " (a standby; its leader " + elsewhere.url() +
                             " is not in the list, so it was not contacted)"))
      << error;
  EXPECT_TRUE(Has(error, "its leader http://evil\\x1b[2J:1 is not in the list")) << error;
  EXPECT_FALSE(Has(error, "\x1b")) << error;
}

TEST(FailoverHttpClient, EveryEndpointDownFailsAfterTheDeadlineNamingEach) {
  FakeController standby([](const std::string&) { return Standby(""); });
  const std::string dead = DeadUrl();
  FailoverHttpClient client = ClientFor(dead + "," + standby.url(), 400);
  const auto started = std::chrono::steady_clock::now();
  auto reply = client.Post("/v1/jobs", "{}", "application/json", Repeatable::kYes);
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(reply.ok());
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  EXPECT_GE(standby.requests(), 3);  // rounds, with waits of 20, 40, 80, 80... ms between them
  const std::string& error = reply.error();
  EXPECT_TRUE(Has(error, "no leading controller answered within 0.")) << error;
  EXPECT_TRUE(Has(error, dead + " (cannot connect to 127.0.0.1:")) << error;
  EXPECT_TRUE(Has(error, "refused")) << error;
  EXPECT_TRUE(Has(error, standby.url() + " (a standby; it knows no leader)")) << error;
}

TEST(FailoverHttpClient, TheFirstRoundTriesEveryEndpointEvenWithoutTime) {
  FakeController leader([](const std::string&) { return Ok("{}"); });
  FailoverHttpClient client = ClientFor(DeadUrl() + "," + DeadUrl() + "," + leader.url(), 0);
  auto reply = client.Get("/");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(leader.requests(), 1);
}

TEST(FailoverHttpClient, ARequestCutAfterItWasSentIsNotSentAgainUnlessRepeatable) {
  FakeController leader([](const std::string&) { return Ok("{}"); });
  // Reads each request and closes: the outcome is unknown to the client.
  FakeController cuts([](const std::string&) { return std::string(); });
  FailoverHttpClient client = ClientFor(cuts.url() + "," + leader.url());
  auto reply = client.Post("/v1/users", R"({"name":"bob"})");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(cuts.requests(), 1);
  EXPECT_EQ(leader.requests(), 0);
  EXPECT_TRUE(Has(reply.error(), cuts.url() + ": the server closed the connection"))
      << reply.error();
  EXPECT_TRUE(Has(reply.error(), "so it was not sent again")) << reply.error();
  // A repeatable one (a submit with its client token, a GET) goes on to the next endpoint.
  auto again =
      client.Post("/v1/jobs", R"({"client_token":"abc"})", "application/json", Repeatable::kYes);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(cuts.requests(), 2);
  EXPECT_EQ(leader.requests(), 1);
  EXPECT_TRUE(Has(leader.last_request(), R"({"client_token":"abc"})"));
  ASSERT_TRUE(client.Get("/v1/jobs").ok());
  EXPECT_EQ(leader.requests(), 2);
}

TEST(FailoverHttpClient, ASilentServerTimesOutAndOnlyRepeatableRequestsMoveOn) {
  FakeController leader([](const std::string&) { return Ok("{}"); });
  for (const bool repeatable : {false, true}) {
    std::atomic<bool> release{false};
    FakeController silent([&](const std::string&) {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return std::string();
    });
    FailoverHttpClient client = ClientFor(silent.url() + "," + leader.url());
    client.SetTimeouts(1000, 150);
    auto reply = repeatable ? client.Get("/v1/jobs") : client.Post("/v1/tokens", "{}");
    release = true;
    if (repeatable) {
      ASSERT_TRUE(reply.ok()) << reply.error();
      EXPECT_EQ(leader.requests(), 1);
    } else {
      ASSERT_FALSE(reply.ok());
      EXPECT_TRUE(Has(reply.error(), "no answer within")) << reply.error();
      EXPECT_EQ(leader.requests(), 0);
    }
    EXPECT_EQ(silent.requests(), 1);
  }
}

TEST(FailoverHttpClient, OneUrlBehavesExactlyAsHttpClient) {
  // A standby's answer is handed over as it is, and nothing waits.
  FakeController standby([](const std::string&) { return Standby(""); });
  {
    FailoverHttpClient client = ClientFor(standby.url());
    auto reply = client.Post("/v1/jobs", "{}");
    ASSERT_TRUE(reply.ok()) << reply.error();
    EXPECT_EQ(reply.value().status, 503);
    EXPECT_TRUE(IsStandbyReply(reply.value()));
    EXPECT_EQ(standby.requests(), 1);
  }
  const std::string dead = DeadUrl();
  FailoverHttpClient client = ClientFor(dead, 5000);
  auto plain = HttpClient::ForUrl(dead);
  ASSERT_TRUE(plain.ok());
  const auto started = std::chrono::steady_clock::now();
  auto reply = client.Get("/");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(500));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error(), plain.value().Get("/").error());
}

TEST(FailoverHttpClient, ATooManyRequestsAnswerIsWaitedOutWithinItsBudget) {
  std::atomic<int> seen{0};
  std::atomic<int> refusals{2};
  std::atomic<const char*> retry_after{"Retry-After: 1\r\n"};
  FakeController limited([&](const std::string&) {
    ++seen;
    if (refusals.fetch_sub(1) > 0) {
      return Answer(429, retry_after.load(), R"({"error":"too many writing requests"})");
    }
    return Ok("{}");
  });
  FailoverHttpClient client = ClientFor(limited.url());
  const auto started = std::chrono::steady_clock::now();
  auto reply = client.Post("/v1/jobs", "{}");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 200);
  EXPECT_EQ(seen.load(), 3);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1900));
  // A wait beyond the budget, or a Retry-After that is not 1-60 seconds: the 429 is the answer.
  FailoverPolicy impatient{2000, 20, 80};
  impatient.rate_limited_wait_ms = 500;
  client.SetPolicy(impatient);
  refusals = 1;
  seen = 0;
  EXPECT_EQ(client.Post("/v1/jobs", "{}").value().status, 429);
  EXPECT_EQ(seen.load(), 1);
  client.SetPolicy(FailoverPolicy{2000, 20, 80});
  for (const char* bad :
       {"Retry-After: 0\r\n", "Retry-After: 61\r\n", "Retry-After: soon\r\n", ""}) {
    retry_after = bad;
    refusals = 1;
    seen = 0;
    EXPECT_EQ(client.Post("/v1/jobs", "{}").value().status, 429) << bad;
    EXPECT_EQ(seen.load(), 1) << bad;
  }
}

TEST(FailoverHttpClient, RecognizesOnlyAStandbysRefusal) {
  HttpReply busy;
  busy.status = 503;
  EXPECT_FALSE(IsStandbyReply(busy));  // a leader's own 503 is an answer
  busy.headers = {{"x-gpufleet-role", " Standby "}};
  EXPECT_TRUE(IsStandbyReply(busy));
  HttpReply healthz;
  healthz.status = 200;
  healthz.headers = {{"X-Gpufleet-Role", "standby"}};
  EXPECT_FALSE(IsStandbyReply(healthz));
}

}  // namespace
}  // namespace gpufleet::net
