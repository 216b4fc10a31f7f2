#pragma once
// A blocking HTTP/1.1 client for one server at http://HOST:PORT, small enough that a command-line
// process pays almost nothing to load it: it needs only the C library (no TLS, no compression,
// no shared HTTP library). The `gpufleet` client commands use it; servers use cpp-httplib.
//
// Contract: one request at a time. The connection is kept alive between requests and opened
// again, once, when the server has closed it in between. Bodies may come with Content-Length,
// chunked, or up to the close of the connection. Errors name what failed (resolving, connecting,
// sending, reading, a malformed answer) and why.
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpufleet::net {

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
  // `url` is http://HOST[:PORT][/]; HOST may be a name, an IPv4 address or [IPv6]. The error
  // says what is wrong with it (https is refused: the servers speak plain HTTP).
  static core::Result<HttpClient> ForUrl(const std::string& url);

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

 private:
  HttpClient(std::string host, std::string port) : host_(std::move(host)), port_(std::move(port)) {}
  core::Result<bool> Connect();
  void Close();
  // Reads one answer from the open connection; `fresh` says whether anything was received.
  core::Result<HttpReply> ReadReply(bool& received_any);

  std::string host_;
  std::string port_;
  std::string token_;
  int connect_ms_ = 5000;
  int read_ms_ = 30000;
  int fd_ = -1;
  bool reusable_ = false;  // the open connection may carry another request
  std::string buffer_;     // bytes read past the previous answer
};

}  // namespace gpufleet::net
