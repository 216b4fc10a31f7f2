#include "agent/http_controller_link.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

namespace gpufleet::agent {

HttpControllerLink::HttpControllerLink(std::string url, std::string token, net::TlsTrust trust,
                                       int64_t long_poll_ms)
    : url_(std::move(url)),
      token_(std::move(token)),
      trust_(std::move(trust)),
      long_poll_ms_(long_poll_ms) {}

core::Result<net::HeartbeatReply> HttpControllerLink::Exchange(const net::Heartbeat& beat) {
  if (!client_) {
    auto made = net::FailoverHttpClient::ForUrls(url_);
    if (!made) return core::Error{"bad controller URL " + made.error()};
    client_.emplace(std::move(made).value());
    client_->SetTrust(trust_);
    client_->SetBearerToken(token_);
    client_->SetTimeouts(2000, 5000 + static_cast<int>(long_poll_ms_));
    // With several controllers, a beat looks for the leader for up to one period (the wait
    // before the next beat anyway), then reports the outage; the agent's jobs run on meanwhile.
    net::FailoverPolicy policy;
    policy.deadline_ms = static_cast<int>(std::clamp<int64_t>(long_poll_ms_, 1000, 15000));
    policy.rate_limited_wait_ms = 0;  // a beat waits for nothing: the next one comes soon
    client_->SetPolicy(policy);
  }
  // Repeatable: the heartbeat protocol is level-triggered, the same beat applied twice changes
  // nothing (net/node_protocol.h), so a beat whose answer was lost may go to the next controller.
  auto res = client_->Post("/v1/agent/heartbeat", net::ToJson(beat), "application/json",
                           net::Repeatable::kYes);
  if (!res) {
    return core::Error{"cannot reach the controller at " + url_ + " (" + res.error() + ")"};
  }
  if (res.value().status != 200) {
    const nlohmann::json body = nlohmann::json::parse(res.value().body, nullptr, false);
    return core::Error{"the controller refused the heartbeat: HTTP " +
                       std::to_string(res.value().status) + " " +
                       (body.is_object() ? body.value("error", res.value().body)
                                         : res.value().body)};
  }
  auto reply = net::ParseHeartbeatReply(res.value().body);
  if (!reply) return core::Error{"bad heartbeat reply: " + reply.error()};
  return std::move(reply).value();
}

}  // namespace gpufleet::agent
