#include "net/http_server.h"

#include <pthread.h>
#include <sys/socket.h>

#include <charconv>
#include <chrono>
#include <thread>

namespace gpufleet::net {

core::Result<ListenAddress> ParseListenAddress(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return core::Error{"--listen '" + text + "': expected HOST:PORT, e.g. 127.0.0.1:9400"};
  }
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  int value = -1;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535) {
    return core::Error{"--listen '" + text + "': port '" + port + "' is not a number in 0..65535"};
  }
  address.port = value;
  return address;
}

HttpServer::HttpServer(const HttpServerOptions& options) {
  const int threads = options.threads;
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_.set_payload_max_length(options.max_body_bytes);
  server_.set_read_timeout(options.io_timeout_s, 0);
  server_.set_write_timeout(options.io_timeout_s, 0);
  server_.set_keep_alive_timeout(options.keep_alive_s);
  // Answers are small and come in two writes (headers, body): without TCP_NODELAY, Nagle's
  // algorithm and the peer's delayed ACK add 40 ms to every request on a kept-alive connection.
  server_.set_tcp_nodelay(true);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would let a second server
  // silently share the port instead of failing to start.
  server_.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

core::Result<int> HttpServer::Bind(const ListenAddress& address) {
  if (address.port == 0) {
    const int port = server_.bind_to_any_port(address.host);
    if (port <= 0) return core::Error{"cannot listen on " + address.host + ": bind failed"};
    return port;
  }
  if (!server_.bind_to_port(address.host, address.port)) {
    return core::Error{"cannot listen on " + address.host + ":" + std::to_string(address.port) +
                       " (in use, or not an address of this machine)"};
  }
  return address.port;
}

bool HttpServer::Serve() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_requested_) return true;
    serving_ = true;
  }
  server_.listen_after_bind();
  finished_ = true;
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_requested_;
}

void HttpServer::Stop() {
  bool serving = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
    serving = serving_;
  }
  if (!serving) return;
  // httplib's stop() only works once the listen loop runs: wait for it (or for its end).
  while (!server_.is_running() && !finished_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_.stop();
}

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

bool ServeUntilStopSignal(HttpServer& server, const sigset_t& stop_signals) {
  // The signals are taken by a waiting thread, so shutdown runs as ordinary code rather than in
  // a signal handler.
  std::atomic<bool> stopping{false};
  std::thread waiter([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    if (!stopping.exchange(true)) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
    }
    server.Stop();
  });
  const bool clean = server.Serve();
  // Serve also returns when the listener fails: wake the waiter so it can be joined.
  if (!stopping.exchange(true)) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return clean;
}

}  // namespace gpufleet::net
