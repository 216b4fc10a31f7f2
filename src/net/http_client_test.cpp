#include "net/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace gpufleet::net {
namespace {

// A loopback TCP server that hands each accepted connection to `serve` (one at a time) and
// counts the connections: the tests script the bytes the client sees.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
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
        if (::poll(&p, 1, 50) <= 0) continue;
        const int conn = ::accept(fd_, nullptr, nullptr);
        if (conn < 0) continue;
        ++accepted_;
        serve_(conn);
        ::close(conn);
      }
    });
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_; }

 private:
  std::function<void(int)> serve_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// One request's bytes (headers and Content-Length body), or "" at the end of the connection.
std::string ReadRequest(int fd) {
  std::string data;
  char buf[4096];
  for (;;) {
    const std::size_t end = data.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::size_t length = 0;
      const std::size_t cl = data.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) length = std::stoul(data.substr(cl + 16));
      if (data.size() >= end + 4 + length) return data;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    data.append(buf, static_cast<std::size_t>(n));
  }
}

void Write(int fd, const std::string& text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

HttpClient ClientFor(const ScriptedServer& server) {
  auto client = HttpClient::ForUrl(server.url());
  EXPECT_TRUE(client.ok());
  return std::move(client).value();
}

// What a GET gets from a server that answers it with `answer` (nothing: it closes at once).
core::Result<HttpReply> GetAnswered(const std::string& answer) {
  ScriptedServer server([&](int fd) {
    ReadRequest(fd);
    if (!answer.empty()) Write(fd, answer);
  });
  HttpClient client = ClientFor(server);
  return client.Get("/");
}

TEST(HttpClient, SendsOneWellFormedRequestWithTokenAndBody) {
  std::string seen;
  ScriptedServer server([&](int fd) {
    seen = ReadRequest(fd);
    Write(fd,
          "HTTP/1.1 201 Created\r\nContent-Length: 8\r\nContent-Type: application/json\r\n\r\n"
          "{\"id\":7}");
  });
  HttpClient client = ClientFor(server);
  client.SetBearerToken("secret-token");
  auto reply = client.Post("/v1/jobs", R"({"argv":["true"]})");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 201);
  EXPECT_EQ(reply.value().body, "{\"id\":7}");
  EXPECT_EQ(reply.value().Header("content-type"), "application/json");
  EXPECT_EQ(seen.rfind("POST /v1/jobs HTTP/1.1\r\n", 0), 0u) << seen;
  EXPECT_NE(seen.find("Authorization: Bearer secret-token\r\n"), std::string::npos);
  EXPECT_NE(seen.find("Content-Length: 17\r\n"), std::string::npos);
  EXPECT_NE(seen.find("\r\n\r\n{\"argv\":[\"true\"]}"), std::string::npos);
}

TEST(HttpClient, ReadsChunkedBodiesWithExtensionsAndTrailers) {
  auto reply = GetAnswered(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Job-State: RUNNING\r\n\r\n"
      "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().body, "hello, world");
  EXPECT_EQ(reply.value().Header("X-JOB-STATE"), "RUNNING");
}

TEST(HttpClient, ReadsABodyThatEndsWithTheConnection) {
  auto reply = GetAnswered("HTTP/1.0 200 OK\r\n\r\nall of it");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().body, "all of it");
}

TEST(HttpClient, KeepsTheConnectionForTheNextRequest) {
  ScriptedServer server([](int fd) {
    for (int i = 0; !ReadRequest(fd).empty(); ++i) {
      Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + std::to_string(i));
    }
  });
  HttpClient client = ClientFor(server);
  EXPECT_EQ(client.Get("/").value().body, "0");
  EXPECT_EQ(client.Get("/").value().body, "1");
  EXPECT_EQ(client.Get("/").value().body, "2");
  EXPECT_EQ(server.accepted(), 1);
}

