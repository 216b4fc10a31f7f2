#include "net/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <unordered_map>

#include "net/http_router.h"
#include "net/http_wire.h"
#include "net/tls.h"
#include "net/worker_pool.h"

namespace gpufleet::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
constexpr std::size_t kReadChunk = 16 * 1024;
// Answers up to this size are never refused for the unread budgets (errors, heartbeats, pings).
constexpr std::size_t kUnreadExemptBytes = 64 * 1024;
// A writing connection's deadline moves only after this much of its answer went out (or all).
constexpr std::size_t kMinWriteProgressBytes = 64 * 1024;
// After an answer that ends the connection, unread request bytes are drained for a while so that
// closing does not reset the connection before the client has read the answer.
constexpr auto kLingerTime = milliseconds(2000);
constexpr std::size_t kMaxLingerBytes = 16 << 20;
// How often deadlines are checked.
constexpr auto kTick = milliseconds(50);
// After an accept failure for want of file descriptors, the listener rests this long.
constexpr auto kAcceptPause = milliseconds(100);

// One request on its way through the server.
struct Exchange {
  httplib::Request req;
  httplib::Response res;
  bool head_only = false;  // HEAD: the answer goes without its body
  wire::Framing framing;
  bool admitted = false;   // the router's admission (pre-routing, auth hook) has passed
  std::string early_body;  // a body that came in with its head, kept from admission
  std::unique_ptr<wire::ChunkedDecoder> decoder;
};

// kAuth: run the auth hook only (the body is still unread); kFull: the whole request is here.
enum class Stage { kAuth, kFull };

struct Job {
  uint64_t conn_id = 0;
  Stage stage = Stage::kFull;
  std::unique_ptr<Exchange> ex;
};

// A worker's result, handed back to the I/O thread.
struct Completion {
  uint64_t conn_id = 0;
  std::unique_ptr<Exchange> ex;  // set when the auth hook passed: the body is read next
  std::string bytes;             // else the answer (the head only for a stream)
  bool close = false;
  std::shared_ptr<EventStream> stream;  // a streamed answer's body
};

// kStreaming: the answer is an EventStream's, sent as it comes, until either side closes it.
enum class ConnState { kHead, kAuth, kBody, kHandling, kWriting, kStreaming, kLinger };

struct Conn {
  uint64_t id = 0;
  int fd = -1;
  bool closed = false;
  std::string limit_key;  // what the per-client cap counts (ConnectionLimitKey)
  bool check_host = false;  // plain HTTP to a loopback address: Host must name this server
  // TLS (HttpServerOptions::tls): the session, whether its handshake is still on, what the
  // handshake waits for, and a read or write that waits for the other direction.
  SslPtr ssl;
  bool handshaking = false;
  bool first_byte_seen = false;  // whether the connection's first byte was checked for TLS
  uint32_t handshake_wants = 0;
  bool read_wants_write = false;
  bool write_wants_read = false;
  std::string ip;
  int port = 0;
  ConnState state = ConnState::kHead;
  std::string in;  // received, not yet parsed
  std::size_t head_scan = 0;
  std::string out;  // to send
  std::size_t out_pos = 0;
  std::size_t counted = 0;              // bytes of `out` counted in the server's unread totals
  std::size_t sent_since_progress = 0;  // sent since `write_progress` last moved
  bool close_after = false;
  std::unique_ptr<Exchange> ex;     // the request being read
  uint32_t events = 0;              // registered with epoll
  Clock::time_point idle_deadline;  // kHead, nothing received yet
  Clock::time_point deadline;       // kHead and kBody: the whole request
  Clock::time_point paused_at;      // kAuth: when the hook was queued
  Clock::time_point write_progress;
  Clock::time_point linger_until;
  std::size_t linger_bytes = 0;
  std::shared_ptr<EventStream> stream;  // kStreaming
};

std::string AddressText(const sockaddr_storage& addr, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  return text;
}

// Whether a bound address is a loopback one (127.0.0.0/8, ::1, or IPv4-mapped 127/8).
bool IsLoopback(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace

std::string ConnectionLimitKey(const sockaddr_storage& addr) {
  if (addr.ss_family != AF_INET6) {
    int port = 0;
    return AddressText(addr, port);
  }
  in6_addr a = reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr;
  char text[INET6_ADDRSTRLEN] = "";
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof text);
    return text;
  }
  std::fill(a.s6_addr + 8, a.s6_addr + 16, 0);
  inet_ntop(AF_INET6, &a, text, sizeof text);
  return std::string(text) + "/64";
}

