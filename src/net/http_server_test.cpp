#include "net/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace gpufleet::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A raw client socket to 127.0.0.1:port (blocking, reads time out after `timeout_s`).
int Connect(int port, double timeout_s = 5) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{static_cast<time_t>(timeout_s),
             static_cast<suseconds_t>((timeout_s - static_cast<int>(timeout_s)) * 1e6)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Everything until the peer closes (or the read timeout).
std::string ReadToEnd(int fd) {
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

// One answer: its head and a Content-Length body.
std::string ReadAnswer(int fd) {
  std::string out;
  char c;
  while (out.find("\r\n\r\n") == std::string::npos && recv(fd, &c, 1, 0) == 1) out += c;
  const std::size_t at = out.find("Content-Length: ");
  if (at == std::string::npos) return out;
  std::size_t length = std::stoul(out.substr(at + 16));
  std::string body(length, '\0');
  std::size_t got = 0;
  while (got < length) {
    const ssize_t n = recv(fd, body.data() + got, length - got, 0);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return out + body.substr(0, got);
}

int StatusOf(const std::string& answer) {
  if (answer.rfind("HTTP/1.1 ", 0) != 0 || answer.size() < 12) return -1;
  return std::stoi(answer.substr(9, 3));
}

std::string BodyOf(const std::string& answer) {
  const std::size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? "" : answer.substr(end + 4);
}

// The "error" of a JSON error body, or "" when the body is not one.
std::string ErrorOf(const std::string& answer) {
  auto doc = nlohmann::json::parse(BodyOf(answer), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc["error"].is_string()) return "";
  return doc["error"].get<std::string>();
}

long ProcessKib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  }
  return -1;
}

// A server on 127.0.0.1 with a few routes, serving on its own thread.
class Served {
 public:
  explicit Served(HttpServerOptions options, std::function<void(HttpServer&)> extra = nullptr)
      : server_(options) {
    server_.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("pong", "text/plain");
    });
    server_.Get(R"(/items/(\d+)/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
      nlohmann::json params = nlohmann::json::object();
      for (const auto& [key, value] : req.params) params[key] = value;
      res.set_content(nlohmann::json{{"id", req.matches[1].str()},
                                     {"what", req.matches[2].str()},
                                     {"params", params},
                                     {"remote", req.remote_addr}}
                          .dump(),
                      "application/json");
    });
    server_.Post("/echo", [this](const httplib::Request& req, httplib::Response& res) {
      ++handled_;
      res.set_content(std::to_string(req.body.size()) + ":" + req.body.substr(0, 16), "text/plain");
    });
    if (extra) extra(server_);
    auto port = server_.Bind({"127.0.0.1", 0});
    EXPECT_TRUE(port) << port.error();
    port_ = port ? port.value() : 0;
    thread_ = std::thread([this] { served_ok_ = server_.Serve(); });
  }
  ~Served() {
    server_.Stop();
    thread_.join();
  }
  int port() const { return port_; }
  int handled() const { return handled_; }
  HttpServer& server() { return server_; }

 private:
  HttpServer server_;
  int port_ = 0;
  std::atomic<int> handled_{0};
  std::atomic<bool> served_ok_{false};
  std::thread thread_;
};

TEST(HttpServer, RoutesByRegexDecodesQueriesAndAnswersUnknownPathsInJson) {
  Served s({});
  httplib::Client client("127.0.0.1", s.port());
  auto r = client.Get("/items/42/name?a=1&b=x%20y");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto doc = nlohmann::json::parse(r->body);
  EXPECT_EQ(doc["id"], "42");
  EXPECT_EQ(doc["what"], "name");
  EXPECT_EQ(doc["params"]["b"], "x y");
  EXPECT_EQ(doc["remote"], "127.0.0.1");
  // The pattern must match the whole path, as in httplib.
  EXPECT_EQ(client.Get("/items/42/name/more")->status, 404);
  auto missing = client.Get("/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("Content-Type"), "application/json");
  EXPECT_NE(nlohmann::json::parse(missing->body)["error"].get<std::string>().find("/nothing"),
            std::string::npos);
  auto wrong_method = client.Delete("/ping");
  ASSERT_TRUE(wrong_method);
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_EQ(wrong_method->get_header_value("Allow"), "GET");
  auto head = client.Head("/ping");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->get_header_value("Content-Length"), "4");
  EXPECT_TRUE(head->body.empty());
  // A path too long for any route never reaches std::regex (it recurses once per character).
  auto long_path = client.Get("/items/" + std::string(12000, '7') + "/name");
  ASSERT_TRUE(long_path);
  EXPECT_EQ(long_path->status, 414);
  // Still the same kept-alive connection after all that.
  EXPECT_EQ(client.Get("/ping")->body, "pong");
}

