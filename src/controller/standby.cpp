#include "controller/standby.h"

#include <nlohmann/json.hpp>

namespace gpufleet::controller {

void AnswerStandby(httplib::Response& res, const store::LeaderInfo& leader) {
  res.status = 503;
  res.set_header("X-Gpufleet-Role", "standby");
  res.set_header("X-Gpufleet-Leader", leader.url);
  res.set_header("Retry-After", "1");
  const std::string who =
      leader.url.empty() ? std::string("no leader is known yet")
                         : "the leader is " + leader.url + " (epoch " +
                               std::to_string(leader.epoch) + ")";
  const nlohmann::json body = {{"error", "this controller is a standby: " + who},
                               {"code", "unavailable"},
                               {"role", "standby"},
                               {"leader", leader.url}};
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                  "application/json");
}

std::string HealthJson(bool leading, const store::LeaderInfo& leader) {
  const nlohmann::json body = {{"status", "ok"},
                               {"role", leading ? "leader" : "standby"},
                               {"leader", leader.url},
                               {"epoch", leader.epoch}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {
net::HttpServerOptions Options(std::shared_ptr<net::TlsServerContext> tls) {
  net::HttpServerOptions o;
  o.threads = 2;
  o.tls = std::move(tls);
  return o;
}
}  // namespace

StandbyServer::StandbyServer(std::function<store::LeaderInfo()> leader,
                             std::shared_ptr<net::TlsServerContext> tls)
    : leader_(std::move(leader)), server_(Options(std::move(tls))) {
  server_.SetAuthHook([this](httplib::Request& req, httplib::Response& res) {
    if (req.path == "/healthz" && (req.method == "GET" || req.method == "HEAD")) return true;
    AnswerStandby(res, leader_());
    return false;
  });
  server_.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(HealthJson(false, leader_()), "application/json");
  });
}

core::Result<int> StandbyServer::Bind(const net::ListenAddress& address) {
  return server_.Bind(address);
}

}  // namespace gpufleet::controller