struct HttpServer::Impl {
  explicit Impl(const HttpServerOptions& o) : options(o) {
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~Impl() {
    if (listen_fd >= 0) close(listen_fd);
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
  }

  // --- configuration (before Serve) -----------------------------------------------------------
  HttpServerOptions options;
  Router router;

  // --- Serve/Stop hand-off ---------------------------------------------------------------------
  std::mutex mutex;
  bool stop_requested = false;
  std::atomic<bool> stop_flag{false};
  int listen_fd = -1;
  // Names of this server besides HttpServerOptions::allowed_hosts: the machine's host name and
  // the name --listen gave (set by Bind, before Serve).
  std::vector<std::string> own_names;
  int epoll_fd = -1;
  int wake_fd = -1;

  // --- worker side -----------------------------------------------------------------------------
  std::unique_ptr<WorkerPool<Job>> user_pool;
  std::unique_ptr<WorkerPool<Job>> reserved_pool;
  std::mutex completions_mutex;
  std::vector<Completion> completions;
  std::vector<uint64_t> streams_ready;  // connections whose stream has bytes or closed

  // --- I/O thread only -------------------------------------------------------------------------
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, int> per_ip;
  // Answer bytes that wait for their clients (Conn::counted), in all and by limit key.
  std::size_t unread_total = 0;
  std::unordered_map<std::string, std::size_t> unread_by_key;
  std::vector<uint64_t> dead;
  int open_count = 0;
  uint64_t next_id = 2;
  bool stopping = false;
  Clock::time_point stop_deadline;
  bool listener_paused = false;
  Clock::time_point listener_resume;

  void Wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_fd, &one, sizeof one);
  }

  // ------------------------------------------------------------------ workers
  void RunJob(Job& job) {
    Exchange& ex = *job.ex;
    Completion done;
    done.conn_id = job.conn_id;
    try {
      bool answered = false;
      if (!ex.admitted) {
        answered = router.Admit(ex.req, ex.res);
        ex.admitted = !answered;
        if (!ex.early_body.empty()) ex.req.body = std::move(ex.early_body);
      }
      if (!answered && job.stage == Stage::kAuth) {
        done.ex = std::move(job.ex);  // admitted: the I/O thread reads the body next
        PostCompletion(std::move(done));
        return;
      }
      if (!answered) router.Handle(ex.req, ex.res, &done.stream);
    } catch (const std::exception& e) {
      ex.res = httplib::Response();
      ex.res.status = 500;
      ex.res.set_content(wire::ErrorJson(std::string("internal error: ") + e.what()),
                         "application/json");
    } catch (...) {
      ex.res = httplib::Response();
      ex.res.status = 500;
      ex.res.set_content(wire::ErrorJson("internal error"), "application/json");
    }
    if (done.stream && (ex.head_only || ex.res.status >= 300)) {
      done.stream->Detach();  // HEAD, or a handler that also answered an error: no stream
      done.stream.reset();
    }
    if (done.stream) {
      done.close = true;
      done.bytes = wire::FormatStreamHead(ex.res);
      PostCompletion(std::move(done));
      return;
    }
    // Answered before its body was read: the connection cannot carry another request.
    done.close = !ex.framing.keep_alive || job.stage == Stage::kAuth;
    done.bytes = wire::FormatResponse(ex.res, ex.head_only, !done.close);
    PostCompletion(std::move(done));
  }

  void PostCompletion(Completion done) {
    {
      std::lock_guard<std::mutex> lock(completions_mutex);
      completions.push_back(std::move(done));
    }
    Wake();
  }

  // ------------------------------------------------------------------ I/O thread
  void UpdateEvents(Conn& c) {
    if (c.closed) return;
    uint32_t want = 0;
    if (c.state == ConnState::kHead || c.state == ConnState::kBody ||
        c.state == ConnState::kStreaming || c.state == ConnState::kLinger) {
      want |= EPOLLIN;
    }
    if (c.out_pos < c.out.size()) want |= EPOLLOUT;
    if (c.handshaking) want = c.handshake_wants;
    if (c.read_wants_write) want |= EPOLLOUT;
    if (c.write_wants_read) want |= EPOLLIN;
    if (want == c.events) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = c.id;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
    c.events = want;
  }

  void Close(Conn& c) {
    if (c.closed) return;
    c.closed = true;
    Account(c);
    if (c.stream) {
      c.stream->Detach();
      c.stream.reset();
    }
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    c.ssl.reset();
    close(c.fd);
    c.fd = -1;
    --open_count;
    if (--per_ip[c.limit_key] <= 0) per_ip.erase(c.limit_key);
    dead.push_back(c.id);
  }

  // Keeps the unread totals in step with what `c` holds to send (nothing once it is closed).
  void Account(Conn& c) {
    const std::size_t now = c.closed ? 0 : c.out.size() - c.out_pos;
    if (now == c.counted) return;
    std::size_t& by_key = unread_by_key[c.limit_key];
    unread_total = unread_total - c.counted + now;
    by_key = by_key - c.counted + now;
    if (by_key == 0) unread_by_key.erase(c.limit_key);
    c.counted = now;
  }

  void QueueAnswer(Conn& c, std::string bytes, bool close_after) {
    if (bytes.size() > kUnreadExemptBytes) {
      const auto key = unread_by_key.find(c.limit_key);
      const std::size_t by_key = key == unread_by_key.end() ? 0 : key->second;
      if (unread_total + bytes.size() > options.max_unread_bytes ||
          by_key + bytes.size() > options.max_unread_bytes_per_address) {
        httplib::Response res;
        res.status = 503;
        static const httplib::Request kNoRequest;
        router.ErrorAnswer(
            c.ex ? c.ex->req : kNoRequest, res,
            "too many answers wait unread" +
                std::string(by_key + bytes.size() > options.max_unread_bytes_per_address
                                ? " by this address"
                                : "") +
                "; read them, then ask again");
        bytes = wire::FormatResponse(res, false, false);
        close_after = true;
      }
    }
    c.ex.reset();
    c.state = ConnState::kWriting;
    c.close_after = close_after;
    c.write_progress = Clock::now();
    c.sent_since_progress = 0;
    if (c.out.empty()) {
      c.out = std::move(bytes);
    } else {
      c.out += bytes;
    }
    Flush(c);
  }

  // An error found while reading a request: answered at once, and the connection closes (the
  // rest of the request is not read).
  void LayerError(Conn& c, int status, const std::string& message,
                  const httplib::Request* req = nullptr) {
    httplib::Request empty;
    httplib::Response res;
    res.status = status;
    router.ErrorAnswer(req ? *req : empty, res, message);
    QueueAnswer(c, wire::FormatResponse(res, false, false), true);
  }

  // `n` more bytes of `c.out` went out: progress once kMinWriteProgressBytes have since the last
  // time (or the answer is out), so that trickle reads do not keep a connection's deadline away.
  void Progressed(Conn& c, std::size_t n) {
    c.sent_since_progress += n;
    if (c.sent_since_progress >= kMinWriteProgressBytes || c.out_pos == c.out.size()) {
      c.write_progress = Clock::now();
      c.sent_since_progress = 0;
    }
  }

  void Flush(Conn& c) {
    FlushOut(c);
    Account(c);
  }

  void FlushOut(Conn& c) {
    c.write_wants_read = false;
    while (!c.closed && c.ssl && c.out_pos < c.out.size()) {
      std::size_t n = 0;
      ERR_clear_error();
      if (SSL_write_ex(c.ssl.get(), c.out.data() + c.out_pos, c.out.size() - c.out_pos, &n) == 1) {
        c.out_pos += n;
        Progressed(c, n);
        continue;
      }
      const int error = SSL_get_error(c.ssl.get(), 0);
      ERR_clear_error();
      if (error == SSL_ERROR_WANT_WRITE) break;
      if (error == SSL_ERROR_WANT_READ) {
        c.write_wants_read = true;
        break;
      }
      Close(c);
      return;
    }
    while (!c.closed && !c.ssl && c.out_pos < c.out.size()) {
      const ssize_t n =
          send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<std::size_t>(n);
        Progressed(c, static_cast<std::size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        Close(c);
        return;
      }
    }
    if (c.out_pos == c.out.size()) {
      c.out.clear();
      c.out_pos = 0;
      if (c.state == ConnState::kWriting) {
        FinishAnswer(c);
        return;
      }
    }
    UpdateEvents(c);
  }

  void FinishAnswer(Conn& c) {
    const auto now = Clock::now();
    if (stopping) {
      Close(c);
      return;
    }
    if (c.close_after) {
      c.state = ConnState::kLinger;
      c.in.clear();
      if (c.ssl) {
        ERR_clear_error();
        SSL_shutdown(c.ssl.get());  // close_notify, best effort; the rest is drained raw
        ERR_clear_error();
        c.read_wants_write = c.write_wants_read = false;
      }
      shutdown(c.fd, SHUT_WR);
      c.linger_until = now + kLingerTime;
      UpdateEvents(c);
      return;
    }
    StartWaiting(c, now);
    UpdateEvents(c);
    Advance(c);  // a pipelined request may be here already
  }

  void StartWaiting(Conn& c, Clock::time_point now) {
    c.state = ConnState::kHead;
    c.head_scan = 0;
    c.idle_deadline = now + std::chrono::seconds(options.keep_alive_s);
    c.deadline = now + milliseconds(options.request_deadline_ms);
  }

  WorkerPool<Job>& PoolFor(const std::string& path) {
    if (reserved_pool && !options.reserved_prefix.empty() &&
        path.rfind(options.reserved_prefix, 0) == 0) {
      return *reserved_pool;
    }
    return *user_pool;
  }

  void Dispatch(Conn& c, Stage stage) {
    c.state = stage == Stage::kAuth ? ConnState::kAuth : ConnState::kHandling;
    c.paused_at = Clock::now();
    UpdateEvents(c);
    WorkerPool<Job>& pool = PoolFor(c.ex->req.path);
    pool.Push(Job{c.id, stage, std::move(c.ex)});
  }

  // A complete head: parse it, check the framing and the limits, then authenticate or read on.
  void StartRequest(Conn& c, std::string_view head) {
    c.ex = std::make_unique<Exchange>();
    Exchange& ex = *c.ex;
    httplib::Request& req = ex.req;
    req.remote_addr = c.ip;
    req.remote_port = c.port;
    if (auto error = wire::ParseHead(head, options.max_headers, req)) {
      LayerError(c, error->status, error->message, &req);
      return;
    }
    if (req.get_header_value_count("Host") > 1) {
      LayerError(c, 400, "Host: given more than once", &req);
      return;
    }
    if (c.check_host && !wire::HostAllowed(req.get_header_value("Host"), options.allowed_hosts) &&
        !wire::HostAllowed(req.get_header_value("Host"), own_names)) {
      const std::string host = req.get_header_value("Host").substr(0, 100);
      std::string name = host;  // without the port, as the flag takes it
      if (!name.empty() && name.front() != '[' && name.rfind(':') != std::string::npos) {
        name.resize(name.rfind(':'));
      }
      LayerError(
          c, 421,
          "Host: '" + host +
              "' is not a name of this server. Over loopback in plain HTTP, a name other than "
              "localhost, an IP address or this machine's own is what a web page using DNS "
              "rebinding sends; to accept that name, start the server with --allowed-host " +
              name,
          &req);
      return;
    }
    ex.head_only = req.method == "HEAD";
    if (auto error = wire::ReadFraming(req, options.max_body_bytes, ex.framing)) {
      LayerError(c, error->status, error->message, &req);
      return;
    }
    if (ex.framing.chunked) {
      ex.decoder = std::make_unique<wire::ChunkedDecoder>(options.max_body_bytes);
    }
    if (!ex.framing.chunked && ex.framing.content_length == 0) {
      Dispatch(c, Stage::kFull);
    } else if (router.AdmitsOnHead() && !ex.framing.chunked &&
               c.in.size() >= ex.framing.content_length) {
      // The body came in with the head (a small request): one trip to a worker, where admission
      // still sees the head only.
      ex.early_body = c.in.substr(0, ex.framing.content_length);
      c.in.erase(0, ex.framing.content_length);
      Dispatch(c, Stage::kFull);
    } else if (router.AdmitsOnHead()) {
      Dispatch(c, Stage::kAuth);
    } else {
      StartBody(c);
    }
  }

  void StartBody(Conn& c) {
    c.state = ConnState::kBody;
    if (!c.ex->framing.chunked) c.ex->req.body.reserve(c.ex->framing.content_length);
    if (c.ex->framing.expect_continue) {
      c.out += "HTTP/1.1 100 Continue\r\n\r\n";
      Flush(c);
    }
    UpdateEvents(c);
  }

  // Parses what has arrived, as far as the connection's state allows.
  void Advance(Conn& c) {
    while (!c.closed) {
      if (c.state == ConnState::kHead) {
        if (c.in.empty()) return;
        const std::size_t end = c.in.find("\r\n\r\n", c.head_scan);
        if (end == std::string::npos || end > options.max_header_bytes) {
          if (c.in.size() > options.max_header_bytes) {
            LayerError(
                c, 431,
                "request head larger than " + std::to_string(options.max_header_bytes) + " bytes");
            return;
          }
          c.head_scan = c.in.size() >= 3 ? c.in.size() - 3 : 0;
          return;
        }
        const std::string head = c.in.substr(0, end);
        c.in.erase(0, end + 4);
        c.head_scan = 0;
        StartRequest(c, head);
      } else if (c.state == ConnState::kBody) {
        Exchange& ex = *c.ex;
        if (ex.framing.chunked) {
          std::size_t pos = 0;
          const auto status = ex.decoder->Feed(c.in, pos, ex.req.body);
          c.in.erase(0, pos);
          if (status == wire::ChunkedDecoder::Status::kBad) {
            LayerError(c, 400, "malformed chunked body", &ex.req);
            return;
          }
          if (status == wire::ChunkedDecoder::Status::kTooLarge) {
            LayerError(c, 413,
                       "request body too large (the limit is " +
                           std::to_string(options.max_body_bytes) + " bytes)",
                       &ex.req);
            return;
          }
          if (status == wire::ChunkedDecoder::Status::kNeedMore) return;
        } else {
          const std::size_t take =
              std::min(ex.framing.content_length - ex.req.body.size(), c.in.size());
          ex.req.body.append(c.in, 0, take);
          c.in.erase(0, take);
          if (ex.req.body.size() < ex.framing.content_length) return;
        }
        Dispatch(c, Stage::kFull);
      } else {
        return;
      }
    }
  }

  // The TLS handshake, as far as the socket allows. A client that speaks plain HTTP to the TLS
  // port (its first byte is not a TLS handshake record's) is told so in plain HTTP.
  void Handshake(Conn& c) {
    if (!c.first_byte_seen) {
      // Only the connection's very first byte tells: later ones are the middle of a ClientHello
      // that came in pieces.
      char first = 0;
      const ssize_t peeked = recv(c.fd, &first, 1, MSG_PEEK);
      if (peeked == 1) {
        c.first_byte_seen = true;
        if (first != 0x16) {
          c.ssl.reset();
          c.handshaking = false;
          LayerError(c, 400, "this server speaks https: use an https:// URL");
          return;
        }
      }
    }
    ERR_clear_error();
    const int rc = SSL_do_handshake(c.ssl.get());
    if (rc == 1) {
      c.handshaking = false;
      c.handshake_wants = 0;
      UpdateEvents(c);
      Read(c);  // a request that came with the handshake's last flight
      return;
    }
    const int error = SSL_get_error(c.ssl.get(), rc);
    ERR_clear_error();
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      c.handshake_wants = error == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT;
      UpdateEvents(c);
      return;
    }
    Close(c);  // not TLS, or a failed handshake: nothing can be answered
  }

  // Decrypts what has arrived into `c.in`: one record from the socket, and whatever the session
  // still holds (the socket's level-triggered readiness brings the rest). False when closed.
  bool ReadTls(Conn& c) {
    c.read_wants_write = false;
    char buffer[kReadChunk];
    do {
      std::size_t n = 0;
      ERR_clear_error();
      if (SSL_read_ex(c.ssl.get(), buffer, sizeof buffer, &n) == 1) {
        c.in.append(buffer, n);
        continue;
      }
      const int error = SSL_get_error(c.ssl.get(), 0);
      ERR_clear_error();
      if (error == SSL_ERROR_WANT_READ) break;
      if (error == SSL_ERROR_WANT_WRITE) {
        c.read_wants_write = true;
        UpdateEvents(c);
        break;
      }
      Close(c);
      return false;
    } while (SSL_pending(c.ssl.get()) > 0);
    return true;
  }

  void Read(Conn& c) {
    if (c.ssl && c.handshaking) {
      Handshake(c);
      return;
    }
    if (c.ssl && c.state != ConnState::kLinger) {
      if (ReadTls(c)) {
        if (c.state == ConnState::kStreaming) {
          c.in.clear();  // a streamed answer's client has nothing more to say
        } else {
          Advance(c);
        }
      }
      return;
    }
    char buffer[kReadChunk];
    const ssize_t n = recv(c.fd, buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
      Close(c);
      return;
    }
    if (c.state == ConnState::kLinger || c.state == ConnState::kStreaming) {
      c.linger_bytes += static_cast<std::size_t>(n);
      if (c.linger_bytes > kMaxLingerBytes) Close(c);
      return;
    }
    c.in.append(buffer, static_cast<std::size_t>(n));
    Advance(c);
  }

  void Refuse(int fd, const std::string& why) {
    if (options.tls) {  // no handshake for a connection that is turned away
      close(fd);
      return;
    }
    httplib::Response res;
    res.status = 503;
    res.set_content(wire::ErrorJson(why), "application/json");
    const std::string bytes = wire::FormatResponse(res, false, false);
    [[maybe_unused]] const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    close(fd);
  }

  void Accept() {
    for (int i = 0; i < 1024; ++i) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          listener_paused = true;
          listener_resume = Clock::now() + kAcceptPause;
        }
        return;
      }
      int port = 0;
      std::string ip = AddressText(addr, port);
      if (open_count >= options.max_connections) {
        Refuse(fd, "too many connections (the limit is " + std::to_string(options.max_connections) +
                       ")");
        continue;
      }
      std::string key = ConnectionLimitKey(addr);
      auto found = per_ip.find(key);
      if (found != per_ip.end() && found->second >= options.max_connections_per_ip) {
        Refuse(fd, "too many connections from " + ip + " (the limit is " +
                       std::to_string(options.max_connections_per_ip) + ")");
        continue;
      }
      // Answers are small and come in one write, but a kept-alive client's next request must not
      // wait for the delayed ACK of this one.
      int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      auto conn = std::make_unique<Conn>();
      conn->id = next_id++;
      conn->fd = fd;
      conn->ip = std::move(ip);
      conn->limit_key = std::move(key);
      conn->port = port;
      if (!options.tls) {
        // Reached over loopback in plain HTTP: the requests must name this server (StartRequest).
        sockaddr_storage local{};
        socklen_t local_len = sizeof local;
        conn->check_host = getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0 &&
                           IsLoopback(local);
      } else {
        conn->ssl = NewSslOnSocket(options.tls->get(), fd);
        if (!conn->ssl) {
          ERR_clear_error();
          close(fd);
          continue;
        }
        SSL_set_accept_state(conn->ssl.get());
        conn->handshaking = true;
        conn->handshake_wants = EPOLLIN;
      }
      StartWaiting(*conn, Clock::now());
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = conn->id;
      if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        continue;
      }
      conn->events = EPOLLIN;
      ++open_count;
      ++per_ip[conn->limit_key];
      conns.emplace(conn->id, std::move(conn));
    }
  }

  void DrainCompletions() {
    std::vector<Completion> ready;
    {
      std::lock_guard<std::mutex> lock(completions_mutex);
      ready.swap(completions);
    }
    for (Completion& done : ready) {
      auto it = conns.find(done.conn_id);
      if (it == conns.end() || it->second->closed) continue;
      Conn& c = *it->second;
      if (done.stream) {
        StartStream(c, std::move(done));
      } else if (done.ex) {
        // The auth hook passed: read the body now, its wait not counted against the deadline.
        c.ex = std::move(done.ex);
        c.deadline += Clock::now() - c.paused_at;
        StartBody(c);
        Advance(c);
      } else {
        QueueAnswer(c, std::move(done.bytes), done.close);
      }
    }
  }

  // A streamed answer: its head goes now, its body as the stream's holder sends it.
  void StartStream(Conn& c, Completion done) {
    c.ex.reset();
    c.state = ConnState::kStreaming;
    c.linger_bytes = 0;
    c.stream = std::move(done.stream);
    c.out += done.bytes;
    c.write_progress = Clock::now();
    const uint64_t id = c.id;
    c.stream->Attach([this, id] {
      {
        std::lock_guard<std::mutex> lock(completions_mutex);
        streams_ready.push_back(id);
      }
      Wake();
    });
    Flush(c);
  }

  // Moves what streams have to send onto their connections.
  void DrainStreams() {
    std::vector<uint64_t> ready;
    {
      std::lock_guard<std::mutex> lock(completions_mutex);
      ready.swap(streams_ready);
    }
    for (uint64_t id : ready) {
      auto it = conns.find(id);
      if (it == conns.end() || it->second->closed || !it->second->stream) continue;
      Conn& c = *it->second;
      bool ended = false;
      std::string bytes = c.stream->Take(ended);
      if (c.out.size() - c.out_pos + bytes.size() > EventStream::kMaxPending) {
        Close(c);  // the client does not read
        continue;
      }
      c.out += bytes;
      if (ended) {
        c.stream->Detach();
        c.stream.reset();
        c.state = ConnState::kWriting;
        c.close_after = true;
        if (c.out_pos == c.out.size()) {
          FinishAnswer(c);
          continue;
        }
      }
      if (c.out_pos == c.out.size() - bytes.size()) c.write_progress = Clock::now();
      Flush(c);
    }
  }

  void CheckDeadlines(Clock::time_point now) {
    for (auto& [id, conn] : conns) {
      Conn& c = *conn;
      if (c.closed) continue;
      switch (c.state) {
        case ConnState::kHead:
          if (c.handshaking) {
            if (now >= c.deadline) Close(c);  // a handshake must finish within the deadline
          } else if (c.in.empty() && now >= c.idle_deadline) {
            Close(c);
          } else if (!c.in.empty() && now >= c.deadline) {
            LayerError(c, 408,
                       "request not received within " +
                           std::to_string(options.request_deadline_ms) + " ms");
          }
          break;
        case ConnState::kBody:
          if (now >= c.deadline) {
            LayerError(c, 408,
                       "request body not received within " +
                           std::to_string(options.request_deadline_ms) + " ms",
                       c.ex ? &c.ex->req : nullptr);
          }
          break;
        case ConnState::kWriting:
          if (now - c.write_progress >= std::chrono::seconds(options.io_timeout_s)) Close(c);
          break;
        case ConnState::kStreaming:  // only while something waits to be sent
          if (c.out_pos < c.out.size() &&
              now - c.write_progress >= std::chrono::seconds(options.io_timeout_s)) {
            Close(c);
          }
          break;
        case ConnState::kLinger:
          if (now >= c.linger_until) Close(c);
          break;
        case ConnState::kAuth:
        case ConnState::kHandling:
          break;
      }
    }
    if (listener_paused && !stopping && now >= listener_resume) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenerId;
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
      listener_paused = false;
    }
  }

  void BeginStop() {
    stopping = true;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
    close(listen_fd);
    listen_fd = -1;
    // Requests already with a worker are answered; the rest are dropped.
    for (auto& [id, conn] : conns) {
      if (conn->state != ConnState::kAuth && conn->state != ConnState::kHandling &&
          conn->state != ConnState::kWriting) {
        Close(*conn);
      }
    }
    stop_deadline = Clock::now() + std::chrono::seconds(std::max(options.io_timeout_s, 1));
  }

  void Reap() {
    for (uint64_t id : dead) conns.erase(id);
    dead.clear();
  }

  // The event loop; false when epoll itself fails.
  bool Loop() {
    epoll_event events[256];
    auto next_tick = Clock::now() + kTick;
    for (;;) {
      // Rounded up: truncated, the last millisecond before each tick was spent in a loop of
      // epoll_wait(0) calls (1.7% of a core for an idle agent, some 400 calls a second). With no
      // connection, no paused listener and no stop under way, no deadline can pass: sleep up to
      // a second (a new connection or Stop wakes the loop at once).
      const bool idle = open_count == 0 && !listener_paused && !stopping;
      const auto wait = idle ? milliseconds(1000)
                             : std::chrono::ceil<milliseconds>(next_tick - Clock::now());
      const int n = epoll_wait(epoll_fd, events, 256, std::max<int>(0, wait.count()));
      if (n < 0 && errno != EINTR) return false;
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kListenerId) {
          if (!stopping) Accept();
          continue;
        }
        if (id == kWakeId) {
          uint64_t count = 0;
          [[maybe_unused]] const ssize_t r = read(wake_fd, &count, sizeof count);
          continue;
        }
        auto it = conns.find(id);
        if (it == conns.end() || it->second->closed) continue;
        Conn& c = *it->second;
        if (events[i].events & (EPOLLERR | EPOLLHUP)) {
          Close(c);
          continue;
        }
        if (events[i].events & EPOLLIN) {
          if (c.write_wants_read) {
            Flush(c);
          } else {
            Read(c);
          }
        }
        if (!c.closed && (events[i].events & EPOLLOUT)) {
          if (c.handshaking || c.read_wants_write) {
            Read(c);
          } else {
            Flush(c);
          }
        }
      }
      DrainCompletions();
      DrainStreams();
      if (!stopping && stop_flag.load()) BeginStop();
      const auto now = Clock::now();
      if (now >= next_tick) {
        CheckDeadlines(now);
        next_tick = now + kTick;
      }
      Reap();
      if (stopping && (open_count == 0 || now >= stop_deadline)) return true;
    }
  }
};