TEST(HttpServer, ErrorsOfTheHttpLayerAreJsonWithAProperStatus) {
  Served s({});
  struct Case {
    std::string request;
    int status;
  };
  const std::vector<Case> cases = {
      {"hello\r\n\r\n", 400},
      {"GET / HTTP/3.0\r\n\r\n", 505},
      {"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 411},
      {"BREW /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", 405},
      {"BREW /pot HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404},
      {"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12x\r\n\r\n", 400},
      {"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nTransfer-Encoding: "
       "chunked\r\n\r\n",
       400},
      {"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400},
  };
  for (const Case& c : cases) {
    const int fd = Connect(s.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, c.request));
    const std::string answer = ReadAnswer(fd);
    EXPECT_EQ(StatusOf(answer), c.status) << c.request << "\n--\n" << answer;
    EXPECT_NE(ErrorOf(answer), "") << c.request << "\n--\n" << answer;
    close(fd);
  }
  EXPECT_EQ(s.handled(), 0);
}

TEST(HttpServer, SlowLorisConnectionsAreClosedAtTheDeadlineAndCostNoWorker) {
  HttpServerOptions options;
  options.threads = 2;
  options.request_deadline_ms = 1000;
  Served s(options);
  std::vector<int> drips;
  for (int i = 0; i < 40; ++i) {
    const int fd = Connect(s.port(), 3);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    drips.push_back(fd);
  }
  std::atomic<bool> done{false};
  std::thread dripper([&] {
    while (!done) {
      for (int fd : drips) send(fd, "X-Drip: 1\r\n", 11, MSG_NOSIGNAL);
      std::this_thread::sleep_for(milliseconds(300));
    }
  });
  // Normal requests are answered at once all the while.
  const auto start = Clock::now();
  while (SecondsSince(start) < 1.6) {
    httplib::Client client("127.0.0.1", s.port());
    const auto asked = Clock::now();
    auto r = client.Get("/ping");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(SecondsSince(asked), 1.0);
    std::this_thread::sleep_for(milliseconds(100));
  }
  // Every drip-feeder got a 408 and its connection was closed, well before 3 s.
  for (int fd : drips) {
    const std::string answer = ReadToEnd(fd);
    EXPECT_EQ(StatusOf(answer), 408) << answer;
    EXPECT_NE(ErrorOf(answer), "");
  }
  EXPECT_LT(SecondsSince(start), 3.5);
  done = true;
  dripper.join();
  for (int fd : drips) close(fd);
}

// Found by a review: an answer waited whole in memory as long as its client read a byte every
// few seconds, so slow readers of big answers (16 MiB job lists) from many connections held
// gigabytes. Unread answers now have a budget per address and in all, and a trickle of reads
// does not keep a connection alive.
TEST(HttpServer, SlowReadersOfBigAnswersHoldNoMoreThanTheUnreadBudget) {
  HttpServerOptions options;
  options.threads = 2;
  options.io_timeout_s = 1;
  options.max_unread_bytes_per_address = 24u << 20;
  const std::string big(16u << 20, 'x');
  Served s(options, [&big](HttpServer& server) {
    server.Get("/big", [&big](const httplib::Request&, httplib::Response& res) {
      res.set_content(big, "text/plain");
    });
  });
  // Clients that do not read: the first one's answer waits (less what the kernel took).
  auto slow_client = [&] {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(s.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_TRUE(SendAll(fd, "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    return fd;
  };
  const int first = slow_client();
  std::this_thread::sleep_for(milliseconds(300));
  const int second = slow_client();  // 16 MiB more would pass the address's 24 MiB
  const std::string refused = ReadAnswer(second);
  EXPECT_EQ(StatusOf(refused), 503) << refused.substr(0, 200);
  EXPECT_NE(ErrorOf(refused).find("unread"), std::string::npos) << refused.substr(0, 300);
  close(second);
  // The first client trickles, 2 KiB every 200 ms: too little for its answer to move on (on
  // loopback the kernel does not even wake the server for it; where it would, the server counts
  // progress only by 64 KiB), so it is closed after about io_timeout_s, and its share of the
  // budget is free again (the kernel may still hand it what it had taken).
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    char chunk[2048];
    while (!stop && recv(first, chunk, sizeof chunk, 0) > 0) {
      std::this_thread::sleep_for(milliseconds(200));
    }
  });
  std::this_thread::sleep_for(milliseconds(2500));
  httplib::Client client("127.0.0.1", s.port());
  auto r = client.Get("/big");
  stop = true;
  shutdown(first, SHUT_RDWR);
  trickle.join();
  close(first);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "the trickling reader still holds its answer: "
                            << r->body.substr(0, 200);
  EXPECT_EQ(r->body.size(), big.size());
}

TEST(HttpServer, ReservedPrefixIsServedWhileEveryUserWorkerIsBusy) {
  HttpServerOptions options;
  options.threads = 2;
  options.reserved_threads = 1;
  Served s(options, [](HttpServer& server) {
    server.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(milliseconds(1500));
      res.set_content("slow", "text/plain");
    });
    server.Post("/v1/agent/heartbeat", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("beat " + req.body, "text/plain");
    });
  });
  std::vector<std::thread> users;
  for (int i = 0; i < 4; ++i) {
    users.emplace_back([&] {
      httplib::Client client("127.0.0.1", s.port());
      client.set_read_timeout(10, 0);
      auto r = client.Get("/slow");
      EXPECT_TRUE(r && r->status == 200);
    });
  }
  std::this_thread::sleep_for(milliseconds(200));
  httplib::Client agent("127.0.0.1", s.port());
  const auto asked = Clock::now();
  auto beat = agent.Post("/v1/agent/heartbeat", "n1", "text/plain");
  const double took = SecondsSince(asked);
  ASSERT_TRUE(beat);
  EXPECT_EQ(beat->body, "beat n1");
  EXPECT_LT(took, 0.5);
  // A user request waits for a user worker meanwhile.
  httplib::Client user("127.0.0.1", s.port());
  const auto user_asked = Clock::now();
  EXPECT_EQ(user.Get("/ping")->status, 200);
  EXPECT_GT(SecondsSince(user_asked), 0.5);
  for (auto& t : users) t.join();
}

