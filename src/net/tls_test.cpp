// TLS end to end inside one process: the identity `up` makes, an HttpServer speaking TLS with it,
// and the HttpClient trusting its CA file or a pinned CA hash; and every way trust must fail.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "net/http_client.h"
#include "net/http_server.h"
#include "net/tls.h"
#include "net/tls_identity.h"

namespace gpufleet::net {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int Mode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
}

// Relays one connection from its own port to `target_port`, the client's first 64 bytes one at a
// time with a pause between them: a ClientHello that arrives in pieces.
class TrickleRelay {
 public:
  explicit TrickleRelay(int target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 1) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, target_port] { Run(target_port); });
  }
  ~TrickleRelay() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes a waiting accept
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }

 private:
  void Run(int target_port) {
    const int client = ::accept(listen_fd_, nullptr, nullptr);
    if (client < 0) return;
    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port));
    if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      char buffer[16384];
      int trickled = 0;
      while (::poll(fds, 2, 5000) > 0) {
        if (fds[0].revents != 0) {
          const std::size_t want = trickled < 64 ? 1 : sizeof buffer;
          const ssize_t n = ::recv(client, buffer, want, 0);
          if (n <= 0 || ::send(server, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) {
            break;
          }
          if (trickled < 64) {
            ++trickled;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }
        if (fds[1].revents != 0) {
          const ssize_t n = ::recv(server, buffer, sizeof buffer, 0);
          if (n <= 0 || ::send(client, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) {
            break;
          }
        }
      }
    }
    ::close(server);
    ::close(client);
  }
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnableHttpsClients();
    char tmpl[] = "/tmp/gpufleet-tls-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override {
    StopServer();
    fs::remove_all(dir_);
  }

  TlsIdentity MakeIdentity(const std::string& sub, const std::vector<std::string>& names) {
    auto id = EnsureTlsIdentity(dir_ + "/" + sub, names);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error());
    return id.ok() ? id.value() : TlsIdentity{};
  }

  // Starts a TLS server (`identity`) on 127.0.0.1 with /hello and /echo; returns its port.
  int StartServer(const TlsIdentity& identity, int deadline_ms = 10000) {
    HttpServerOptions options;
    auto ctx = TlsServerContext::Create(identity.chain_file, identity.key_file);
    EXPECT_TRUE(ctx.ok()) << (ctx.ok() ? "" : ctx.error());
    options.tls = ctx.value();
    options.request_deadline_ms = deadline_ms;
    options.max_body_bytes = 4 << 20;
    server_ = std::make_unique<HttpServer>(options);
    server_->Get("/hello", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"hello\":true}", "application/json");
    });
    server_->Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body + req.body, "application/octet-stream");
    });
    auto port = server_->Bind(ListenAddress{"127.0.0.1", 0});
    EXPECT_TRUE(port.ok());
    thread_ = std::thread([this] { server_->Serve(); });
    return port.value();
  }
  void StopServer() {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }

  HttpClient Client(const std::string& url, TlsTrust trust) {
    auto client = HttpClient::ForUrl(url);
    EXPECT_TRUE(client.ok());
    client.value().SetTrust(std::move(trust));
    client.value().SetTimeouts(2000, 5000);
    return std::move(client).value();
  }

  std::string dir_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(TlsTest, TheIdentityIsMadeOnceWithPrivateKeysAndKeptAcrossStarts) {
  const TlsIdentity first = MakeIdentity("tls", {"localhost", "127.0.0.1"});
  EXPECT_TRUE(first.issued_now);
  EXPECT_EQ(first.ca_sha256.size(), 64u);
  EXPECT_EQ(Mode(dir_ + "/tls"), 0700);
  EXPECT_EQ(Mode(dir_ + "/tls/ca.key"), 0600);
  EXPECT_EQ(Mode(first.key_file), 0600);
  const std::string chain = Slurp(first.chain_file);
  EXPECT_EQ(CertificateSha256(Slurp(first.ca_file)).value(), first.ca_sha256);

  const TlsIdentity again = MakeIdentity("tls", {"localhost", "127.0.0.1"});
  EXPECT_FALSE(again.issued_now) << "the same names need no new certificate";
  EXPECT_EQ(Slurp(again.chain_file), chain);

  // A new name: a new server certificate from the same CA.
  const TlsIdentity wider = MakeIdentity("tls", {"localhost", "127.0.0.1", "gpu-head.example"});
  EXPECT_TRUE(wider.issued_now);
  EXPECT_EQ(wider.ca_sha256, first.ca_sha256) << "the CA must survive, or every agent re-joins";
  EXPECT_NE(Slurp(wider.chain_file), chain);
}

TEST_F(TlsTest, NamesThatCouldInjectCertificateFieldsAreRefused) {
  const std::vector<std::string> bad_names = {"a,DNS:evil.example", "a b",        "",
                                              "-lead",              "x..y",       "IP:1.2.3.4",
                                              std::string("nul\0x", 5), "a/b"};
  for (const std::string& bad : bad_names) {
    auto id = EnsureTlsIdentity(dir_ + "/tls", {bad});
    EXPECT_FALSE(id.ok()) << "'" << bad << "'";
    if (!id.ok()) {
      EXPECT_EQ(id.failure().field, "tls-san");
    }
  }
  EXPECT_TRUE(ValidTlsName("gpu-01.cluster.example"));
  EXPECT_TRUE(ValidTlsName("10.1.2.3"));
  EXPECT_TRUE(ValidTlsName("fd00::1"));
}