HttpServer::HttpServer(const HttpServerOptions& options) : impl_(std::make_unique<Impl>(options)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Get(const std::string& pattern, Handler handler) {
  impl_->router.Add("GET", pattern, std::move(handler));
}
void HttpServer::Post(const std::string& pattern, Handler handler) {
  impl_->router.Add("POST", pattern, std::move(handler));
}
void HttpServer::Put(const std::string& pattern, Handler handler) {
  impl_->router.Add("PUT", pattern, std::move(handler));
}
void HttpServer::GetStream(const std::string& pattern, StreamHandler handler) {
  impl_->router.AddStream("GET", pattern, std::move(handler));
}
void HttpServer::Delete(const std::string& pattern, Handler handler) {
  impl_->router.Add("DELETE", pattern, std::move(handler));
}
void HttpServer::SetErrorHandler(Handler handler) {
  impl_->router.SetErrorHandler(std::move(handler));
}
void HttpServer::SetPreRoutingHandler(PreRoutingHandler handler) {
  impl_->router.SetPreRoutingHandler(std::move(handler));
}
void HttpServer::SetAuthHook(AuthHook hook) { impl_->router.SetAuthHook(std::move(hook)); }

void HttpServer::AllowHosts(std::vector<std::string> names) {
  impl_->options.allowed_hosts = std::move(names);
}

core::Result<int> HttpServer::Bind(const ListenAddress& address) {
  const std::string where = address.host + ":" + std::to_string(address.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(address.port);
  if (getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port_text.c_str(), &hints,
                  &found) != 0) {
    return core::Error{"cannot listen on " + where + ": not an address of this machine"};
  }
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: SO_REUSEPORT would let a second server silently share the port instead
    // of failing to start.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, impl_->options.listen_backlog) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    if (address.port == 0) return core::Error{"cannot listen on " + address.host + ": bind failed"};
    return core::Error{"cannot listen on " + where +
                       " (in use, or not an address of this machine)"};
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  int port = 0;
  AddressText(bound, port);
  // Each connection is a descriptor: make room for `max_connections` of them when the hard limit
  // allows (the usual soft limit of 1024 would refuse connections long before).
  rlimit files{};
  const rlim_t want = static_cast<rlim_t>(impl_->options.max_connections) + 256;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < want) {
    files.rlim_cur = std::min(want, files.rlim_max);
    setrlimit(RLIMIT_NOFILE, &files);
  }
  impl_->own_names.clear();
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) == 0 && hostname[0] != '\0') {
    impl_->own_names.emplace_back(hostname);
    // And its other names in /etc/hosts (Debian's "127.0.1.1 gpu01.example.com gpu01"), read
    // from the file: a DNS lookup could hold every server start for its timeout.
    std::ifstream hosts_file("/etc/hosts", std::ios::binary);
    std::string hosts(64 * 1024, '\0');
    hosts_file.read(hosts.data(), static_cast<std::streamsize>(hosts.size()));
    hosts.resize(static_cast<std::size_t>(hosts_file.gcount()));
    for (std::string& alias : wire::AliasesInHostsFile(hosts, hostname)) {
      impl_->own_names.push_back(std::move(alias));
    }
  }
  in6_addr literal{};
  if (!address.host.empty() && inet_pton(AF_INET, address.host.c_str(), &literal) != 1 &&
      inet_pton(AF_INET6, address.host.c_str(), &literal) != 1) {
    impl_->own_names.push_back(address.host);  // --listen by name: clients use that name
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->listen_fd >= 0) close(impl_->listen_fd);
  impl_->listen_fd = fd;
  return port;
}

