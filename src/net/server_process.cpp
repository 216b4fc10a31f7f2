// The parts of http_server.h about a server process rather than a server: the --listen address
// parser and the SIGINT/SIGTERM handling.
#include <pthread.h>

#include <atomic>
#include <charconv>
#include <thread>

#include "net/http_server.h"

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

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

bool ServeUntilStopSignal(HttpServer& server, const sigset_t& stop_signals, bool* signalled) {
  // The signals are taken by a waiting thread, so shutdown runs as ordinary code rather than in
  // a signal handler.
  std::atomic<bool> stopping{false};
  if (signalled != nullptr) *signalled = false;
  std::thread waiter([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    if (!stopping.exchange(true)) {  // first: a signal from outside, not the wake-up below
      if (signalled != nullptr) *signalled = true;
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
