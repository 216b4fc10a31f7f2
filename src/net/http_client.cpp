#include "net/http_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/text.h"

namespace gpufleet::net {
namespace {

constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
constexpr std::size_t kMaxBodyBytes = std::size_t{1} << 30;  // 1 GiB: more is not an answer of ours

TlsConnector tls_connector = nullptr;

core::Error Errno(const std::string& what) {
  return core::Error{what + ": " + std::strerror(errno)};
}

bool IEquals(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

std::string Trim(const std::string& s) {
  const std::size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

void SetTlsConnector(TlsConnector connector) { tls_connector = connector; }
bool HttpsAvailable() { return tls_connector != nullptr; }

std::string HttpReply::Header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (IEquals(key, name.c_str())) return value;
  }
  return "";
}

core::Result<HttpClient> HttpClient::ForUrl(const std::string& url) {
  const bool tls = url.rfind("https://", 0) == 0;
  const std::string scheme = tls ? "https://" : "http://";
  if (url.rfind(scheme, 0) != 0) {
    return core::Error{"'" + url + "': expected http://HOST:PORT or https://HOST:PORT"};
  }
  std::string rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    if (rest.find_first_not_of('/', slash) != std::string::npos) {
      return core::Error{"'" + url + "': expected http://HOST:PORT without a path"};
    }
    rest.resize(slash);
  }
  std::string host;
  std::string port = tls ? "443" : "80";
  if (!rest.empty() && rest[0] == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string::npos) return core::Error{"'" + url + "': unclosed [ in the host"};
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return core::Error{"'" + url + "': expected :PORT after ]"};
      port = rest.substr(close + 2);
    }
  } else {
    const std::size_t colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (host.empty()) return core::Error{"'" + url + "': no host"};
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
      std::stoi(port) > 65535) {
    return core::Error{"'" + url + "': the port must be a number from 1 to 65535"};
  }
  return HttpClient(host, port, tls);
}

HttpClient::HttpClient(HttpClient&& other) noexcept { *this = std::move(other); }

HttpClient& HttpClient::operator=(HttpClient&& other) noexcept {
  if (this != &other) {
    Close();
    host_ = std::move(other.host_);
    port_ = std::move(other.port_);
    tls_ = other.tls_;
    trust_ = std::move(other.trust_);
    session_ = std::move(other.session_);
    verified_ca_pem_ = std::move(other.verified_ca_pem_);
    token_ = std::move(other.token_);
    connect_ms_ = other.connect_ms_;
    read_ms_ = other.read_ms_;
    fd_ = other.fd_;
    reusable_ = other.reusable_;
    last_failure_ = other.last_failure_;
    buffer_ = std::move(other.buffer_);
    other.fd_ = -1;
    other.reusable_ = false;
  }
  return *this;
}

HttpClient::~HttpClient() { Close(); }

void HttpClient::Close() {
  session_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  reusable_ = false;
  buffer_.clear();
}