bool HttpServer::Serve() {
  Impl& impl = *impl_;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    if (impl.stop_requested) return true;
    if (impl.listen_fd < 0 || impl.epoll_fd < 0 || impl.wake_fd < 0) return false;
  }
  auto run = [&impl](Job& job) { impl.RunJob(job); };
  impl.user_pool = std::make_unique<WorkerPool<Job>>(std::max(1, impl.options.threads), run);
  if (impl.options.reserved_threads > 0) {
    impl.reserved_pool = std::make_unique<WorkerPool<Job>>(impl.options.reserved_threads, run);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  epoll_ctl(impl.epoll_fd, EPOLL_CTL_ADD, impl.listen_fd, &ev);
  ev.data.u64 = kWakeId;
  epoll_ctl(impl.epoll_fd, EPOLL_CTL_ADD, impl.wake_fd, &ev);
  const bool clean = impl.Loop();
  for (auto& [id, conn] : impl.conns) impl.Close(*conn);
  impl.Reap();
  // Queued requests are dropped (their connections are gone); running handlers finish.
  impl.user_pool.reset();
  impl.reserved_pool.reset();
  for (Completion& done : impl.completions) {
    if (done.stream) done.stream->Detach();
  }
  impl.completions.clear();
  if (impl.listen_fd >= 0) {
    close(impl.listen_fd);
    impl.listen_fd = -1;
  }
  std::lock_guard<std::mutex> lock(impl.mutex);
  return clean || impl.stop_requested;
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop_requested = true;
  }
  impl_->stop_flag = true;
  impl_->Wake();
}

}  // namespace gpufleet::net
