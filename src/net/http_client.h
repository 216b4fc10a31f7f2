#pragma once
// A blocking HTTP/1.1 client for one server at http://HOST:PORT or https://HOST:PORT, small enough
// that a command-line process pays almost nothing to load it: the C library only. https goes
// through a TLS connector that a program registers (net/tls.h's EnableHttpsClients, which links
// OpenSSL); the static `gpufleet` client registers none and hands https work to `gpufleet-full`,
// since merely linking OpenSSL statically made each of its starts 3-4 ms slower here. The
// `gpufleet` client commands and the agents use it.
//
// Contract: one request at a time. The connection is kept alive between requests and opened
// again, once, when the server has closed it in between. Bodies may come with Content-Length,
// chunked, or up to the close of the connection. Errors name what failed (resolving, connecting,
// sending, reading, a malformed answer) and why; last_failure() says whether the server can have
// acted on a request that failed (net/failover_client.h re-sends on that ground).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpufleet::net {

// What an https connection trusts: a private cluster CA, never the system's store (net/tls.h).
struct TlsTrust {
  std::string ca_file;     // PEM file of the CA(s) to trust
  std::string pin_sha256;  // else: hex SHA-256 of the DER of the CA certificate to trust
  bool empty() const { return ca_file.empty() && pin_sha256.empty(); }
};

// The TLS side of one connection, verified before it is handed out (net/tls.h implements it).
class TlsStream {
 public:
  virtual ~TlsStream() = default;
  // Like send/recv on a blocking socket: bytes moved, 0 at a clean end (read), -1 on error.
  virtual long Write(const char* data, std::size_t size) = 0;
  virtual long Read(char* data, std::size_t size) = 0;
  // Decrypted bytes waiting: a read returns them without touching the socket.
  virtual bool HasBuffered() const = 0;
  // The PEM of the CA the server was verified against.
  virtual const std::string& AnchorPem() const = 0;
};
// Makes the TLS side of a connected blocking socket `fd` (not owned) to `host`, or says why not.
using TlsConnector = core::Result<std::unique_ptr<TlsStream>> (*)(int fd, const std::string& host,
                                                                 const TlsTrust& trust,
                                                                 int timeout_ms);
// Registers how https connections are made (once, at start); none: https URLs fail to connect.
void SetTlsConnector(TlsConnector connector);
bool HttpsAvailable();

struct HttpReply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // as received
  std::string body;

  // The first header with this name (case-insensitive), or "".
  std::string Header(const std::string& name) const;
};

// Reads one HTTP/1.1 answer from a byte stream: `buffer` holds what was received so far and keeps
// what follows the answer (the start of the next one); `fill` appends more of the stream to
// `buffer` and returns how many bytes, 0 at its end, or an error. `keep_alive` tells whether the
// stream may carry another answer. HttpClient reads its socket with this; it is public so that the
// parser can be tested and fuzzed without one.
using HttpFill = std::function<core::Result<std::size_t>()>;
core::Result<HttpReply> ReadHttpReply(std::string& buffer, const HttpFill& fill, bool& keep_alive);

class HttpClient {
 public:
  // `url` is http[s]://HOST[:PORT][/]; HOST may be a name, an IPv4 address or [IPv6]. The error
  // says what is wrong with it. An https client needs SetTrust before its first request.
  static core::Result<HttpClient> ForUrl(const std::string& url);
  // Whether the URL was https.
  bool tls() const { return tls_; }
  // The URL's host (without [] for IPv6) and port, as parsed.
  const std::string& host() const { return host_; }
  const std::string& port() const { return port_; }
  // What an https connection trusts (net/tls.h); unused for http.
  void SetTrust(TlsTrust trust) { trust_ = std::move(trust); }
  // After a request over https: the PEM of the CA the server's certificate was verified against
  // (to keep after a join that pinned it), else "".
  const std::string& VerifiedCaPem() const { return verified_ca_pem_; }

  HttpClient(HttpClient&& other) noexcept;
  HttpClient& operator=(HttpClient&& other) noexcept;
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  ~HttpClient();

  void SetBearerToken(std::string token) { token_ = std::move(token); }
  // Milliseconds allowed to connect, and to wait for each piece of the answer.
  void SetTimeouts(int connect_ms, int read_ms) {
    connect_ms_ = connect_ms;
    read_ms_ = read_ms;
  }

  core::Result<HttpReply> Get(const std::string& path) { return Send("GET", path, "", ""); }
  core::Result<HttpReply> Post(const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json") {
    return Send("POST", path, body, content_type);
  }
  // Any method; `content_type` is sent only with a body.
  core::Result<HttpReply> Send(const std::string& method, const std::string& path,
                               const std::string& body, const std::string& content_type);

  // How the last request failed, when it did.
  enum class Failure {
    kNone,     // it was answered (whatever the status)
    kNotSent,  // resolving, connecting or the TLS handshake failed, or the connection failed
               // before the whole request had left (or closed unanswered on a kept-alive
               // connection): the server cannot have acted on it
    kUnknown,  // the whole request was sent and no (complete) answer came: it may have been done
  };
  Failure last_failure() const { return last_failure_; }

 private:
  HttpClient(std::string host, std::string port, bool tls)
      : host_(std::move(host)), port_(std::move(port)), tls_(tls) {}
  core::Result<bool> Connect();
  void Close();
  // Reads one answer from the open connection; `fresh` says whether anything was received.
  core::Result<HttpReply> ReadReply(bool& received_any);

  std::string host_;
  std::string port_;
  bool tls_ = false;
  TlsTrust trust_;
  std::unique_ptr<TlsStream> session_;  // the open connection's TLS, when tls_
  std::string verified_ca_pem_;
  std::string token_;
  int connect_ms_ = 5000;
  int read_ms_ = 30000;
  int fd_ = -1;
  bool reusable_ = false;  // the open connection may carry another request
  Failure last_failure_ = Failure::kNone;
  std::string buffer_;     // bytes read past the previous answer
};

}  // namespace gpufleet::net