TEST_F(TlsTest, ABrokenCaIsNeverReplacedSilently) {
  MakeIdentity("tls", {"localhost"});
  std::ofstream(dir_ + "/tls/ca.key") << "garbage\n";
  auto id = EnsureTlsIdentity(dir_ + "/tls", {"localhost"});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().find("ca.pem and ca.key"), std::string::npos) << id.error();
  EXPECT_EQ(Slurp(dir_ + "/tls/ca.key"), "garbage\n");
}

TEST_F(TlsTest, AClientTrustingTheCaFileTalksToTheServerAndReusesTheConnection) {
  const TlsIdentity id = MakeIdentity("tls", {"localhost", "127.0.0.1"});
  const int port = StartServer(id);
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    HttpClient client = Client("https://" + host + ":" + std::to_string(port), {id.ca_file, ""});
    auto reply = client.Get("/hello");
    ASSERT_TRUE(reply.ok()) << reply.error();
    EXPECT_EQ(reply.value().status, 200);
    EXPECT_EQ(reply.value().body, "{\"hello\":true}");
    // Larger than a TLS record both ways, on the same connection.
    const std::string big(300 * 1024, 'x');
    auto echo = client.Post("/echo", big, "application/octet-stream");
    ASSERT_TRUE(echo.ok()) << echo.error();
    EXPECT_EQ(echo.value().body.size(), 2 * big.size());
    auto again = client.Get("/hello");
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(client.VerifiedCaPem(), Slurp(id.ca_file));
  }
}

TEST_F(TlsTest, APinnedCaHashIsEnoughAndYieldsTheCaToKeep) {
  const TlsIdentity id = MakeIdentity("tls", {"127.0.0.1"});
  const int port = StartServer(id);
  HttpClient client = Client("https://127.0.0.1:" + std::to_string(port), {"", id.ca_sha256});
  auto reply = client.Get("/hello");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(client.VerifiedCaPem(), Slurp(id.ca_file));
}

TEST_F(TlsTest, TheWrongPinTheWrongCaOrTheWrongNameSendNothing) {
  const TlsIdentity id = MakeIdentity("tls", {"localhost"});  // not 127.0.0.1
  const TlsIdentity other = MakeIdentity("other", {"localhost", "127.0.0.1"});
  const int port = StartServer(id);
  const std::string by_ip = "https://127.0.0.1:" + std::to_string(port);
  const std::string by_name = "https://localhost:" + std::to_string(port);

  auto wrong_pin = Client(by_name, {"", other.ca_sha256}).Get("/hello");
  ASSERT_FALSE(wrong_pin.ok());
  EXPECT_NE(wrong_pin.error().find("does not present the CA"), std::string::npos)
      << wrong_pin.error();

  auto wrong_ca = Client(by_name, {other.ca_file, ""}).Get("/hello");
  ASSERT_FALSE(wrong_ca.ok());
  EXPECT_NE(wrong_ca.error().find("not trusted"), std::string::npos) << wrong_ca.error();

  auto wrong_name = Client(by_ip, {id.ca_file, ""}).Get("/hello");
  ASSERT_FALSE(wrong_name.ok());
  EXPECT_NE(wrong_name.error().find("--tls-san 127.0.0.1"), std::string::npos)
      << wrong_name.error();

  auto no_trust = Client(by_name, {}).Get("/hello");
  ASSERT_FALSE(no_trust.ok());
  EXPECT_NE(no_trust.error().find("--ca"), std::string::npos) << no_trust.error();
}

// Only the first byte of a connection may mark it as plain HTTP: a ClientHello in pieces is TLS
// (the second byte, 0x03, was once taken for plain HTTP).
TEST_F(TlsTest, AClientHelloThatArrivesInPiecesIsStillTls) {
  const TlsIdentity id = MakeIdentity("tls", {"127.0.0.1"});
  const int port = StartServer(id);
  TrickleRelay relay(port);
  ASSERT_GT(relay.port(), 0);
  auto reply = Client("https://127.0.0.1:" + std::to_string(relay.port()), {id.ca_file, ""})
                   .Get("/hello");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 200);
}

TEST_F(TlsTest, PlainHttpToTheTlsPortIsToldToUseHttps) {
  const TlsIdentity id = MakeIdentity("tls", {"127.0.0.1"});
  const int port = StartServer(id);
  auto client = HttpClient::ForUrl("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(client.ok());
  auto reply = client.value().Get("/hello");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply.value().status, 400);
  EXPECT_NE(reply.value().body.find("https"), std::string::npos) << reply.value().body;
}

TEST_F(TlsTest, HttpsToAPlainServerFailsInTheHandshake) {
  HttpServer plain(HttpServerOptions{});
  plain.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  const int port = plain.Bind(ListenAddress{"127.0.0.1", 0}).value();
  std::thread serving([&plain] { plain.Serve(); });
  const TlsIdentity id = MakeIdentity("tls", {"127.0.0.1"});
  auto reply = Client("https://127.0.0.1:" + std::to_string(port), {id.ca_file, ""}).Get("/hello");
  plain.Stop();
  serving.join();
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find("handshake"), std::string::npos) << reply.error();
}

TEST_F(TlsTest, AStalledHandshakeIsClosedAtTheRequestDeadline) {
  const TlsIdentity id = MakeIdentity("tls", {"127.0.0.1"});
  const int port = StartServer(id, /*deadline_ms=*/400);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const char hello_start = 0x16;  // the first byte of a ClientHello, and nothing more
  ASSERT_EQ(::send(fd, &hello_start, 1, 0), 1);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto start = std::chrono::steady_clock::now();
  char byte = 0;
  const ssize_t n = ::recv(fd, &byte, 1, 0);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  EXPECT_LE(n, 0) << "the server should close, not answer";
  EXPECT_LT(waited, 3.0) << "closed at about 0.4 s, not at the 5 s read timeout";
}

}  // namespace
}  // namespace gpufleet::net