TEST(HttpClient, SendsAgainOnANewConnectionWhenTheServerClosedTheKeptOne) {
  ScriptedServer server([](int fd) {
    ReadRequest(fd);  // answers one request, then closes without saying so
    Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  HttpClient client = ClientFor(server);
  ASSERT_TRUE(client.Get("/").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto second = client.Get("/");
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(second.value().body, "ok");
  EXPECT_EQ(server.accepted(), 2);
}

TEST(HttpClient, ConnectionCloseIsHonoured) {
  ScriptedServer server([](int fd) {
    ReadRequest(fd);
    Write(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
  });
  HttpClient client = ClientFor(server);
  ASSERT_TRUE(client.Get("/").ok());
  ASSERT_TRUE(client.Get("/").ok());
  EXPECT_EQ(server.accepted(), 2);
}

TEST(HttpClient, NamesWhatIsWrongWithABadAnswer) {
  struct Case {
    std::string answer;
    std::string expected;
  };
  const Case cases[] = {
      {"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP answer"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "closed the connection mid-answer"},
      {"HTTP/1.1 200 OK\r\nContent-Length: x1\r\n\r\n", "Content-Length is malformed"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size is malformed"},
      {"", "closed the connection without answering"},
      // A server's bytes in the error are made printable: they reach the user's terminal.
      {"HTTP/1.1 200 OK\r\nContent-Length: \x1b]52;c;eA==\x07\r\n\r\n",
       "Content-Length is malformed: '\\x1b]52;c;eA==\\x07'"},
      {"\x1b[2J\r\n\r\n", "not an HTTP answer: '\\x1b[2J'"},
  };
  for (const Case& c : cases) {
    auto reply = GetAnswered(c.answer);
    ASSERT_FALSE(reply.ok()) << c.answer;
    EXPECT_NE(reply.error().find(c.expected), std::string::npos) << reply.error();
  }
}

TEST(ReadHttpReply, ReadsFromAnyByteStreamWhateverHowItIsCut) {
  const std::string stream =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
      "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\nokNEXT";
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, stream.size()}) {
    std::string buffer;
    std::size_t delivered = 0;
    const HttpFill fill = [&]() -> core::Result<std::size_t> {
      const std::size_t n = std::min(piece, stream.size() - delivered);
      buffer.append(stream, delivered, n);
      delivered += n;
      return n;
    };
    bool keep_alive = false;
    auto first = ReadHttpReply(buffer, fill, keep_alive);
    ASSERT_TRUE(first.ok()) << first.error();
    EXPECT_EQ(first.value().body, "abc");
    EXPECT_TRUE(keep_alive);
    auto second = ReadHttpReply(buffer, fill, keep_alive);
    ASSERT_TRUE(second.ok()) << second.error();
    EXPECT_EQ(second.value().status, 201);
    EXPECT_EQ(second.value().body, "ok");
    EXPECT_FALSE(keep_alive);
    // Bytes past the answer stay in the buffer, or in the stream when not read yet.
    EXPECT_EQ(buffer + stream.substr(delivered), "NEXT");
  }
  std::string buffer = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort";
  bool keep_alive = false;
  auto cut = ReadHttpReply(
      buffer, [] { return core::Result<std::size_t>(std::size_t{0}); }, keep_alive);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().find("mid-answer"), std::string::npos) << cut.error();
}

TEST(HttpClient, GivesUpOnASilentServerAfterTheReadTimeout) {
  std::atomic<bool> release{false};
  ScriptedServer server([&](int fd) {
    ReadRequest(fd);
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  HttpClient client = ClientFor(server);
  client.SetTimeouts(1000, 200);
  auto reply = client.Get("/");
  release = true;
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find("no answer"), std::string::npos) << reply.error();
}

TEST(HttpClient, SkipsInterimAnswers) {
  auto reply =
      GetAnswered("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 200);
  EXPECT_EQ(reply.value().body, "final");
}

TEST(HttpClient, RefusesAnAnswerLargerThanAGibibyte) {
  auto reply = GetAnswered("HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\nabc");
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find("larger than 1 GiB"), std::string::npos) << reply.error();
}

TEST(HttpClient, ATimeoutOnAKeptConnectionIsNotSentAgain) {
  // The server may still be working on a request it has not answered: sending it again could
  // do it twice.
  std::atomic<int> requests{0};
  std::atomic<bool> release{false};
  ScriptedServer server([&](int fd) {
    while (!ReadRequest(fd).empty()) {
      if (++requests == 1) {
        Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        continue;
      }
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
  });
  HttpClient client = ClientFor(server);
  client.SetTimeouts(1000, 200);
  ASSERT_TRUE(client.Get("/").ok());
  auto second = client.Post("/v1/jobs", "{}");
  release = true;
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("no answer"), std::string::npos) << second.error();
  EXPECT_EQ(requests.load(), 2);
  EXPECT_EQ(server.accepted(), 1);
}

TEST(HttpClient, SaysWhenNothingListens) {
  int port = 0;
  {
    ScriptedServer server([](int) {});
    port = std::stoi(server.url().substr(server.url().rfind(':') + 1));
  }  // closed: nothing listens there now
  auto client = HttpClient::ForUrl("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(client.ok());
  auto reply = client.value().Get("/");
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find("cannot connect to 127.0.0.1:"), std::string::npos) << reply.error();
  EXPECT_NE(reply.error().find("refused"), std::string::npos) << reply.error();
}

TEST(HttpClient, ParsesServerUrls) {
  EXPECT_TRUE(HttpClient::ForUrl("http://127.0.0.1:8080").ok());
  EXPECT_TRUE(HttpClient::ForUrl("http://localhost:8080/").ok());
  EXPECT_TRUE(HttpClient::ForUrl("http://[::1]:8080").ok());
  EXPECT_TRUE(HttpClient::ForUrl("http://localhost").ok());
  EXPECT_TRUE(HttpClient::ForUrl("https://localhost").value().tls());
  EXPECT_FALSE(HttpClient::ForUrl("http://localhost").value().tls());
  const std::pair<const char*, const char*> bad[] = {
      {"ftp://127.0.0.1:1", "expected http://HOST:PORT or https://"},
      {"https://127.0.0.1:0", "port must be"},
      {"127.0.0.1:8080", "expected http://HOST:PORT"},
      {"http://:8080", "no host"},
      {"http://127.0.0.1:0", "port must be"},
      {"http://127.0.0.1:99999", "port must be"},
      {"http://127.0.0.1:80a", "port must be"},
      {"http://127.0.0.1:80/v1", "without a path"},
      {"http://[::1:80", "unclosed ["},
  };
  for (const auto& [url, expected] : bad) {
    auto client = HttpClient::ForUrl(url);
    ASSERT_FALSE(client.ok()) << url;
    EXPECT_NE(client.error().find(expected), std::string::npos) << url << ": " << client.error();
  }
}

}  // namespace
}  // namespace gpufleet::net
