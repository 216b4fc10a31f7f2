#pragma once
// `HttpServer`: the one way gpufleet serves HTTP (the agent's endpoint, the controller's API).
//
// One I/O thread (epoll) accepts connections and reads every request head and body itself, so a
// slow or hostile client costs a connection slot, never a worker; a complete request then runs
// on a worker pool (a separate pool for `reserved_prefix`, so agents' heartbeats never wait
// behind user requests). Every limit is enforced before a worker sees the request: a total
// deadline for the head and body, caps on connections (overall and per client address), on the
// header count and size, and on the body under every transfer coding; request bodies are never
// decompressed (a Content-Encoding other than identity is a 415). `SetAuthHook` runs with the
// head only, before any body byte is read. Errors the server raises itself are JSON
// (`{"error": "..."}`) with a proper status.
//
// Why not libmicrohttpd (0.9.75, Debian 12), the first choice as a packaged library: the errors it
// raises itself (malformed request line or header, a head over its memory pool, bad chunking) are
// fixed HTML pages with no hook to make them JSON; it has only an idle timeout, no total request
// deadline, and no way to close a connection from outside its callbacks; and a response cannot be
// queued in the middle of a body, so a chunked body over the limit could only be dropped, not
// answered 413. Each would need a workaround around the library; this file is smaller than those.
//
// Handlers keep cpp-httplib's signature and plain structs (`httplib::Request`/`Response`), and
// clients stay httplib. Also the listen-address parser and the SIGINT/SIGTERM handling of a server
// process.
#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "net/http_router.h"

namespace gpufleet::net {

class TlsServerContext;  // net/tls.h

struct ListenAddress {
  std::string host;
  int port = 0;  // 0: any free port
};
// Parses "HOST:PORT" ("127.0.0.1:9400", "[::1]:9400"); errors say what is wrong.
core::Result<ListenAddress> ParseListenAddress(const std::string& text);

struct HttpServerOptions {
  // Workers for requests outside `reserved_prefix` (and for all when `reserved_threads` is 0).
  int threads = 4;
  // Largest request body under any transfer coding; a larger one is answered 413.
  std::size_t max_body_bytes = 64 * 1024;
  // An idle kept-alive connection (no byte of a next request) is closed after this.
  int keep_alive_s = 2;
  // An answer the client does not read for this long is dropped with its connection; reading
  // counts only by `kMinWriteProgressBytes` (or the rest of the answer) at a time, so a client
  // that takes a byte now and then cannot hold an answer in memory for long.
  int io_timeout_s = 5;
  // Answer bytes waiting for their clients to read them, all connections together and those of
  // one client address (ConnectionLimitKey): an answer above 64 KiB that would pass either is
  // replaced by a 503, and its connection closed. Slow readers cannot take the server's memory.
  std::size_t max_unread_bytes = std::size_t{1} << 30;
  std::size_t max_unread_bytes_per_address = std::size_t{64} << 20;
  // The whole request (head and body) must arrive within this from the connection's opening or
  // its previous answer, else 408 and the connection is closed: slow-loris clients cannot stay.
  int request_deadline_ms = 10000;
  // Paths starting with this are served by their own pool of `reserved_threads` workers.
  std::string reserved_prefix = "/v1/agent/";
  // Workers of the reserved pool; 0: no reserved pool.
  int reserved_threads = 0;
  // Open connections at most; more are answered 503 and closed at once.
  int max_connections = 4096;
  // Open connections from one client address at most; more are answered 503 and closed.
  int max_connections_per_ip = 512;
  // Listen backlog: room for a burst of connects the I/O thread has not accepted yet.
  int listen_backlog = SOMAXCONN;
  // Request line plus header fields, in bytes, at most; more is answered 431.
  std::size_t max_header_bytes = 16 * 1024;
  // Header fields at most; more are answered 431.
  int max_headers = 100;
  // A plain-HTTP request that reached the server over loopback (a loopback listener, or one on
  // every address reached at 127.0.0.1) must name it in its Host header: an IP address,
  // "localhost" (or a name under ".localhost"), the machine's host name, the name Bind listened
  // on, or one of these ("*": any); else it is answered 421 before the auth hook
  // (wire::HostAllowed says why). Over TLS, or reached at another address, any Host is taken: a
  // rebinding page fails the certificate, and other clients name the server as they found it.
  std::vector<std::string> allowed_hosts;
  // When set, every connection speaks TLS (the handshake must finish within
  // `request_deadline_ms`); a plain-HTTP request to it is answered 400 in plain text and closed.
  std::shared_ptr<TlsServerContext> tls;
};

class HttpServer {
 public:
  using Handler = Router::Handler;
  // Returns false after filling the answer (a 401, unless it sets another status >= 400).
  using AuthHook = Router::AuthHook;
  using PreRoutingHandler = Router::PreRoutingHandler;
  using StreamHandler = Router::StreamHandler;

