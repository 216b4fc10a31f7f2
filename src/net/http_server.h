#pragma once
// `HttpServer`: the one way gpufleet serves HTTP (the agent's endpoint, the controller's API):
// cpp-httplib with our defaults (a small worker pool, short keep-alive, bounded bodies and I/O
// timeouts, SO_REUSEADDR without SO_REUSEPORT so a second server on the port fails instead of
// sharing it) and a Serve/Stop hand-off that cannot lose a Stop issued before the listen loop
// starts. Also the listen-address parser and the SIGINT/SIGTERM handling of a server process.
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <string>

#include "core/result.h"

namespace gpufleet::net {

struct ListenAddress {
  std::string host;
  int port = 0;  // 0: any free port
};
// Parses "HOST:PORT" ("127.0.0.1:9400", "[::1]:9400"); errors say what is wrong.
core::Result<ListenAddress> ParseListenAddress(const std::string& text);

struct HttpServerOptions {
  int threads = 4;
  std::size_t max_body_bytes = 64 * 1024;
  int keep_alive_s = 2;
  int io_timeout_s = 5;
};

class HttpServer {
 public:
  explicit HttpServer(const HttpServerOptions& options);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Where handlers are registered.
  httplib::Server& routes() { return server_; }
  // Binds; returns the bound port (the chosen one when `address.port` is 0).
  core::Result<int> Bind(const ListenAddress& address);
  // Serves until Stop() (from any thread). False when the listener failed without a Stop, so the
  // caller can exit with an error and a supervisor restart it.
  bool Serve();
  void Stop();

 private:
  httplib::Server server_;
  std::mutex mutex_;
  bool stop_requested_ = false;
  bool serving_ = false;
  std::atomic<bool> finished_{false};
};

// Blocks SIGINT and SIGTERM in the calling thread; call it before any thread starts, so that all
// inherit the mask and the signals wait for ServeUntilStopSignal.
sigset_t BlockStopSignals();
// Serves until SIGINT or SIGTERM arrives, then stops the server; a second signal kills the
// process at once (should shutdown hang). Returns what Serve returned.
bool ServeUntilStopSignal(HttpServer& server, const sigset_t& stop_signals);

}  // namespace gpufleet::net