core::Result<bool> HttpClient::Connect() {
  Close();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host_.c_str(), port_.c_str(), &hints, &found); rc != 0) {
    return core::Error{"cannot resolve '" + host_ + "': " + gai_strerror(rc)};
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      do {
        rc = ::poll(&p, 1, connect_ms_);
      } while (rc < 0 && errno == EINTR);
      if (rc == 0) {
        errno = ETIMEDOUT;
        rc = -1;
      } else if (rc > 0) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        errno = err;
        rc = err == 0 ? 0 : -1;
      }
    }
    if (rc != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A server that stops reading must not block a send forever.
    const timeval send_timeout{read_ms_ / 1000, (read_ms_ % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    fd_ = fd;
    break;
  }
  freeaddrinfo(found);
  if (fd_ < 0) return core::Error{"cannot connect to " + host_ + ":" + port_ + ": " + why};
  if (tls_) {
    if (tls_connector == nullptr) {
      Close();
      return core::Error{"this program was built without https; use gpufleet-full"};
    }
    auto session = tls_connector(fd_, host_, trust_, connect_ms_);
    if (!session) {
      const core::Error error = session.failure();
      Close();
      return error;
    }
    session_ = std::move(session).value();
    verified_ca_pem_ = session_->AnchorPem();
    const timeval read_timeout{read_ms_ / 1000, (read_ms_ % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &read_timeout, sizeof read_timeout);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &read_timeout, sizeof read_timeout);
  }
  return true;
}

core::Result<HttpReply> HttpClient::Send(const std::string& method, const std::string& path,
                                         const std::string& body, const std::string& content_type) {
  const std::string host = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: " + host + ":" + port_ +
                        "\r\nAccept: application/json, */*\r\nUser-Agent: gpufleet\r\n";
  if (!token_.empty()) request += "Authorization: Bearer " + token_ + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT") {
    if (!body.empty()) request += "Content-Type: " + content_type + "\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n";
  request += body;  // one write: headers and body leave in one segment

  // A kept-alive connection the server closed meanwhile fails before any answer arrives; then
  // (and only then) the request is sent once more on a new connection.
  last_failure_ = Failure::kNotSent;
  for (int attempt = 0;; ++attempt) {
    const bool reused = fd_ >= 0 && reusable_;
    if (!reused) {
      auto connected = Connect();
      if (!connected) return core::Error{connected.error()};
    }
    std::size_t sent = 0;
    bool send_failed = false;
    while (sent < request.size()) {
      const ssize_t n =
          session_ ? session_->Write(request.data() + sent, request.size() - sent)
                   : ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        send_failed = true;
        break;
      }
      sent += static_cast<std::size_t>(n);
    }
    if (send_failed) {  // the server has not seen the request's end: it cannot act on it
      const core::Error error = Errno("cannot send the request");
      Close();
      if (reused && attempt == 0) continue;
      return error;
    }
    bool closed_unanswered = false;
    auto reply = ReadReply(closed_unanswered);
    if (!reply) {
      Close();
      // Only a connection the server had closed: never after a timeout, when the server may
      // still be working on the request.
      if (reused && attempt == 0 && closed_unanswered) continue;
      last_failure_ = Failure::kUnknown;
      return reply;
    }
    last_failure_ = Failure::kNone;
    return reply;
  }
}