  explicit HttpServer(const HttpServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes, registered before Serve. `pattern` is a std::regex that must match the whole
  // (percent-decoded) path; its groups land in `req.matches`. HEAD is served by Get routes
  // without the body. A path no route matches is a 404, one that only other methods' routes
  // match a 405; both go through the error handler.
  void Get(const std::string& pattern, Handler handler);
  void Post(const std::string& pattern, Handler handler);
  void Put(const std::string& pattern, Handler handler);
  void Delete(const std::string& pattern, Handler handler);
  // A GET route whose answer streams (Server-Sent Events): the handler's stream is sent after
  // `res`'s status and headers, without a length, until either side closes it. Its connection
  // then carries nothing else; it costs no worker while open. HEAD gets the head only.
  void GetStream(const std::string& pattern, StreamHandler handler);
  // Called for the answers the server makes itself (404, 405, 400, 408, 411, 413, 415, 431,
  // 505...) with `res.status` set and an empty body; a body it leaves empty becomes
  // {"error": "<what went wrong>"}. Runs on the I/O thread for errors found while reading a
  // request, so it must be quick and must not block.
  void SetErrorHandler(Handler handler);
  // Runs on a worker before routing (and before the auth hook); `Handled` answers with `res`.
  void SetPreRoutingHandler(PreRoutingHandler handler);
  // Called on a worker once a request's head is complete, before any body byte is read; false
  // answers with what it filled (and drops the body unread).
  void SetAuthHook(AuthHook hook);

  // Replaces HttpServerOptions::allowed_hosts; call before Serve.
  void AllowHosts(std::vector<std::string> names);

  // Binds and listens; returns the bound port (the chosen one when `address.port` is 0). A port
  // in use fails (SO_REUSEADDR, never SO_REUSEPORT). Raises the soft limit on open files when
  // `max_connections` needs it.
  core::Result<int> Bind(const ListenAddress& address);
  // Serves until Stop() (from any thread; a Stop before Serve is not lost). False when the
  // listener failed without a Stop, so the caller can exit with an error and a supervisor restart
  // it.
  bool Serve();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What `max_connections_per_ip` counts for a client at `addr`: its IPv4 address (also when
// IPv4-mapped), or the /64 prefix of its IPv6 address ("2001:db8:1:2::/64"), since one host
// usually holds a whole /64 and could otherwise multiply its share.
std::string ConnectionLimitKey(const sockaddr_storage& addr);

// Blocks SIGINT and SIGTERM in the calling thread; call it before any thread starts, so that all
// inherit the mask and the signals wait for ServeUntilStopSignal.
sigset_t BlockStopSignals();
// Serves until SIGINT or SIGTERM arrives, then stops the server; a second signal kills the
// process at once (should shutdown hang). Returns what Serve returned; `signalled` (when given)
// says whether a signal stopped it, rather than another thread's server.Stop().
bool ServeUntilStopSignal(HttpServer& server, const sigset_t& stop_signals,
                          bool* signalled = nullptr);

}  // namespace gpufleet::net