TEST(HttpServer, CompressedBodiesAre415AndNeverDecompressed) {
  Served s({});
  httplib::Client client("127.0.0.1", s.port());
  httplib::Headers headers = {{"Content-Encoding", "gzip"}};
  // A real gzip stream: 1 MiB of zeros.
  std::string gzip = {'\x1f', '\x8b', '\x08', '\0', '\0', '\0', '\0', '\0', '\0', '\x03'};
  gzip += std::string(1000, '\0');
  auto r = client.Post("/echo", headers, gzip, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  EXPECT_NE(nlohmann::json::parse(r->body)["error"].get<std::string>().find("gzip"),
            std::string::npos);
  EXPECT_EQ(s.handled(), 0);
  httplib::Headers identity = {{"Content-Encoding", "identity"}};
  auto plain = client.Post("/echo", identity, "abc", "text/plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->body, "3:abc");
}

TEST(HttpServer, AuthHookAnswersBeforeTheBodyIsSent) {
  std::atomic<int> hook_calls{0};
  std::atomic<bool> hook_saw_body{false};
  HttpServerOptions options;
  options.max_body_bytes = 200 << 20;  // the 100 MB below is within the limit: only auth stops it
  Served s(options, [&](HttpServer& server) {
    server.SetAuthHook([&](const httplib::Request& req, httplib::Response& res) {
      ++hook_calls;
      if (!req.body.empty()) hook_saw_body = true;
      if (req.get_header_value("Authorization") == "Bearer good") return true;
      res.status = 401;
      res.set_content(R"({"error":"unknown token"})", "application/json");
      return false;
    });
  });
  const int fd = Connect(s.port(), 2);
  ASSERT_GE(fd, 0);
  const auto start = Clock::now();
  // 100 MB announced, not a byte of it sent: the answer comes anyway.
  ASSERT_TRUE(
      SendAll(fd, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n"));
  const std::string answer = ReadAnswer(fd);
  EXPECT_EQ(StatusOf(answer), 401) << answer;
  EXPECT_EQ(ErrorOf(answer), "unknown token");
  EXPECT_LT(SecondsSince(start), 1.0);
  close(fd);
  EXPECT_EQ(s.handled(), 0);

  httplib::Client client("127.0.0.1", s.port());
  client.set_bearer_token_auth("good");
  auto ok = client.Post("/echo", std::string(30000, 'b'), "text/plain");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body.substr(0, 6), "30000:");
  // A small body comes with its head: the hook still sees the head only.
  auto small = client.Post("/echo", "abc", "text/plain");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->body, "3:abc");
  EXPECT_FALSE(hook_saw_body);
  EXPECT_EQ(hook_calls, 3);
  // Expect: 100-continue gets its interim answer once the hook has passed.
  const int fd2 = Connect(s.port(), 2);
  ASSERT_TRUE(SendAll(fd2,
                      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer good\r\n"
                      "Expect: 100-continue\r\nContent-Length: 3\r\n\r\n"));
  char interim[26] = {};
  ASSERT_EQ(recv(fd2, interim, 25, MSG_WAITALL), 25);
  EXPECT_EQ(std::string(interim), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(SendAll(fd2, "xyz"));
  EXPECT_EQ(BodyOf(ReadAnswer(fd2)), "3:xyz");
  close(fd2);
}

TEST(HttpServer, BodyLimitHoldsForEveryTransferCoding) {
  HttpServerOptions options;
  options.max_body_bytes = 64 * 1024;
  Served s(options);
  auto chunked = [](std::size_t chunks, std::size_t size) {
    std::string out =
        "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx\r\n", size);
    for (std::size_t i = 0; i < chunks; ++i) out += hex + std::string(size, 'c') + "\r\n";
    return out + "0\r\n\r\n";
  };
  {
    const int fd = Connect(s.port());
    std::thread sender([&] { SendAll(fd, chunked(100, 4096)); });
    const std::string answer = ReadAnswer(fd);
    EXPECT_EQ(StatusOf(answer), 413) << answer;
    EXPECT_NE(ErrorOf(answer), "");
    sender.join();
    close(fd);
  }
  {
    const int fd = Connect(s.port());
    ASSERT_TRUE(SendAll(fd, chunked(4, 1000)));
    const std::string answer = ReadAnswer(fd);
    EXPECT_EQ(StatusOf(answer), 200);
    EXPECT_EQ(BodyOf(answer), "4000:cccccccccccccccc");
    close(fd);
  }
  httplib::Client client("127.0.0.1", s.port());
  auto big = client.Post("/echo", std::string(65 * 1024, 'x'), "text/plain");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(s.handled(), 1);
}

TEST(HttpServer, HugeHeadsAre431WithBoundedMemory) {
  Served s({});
  std::string many = "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 200000; ++i) many += "X-H: v\r\n";
  many += "\r\n";
  const long rss_before = ProcessKib("VmRSS:");
  const int fd = Connect(s.port());
  std::thread sender([&] { SendAll(fd, many); });
  const std::string answer = ReadAnswer(fd);
  sender.join();
  close(fd);
  EXPECT_TRUE(answer.empty() || StatusOf(answer) == 431) << answer.substr(0, 200);
  if (!answer.empty()) {
    EXPECT_NE(ErrorOf(answer), "");
  }
  EXPECT_LT(ProcessKib("VmRSS:") - rss_before, 8 * 1024);

  std::string hundred_one = "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 100; ++i) hundred_one += "X-" + std::to_string(i) + ": v\r\n";
  const int fd2 = Connect(s.port());
  ASSERT_TRUE(SendAll(fd2, hundred_one + "\r\n"));
  const std::string answer2 = ReadAnswer(fd2);
  EXPECT_EQ(StatusOf(answer2), 431);
  EXPECT_NE(ErrorOf(answer2).find("too many header fields"), std::string::npos);
  close(fd2);
}

TEST(HttpServer, TwoThousandConcurrentConnectsAllSucceed) {
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_max < 5000) GTEST_SKIP() << "needs 5000 open files, the hard limit is lower";
  files.rlim_cur = std::max<rlim_t>(files.rlim_cur, 5000);
  setrlimit(RLIMIT_NOFILE, &files);
  HttpServerOptions options;
  options.max_connections_per_ip = 4096;
  Served s(options);
  constexpr int kClients = 2000;
  std::vector<int> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(s.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < kClients; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    const int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << std::strerror(errno);
    fds.push_back(fd);
  }
  int ok = 0;
  for (int fd : fds) {
    fcntl(fd, F_SETFL, 0);  // blocking: send waits for the connection to be established
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    SendAll(fd, "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  }
  for (int fd : fds) {
    const std::string answer = ReadToEnd(fd);
    if (StatusOf(answer) == 200 && BodyOf(answer) == "pong") ++ok;
    close(fd);
  }
  EXPECT_EQ(ok, kClients);
}

TEST(HttpServer, ConnectionCapsAnswer503) {
  HttpServerOptions options;
  options.max_connections_per_ip = 3;
  Served s(options);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(Connect(s.port()));
  std::this_thread::sleep_for(milliseconds(100));
  const int extra = Connect(s.port());
  const std::string answer = ReadToEnd(extra);
  EXPECT_EQ(StatusOf(answer), 503) << answer;
  EXPECT_NE(ErrorOf(answer).find("too many connections"), std::string::npos);
  close(extra);
  for (int fd : held) close(fd);
}

TEST(HttpServer, PipelinedAndKeptAliveRequestsAreAnsweredInOrder) {
  Served s({});
  const int fd = Connect(s.port());
  ASSERT_TRUE(SendAll(fd,
                      "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\nhi"
                      "GET /items/7/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(BodyOf(ReadAnswer(fd)), "pong");
  EXPECT_EQ(BodyOf(ReadAnswer(fd)), "2:hi");
  const std::string last = ReadToEnd(fd);
  EXPECT_NE(last.find("Connection: close"), std::string::npos);
  EXPECT_NE(last.find("\"id\":\"7\""), std::string::npos);
  close(fd);
}

// A standby controller stops serving either for a stop signal or because it won the lease
// (another thread's Stop): it must know which, or a SIGTERM that comes as it wins is lost. Each
// case runs in a child process, whose signal mask is its own.
TEST(ServeUntilStopSignal, SaysWhetherASignalStoppedIt) {
  for (const bool by_signal : {true, false}) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const sigset_t stop_signals = BlockStopSignals();
      HttpServer server({});
      if (!server.Bind({"127.0.0.1", 0})) _exit(10);
      std::thread stopper;
      if (!by_signal) {
        stopper = std::thread([&server] {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          server.Stop();
        });
      }
      if (write(ready[1], "r", 1) != 1) _exit(11);
      bool signalled = false;
      ServeUntilStopSignal(server, stop_signals, &signalled);
      if (stopper.joinable()) stopper.join();
      _exit(signalled ? 1 : 0);
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    close(ready[0]);
    if (by_signal) kill(pid, SIGTERM);  // blocked in the child until it waits for it
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "by_signal " << by_signal;
    EXPECT_EQ(WEXITSTATUS(status), by_signal ? 1 : 0) << "by_signal " << by_signal;
  }
}

TEST(HttpServer, BindServeAndStopKeepTheirContract) {
  HttpServer server({});
  auto port = server.Bind({"127.0.0.1", 0});
  ASSERT_TRUE(port);
  HttpServer second({});
  EXPECT_FALSE(second.Bind({"127.0.0.1", port.value()}));
  server.Stop();
  EXPECT_TRUE(server.Serve());  // a Stop before Serve is not lost

  HttpServer v6({});
  v6.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pong6", "text/plain");
  });
  auto address = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(address);
  auto v6_port = v6.Bind(address.value());
  if (!v6_port) GTEST_SKIP() << "no IPv6 loopback here: " << v6_port.error();
  std::thread serving([&] { EXPECT_TRUE(v6.Serve()); });
  httplib::Client client("::1", v6_port.value());
  auto r = client.Get("/ping");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "pong6");
  v6.Stop();
  serving.join();
}

// DNS rebinding: a web page on attacker.example whose name now resolves to 127.0.0.1 can make the
// browser fetch http://attacker.example:PORT/ and read the answer as its own. Before the check, a
// loopback server answered it like any other request.
TEST(HttpServer, ALoopbackListenerAnswersOnlyRequestsThatNameIt) {
  HttpServerOptions options;
  options.allowed_hosts = {"dev.example"};
  Served s(options);
  auto status_for = [&](const std::string& host_lines) {
    const int fd = Connect(s.port());
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(SendAll(fd, "GET /ping HTTP/1.1\r\n" + host_lines + "\r\n"));
    const std::string answer = ReadAnswer(fd);
    close(fd);
    return StatusOf(answer);
  };
  const std::string port = std::to_string(s.port());
  for (const std::string& host : std::vector<std::string>{
           "127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port,
           "app.localhost:" + port, "dev.example:" + port, "DEV.EXAMPLE."}) {
    EXPECT_EQ(status_for("Host: " + host + "\r\n"), 200) << host;
  }
  EXPECT_EQ(status_for(""), 200);  // HTTP/1.1 wants one, but no browser leaves it out
  for (const std::string& host :
       std::vector<std::string>{"attacker.example:" + port, "attacker.example",
                                "127.0.0.1.attacker.example", "localhost.attacker.example"}) {
    const int fd = Connect(s.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /ping HTTP/1.1\r\nHost: " + host + "\r\n\r\n"));
    const std::string answer = ReadAnswer(fd);
    close(fd);
    EXPECT_EQ(StatusOf(answer), 421) << host;
    EXPECT_NE(ErrorOf(answer).find("--allowed-host"), std::string::npos) << answer;
  }
  EXPECT_EQ(status_for("Host: 127.0.0.1\r\nHost: attacker.example\r\n"), 400);
  EXPECT_EQ(s.handled(), 0);

  // A listener on every address, reached at 127.0.0.1 (as a rebinding page reaches it), checks
  // too; this machine's own name is one of its names.
  HttpServer any({});
  any.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pong", "text/plain");
  });
  auto any_port = any.Bind({"0.0.0.0", 0});
  ASSERT_TRUE(any_port);
  std::thread serving([&] { EXPECT_TRUE(any.Serve()); });
  char hostname[256] = {};
  ASSERT_EQ(gethostname(hostname, sizeof hostname - 1), 0);
  for (const auto& [host, status] : std::vector<std::pair<std::string, int>>{
           {"gpu-controller.example", 421}, {hostname, 200}, {"127.0.0.1", 200}}) {
    const int fd = Connect(any_port.value());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /ping HTTP/1.1\r\nHost: " + host + "\r\n\r\n"));
    EXPECT_EQ(StatusOf(ReadAnswer(fd)), status) << host;
    close(fd);
  }
  any.Stop();
  serving.join();
}

