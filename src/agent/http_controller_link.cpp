#include "agent/http_controller_link.h"

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
    auto made = net::HttpClient::ForUrl(url_);
    if (!made) return core::Error{"bad controller URL " + made.error()};
    client_.emplace(std::move(made).value());
    client_->SetTrust(trust_);
    client_->SetBearerToken(token_);
    client_->SetTimeouts(2000, 5000 + static_cast<int>(long_poll_ms_));
  }
  auto res = client_->Post("/v1/agent/heartbeat", net::ToJson(beat), "application/json");
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
