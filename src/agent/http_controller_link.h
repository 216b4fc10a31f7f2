#pragma once
// `HttpControllerLink`: a remote agent's link to its controller, POST /v1/agent/heartbeat over
// one kept-alive HTTP(S) connection (a TLS handshake per beat would cost the controller's I/O
// thread for every node every second). Given several controllers sharing one store, the beats
// follow the leader (net/failover_client.h): a beat that finds the old leader gone or a standby
// moves on to the leader in the same beat, looking for one for up to a heartbeat period.
#include <cstdint>
#include <optional>
#include <string>

#include "net/controller_link.h"
#include "net/failover_client.h"
#include "net/http_client.h"

namespace gpufleet::agent {

class HttpControllerLink final : public net::ControllerLink {
 public:
  // `url`: http://HOST:PORT or https://HOST:PORT, or several comma-separated; `token`: the
  // node's credential (or an admin's); `trust`: for https, the controllers' CA; `long_poll_ms`:
  // the longest a reply may be held (the heartbeat period).
  HttpControllerLink(std::string url, std::string token, net::TlsTrust trust,
                     int64_t long_poll_ms);
  core::Result<net::HeartbeatReply> Exchange(const net::Heartbeat& beat) override;

 private:
  const std::string url_;
  const std::string token_;
  const net::TlsTrust trust_;
  const int64_t long_poll_ms_;
  std::optional<net::FailoverHttpClient> client_;
};

}  // namespace gpufleet::agent