// Reads from `fd` until `text` has arrived (or the read times out); returns all it read.
std::string ReadUntil(int fd, const std::string& text, std::string got = "") {
  char buffer[4096];
  while (got.find(text) == std::string::npos) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  return got;
}

TEST(HttpServer, StreamsSendAsTheyComeHoldNoWorkerAndEndWhenTheClientLeaves) {
  std::mutex mutex;
  std::vector<std::shared_ptr<EventStream>> streams;
  HttpServerOptions options;
  options.threads = 1;  // a held stream must not hold the only worker
  Served served(options, [&](HttpServer& server) {
    server.GetStream("/events", [&](const httplib::Request& req, httplib::Response& res)
                                    -> std::shared_ptr<EventStream> {
      if (req.has_param("deny")) {
        res.status = 403;
        res.set_content("{\"error\":\"no\"}", "application/json");
        return nullptr;
      }
      res.set_header("Content-Type", "text/event-stream");
      auto stream = std::make_shared<EventStream>();
      stream->Send(": hello\n\n");  // before the server attaches it: kept
      std::lock_guard<std::mutex> lock(mutex);
      streams.push_back(stream);
      return stream;
    });
  });
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return streams.size();
  };
  const int a = Connect(served.port());
  const int b = Connect(served.port());
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_TRUE(SendAll(a, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  ASSERT_TRUE(SendAll(b, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  std::string got_a = ReadUntil(a, ": hello\n\n");
  EXPECT_EQ(StatusOf(got_a), 200);
  EXPECT_NE(got_a.find("text/event-stream"), std::string::npos);
  EXPECT_EQ(got_a.find("Content-Length"), std::string::npos);
  EXPECT_NE(ReadUntil(b, ": hello\n\n").find(": hello"), std::string::npos);
  // Two streams open on one worker, and plain requests are still answered.
  httplib::Client client("127.0.0.1", served.port());
  auto ping = client.Get("/ping");
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->body, "pong");
  ASSERT_EQ(count(), 2u);
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_TRUE(streams[0]->Send("event: x\ndata: 1\n\n"));
  }
  EXPECT_NE(ReadUntil(a, "data: 1\n\n").find("event: x"), std::string::npos);
  // A handler that answers an error instead is a plain answer.
  auto denied = client.Get("/events?deny=1");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403);
  // The client leaves: the stream closes, and its sender learns it.
  close(a);
  std::shared_ptr<EventStream> first;
  {
    std::lock_guard<std::mutex> lock(mutex);
    first = streams[0];
  }
  const auto start = Clock::now();
  while (!first->closed() && SecondsSince(start) < 5) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_TRUE(first->closed());
  EXPECT_FALSE(first->Send("data: late\n\n"));
  // The sender closes: what was sent goes, then the connection ends.
  {
    std::lock_guard<std::mutex> lock(mutex);
    streams[1]->Send("data: last\n\n");
    streams[1]->Close();
  }
  EXPECT_NE(ReadToEnd(b).find("data: last"), std::string::npos);
  close(b);
}