core::Result<HttpReply> ReadHttpReply(std::string& buffer, const HttpFill& fill, bool& keep_alive) {
  // Makes buffer hold at least `size` bytes.
  auto need = [&](std::size_t size) -> core::Result<bool> {
    if (size > kMaxBodyBytes) return core::Error{"the answer is larger than 1 GiB"};
    while (buffer.size() < size) {
      auto n = fill();
      if (!n) return core::Error{n.error()};
      if (n.value() == 0) return core::Error{"the server closed the connection mid-answer"};
    }
    return true;
  };
  // One CRLF-terminated line, without the CRLF.
  auto line = [&]() -> core::Result<std::string> {
    std::size_t end;
    while ((end = buffer.find("\r\n")) == std::string::npos) {
      if (buffer.size() > kMaxHeaderBytes) return core::Error{"an answer line is too long"};
      auto n = fill();
      if (!n) return core::Error{n.error()};
      if (n.value() == 0) return core::Error{"the server closed the connection mid-answer"};
    }
    std::string text = buffer.substr(0, end);
    buffer.erase(0, end + 2);
    return text;
  };

  HttpReply reply;
  keep_alive = false;
  bool chunked = false;
  long long length = -1;
  do {  // once more after each interim (1xx) answer: the final one follows it
    std::size_t header_end;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (buffer.size() > kMaxHeaderBytes) return core::Error{"the answer's headers are too long"};
      auto n = fill();
      if (!n) return core::Error{n.error()};
      if (n.value() == 0) {
        return core::Error{buffer.empty() ? "the server closed the connection without answering"
                                          : "the server closed the connection mid-answer"};
      }
    }
    reply = HttpReply{};
    const std::string head = buffer.substr(0, header_end);
    buffer.erase(0, header_end + 4);
    std::size_t pos = head.find("\r\n");
    const std::string status_line = head.substr(0, pos);
    if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ' ||
        status_line.find_first_not_of("0123456789", 9) < 12) {
      return core::Error{"not an HTTP answer: '" + core::Printable(status_line.substr(0, 80)) +
                         "'"};
    }
    reply.status = std::stoi(status_line.substr(9, 3));
    keep_alive = status_line.rfind("HTTP/1.1", 0) == 0;
    chunked = false;
    length = -1;
    while (pos != std::string::npos) {
      const std::size_t start = pos + 2;
      pos = head.find("\r\n", start);
      const std::string field = head.substr(start, pos == std::string::npos ? pos : pos - start);
      const std::size_t colon = field.find(':');
      if (colon == std::string::npos) continue;
      std::string name = Trim(field.substr(0, colon));
      std::string value = Trim(field.substr(colon + 1));
      if (IEquals(name, "Content-Length")) {
        if (value.empty() || value.size() > 15 ||
            value.find_first_not_of("0123456789") != std::string::npos) {
          return core::Error{"the answer's Content-Length is malformed: '" +
                             core::Printable(value.substr(0, 64)) + "'"};
        }
        length = std::stoll(value);
      } else if (IEquals(name, "Transfer-Encoding")) {
        chunked = strcasestr(value.c_str(), "chunked") != nullptr;
      } else if (IEquals(name, "Connection")) {
        if (IEquals(value, "close")) keep_alive = false;
        if (IEquals(value, "keep-alive")) keep_alive = true;
      }
      reply.headers.emplace_back(std::move(name), std::move(value));
    }
  } while (reply.status >= 100 && reply.status < 200 && reply.status != 101);
  const bool no_body = reply.status == 204 || reply.status == 304 || reply.status < 200;
  if (no_body) {
  } else if (chunked) {
    for (;;) {
      auto size_line = line();
      if (!size_line) return core::Error{size_line.error()};
      const std::string hex = Trim(size_line.value().substr(0, size_line.value().find(';')));
      if (hex.empty() || hex.size() > 12 ||
          hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
        return core::Error{"the answer's chunk size is malformed: '" +
                           core::Printable(hex.substr(0, 64)) + "'"};
      }
      const std::size_t size = std::stoull(hex, nullptr, 16);
      if (size == 0) {
        for (;;) {  // trailer fields, up to an empty line
          auto trailer = line();
          if (!trailer) return core::Error{trailer.error()};
          if (trailer.value().empty()) break;
        }
        break;
      }
      // Each chunk is checked by need(); their sum here (endless chunks were unbounded).
      if (size > kMaxBodyBytes - reply.body.size()) {
        return core::Error{"the answer is larger than 1 GiB"};
      }
      if (auto ok = need(size + 2); !ok) return core::Error{ok.error()};
      reply.body.append(buffer, 0, size);
      buffer.erase(0, size + 2);
    }
  } else if (length >= 0) {
    if (auto ok = need(static_cast<std::size_t>(length)); !ok) return core::Error{ok.error()};
    if (buffer.size() == static_cast<std::size_t>(length)) {
      reply.body = std::move(buffer);
      buffer.clear();
    } else {
      reply.body = buffer.substr(0, static_cast<std::size_t>(length));
      buffer.erase(0, static_cast<std::size_t>(length));
    }
  } else {  // up to the close of the connection
    for (;;) {
      if (buffer.size() > kMaxBodyBytes) return core::Error{"the answer is larger than 1 GiB"};
      auto n = fill();
      if (!n) return core::Error{n.error()};
      if (n.value() == 0) break;
    }
    reply.body = std::move(buffer);
    buffer.clear();
    keep_alive = false;
  }
  return reply;
}

core::Result<HttpReply> HttpClient::ReadReply(bool& closed_unanswered) {
  bool received_any = false;
  // Appends what the socket has to buffer_; 0 at the end of the stream.
  auto fill = [&]() -> core::Result<std::size_t> {
    if (!session_ || !session_->HasBuffered()) {
      pollfd p{fd_, POLLIN, 0};
      int rc = 0;
      do {
        rc = ::poll(&p, 1, read_ms_);
      } while (rc < 0 && errno == EINTR);
      if (rc == 0) return core::Error{"no answer within " + std::to_string(read_ms_ / 1000) + " s"};
      if (rc < 0) return Errno("cannot read the answer");
    }
    char chunk[16384];
    ssize_t n = 0;
    do {
      errno = 0;
      n = session_ ? session_->Read(chunk, sizeof chunk) : ::recv(fd_, chunk, sizeof chunk, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (!received_any && errno == ECONNRESET) closed_unanswered = true;
      return Errno("cannot read the answer");
    }
    if (n == 0 && !received_any) closed_unanswered = true;
    if (n > 0) received_any = true;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return static_cast<std::size_t>(n);
  };
  bool keep_alive = false;
  auto reply = ReadHttpReply(buffer_, fill, keep_alive);
  if (!reply) return reply;
  if (keep_alive) {
    reusable_ = true;
  } else {
    Close();
  }
  return reply;
}

}  // namespace gpufleet::net