TEST(EventStream, AClientThatDoesNotReadIsCutOffNotBuffered) {
  EventStream stream;
  const std::string chunk(64 * 1024, 'x');
  int sent = 0;
  while (stream.Send(chunk) && sent < 1000) ++sent;
  EXPECT_EQ(sent, static_cast<int>(EventStream::kMaxPending / chunk.size()));
  EXPECT_TRUE(stream.closed());
  bool ended = false;
  EXPECT_TRUE(stream.Take(ended).empty());
  EXPECT_TRUE(ended);
}

TEST(ConnectionLimitKey, CountsIpv4AddressesAndIpv6Slash64s) {
  auto key = [](const char* text) {
    sockaddr_storage addr{};
    if (std::string(text).find(':') == std::string::npos) {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      a->sin_family = AF_INET;
      inet_pton(AF_INET, text, &a->sin_addr);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      a->sin6_family = AF_INET6;
      inet_pton(AF_INET6, text, &a->sin6_addr);
    }
    return ConnectionLimitKey(addr);
  };
  EXPECT_EQ(key("10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(key("::ffff:10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(key("2001:db8:1:2::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(key("2001:db8:1:2:ffff:eeee:dddd:cccc"), key("2001:db8:1:2::1"));
  EXPECT_NE(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
  EXPECT_EQ(key("::1"), "::/64");
}

}  // namespace
}  // namespace gpufleet::net
