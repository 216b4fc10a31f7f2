#pragma once
// What a controller that does not lead says. Controllers sharing a PostgreSQL store elect one
// leader (store::Store::TryLead); the others stand by and answer every request but GET /healthz
// with 503 naming the leader, so that clients given several URLs move on to it (net/failover).
//   503 headers: X-Gpufleet-Role: standby, X-Gpufleet-Leader: URL ("" : none known),
//                Retry-After: 1
//   503 body:    {"error": "...", "code": "unavailable", "role": "standby", "leader": URL}
//   /healthz:    200 {"status": "ok", "role": "leader"|"standby", "leader": URL, "epoch": N}
#include <httplib.h>

#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "net/http_server.h"
#include "store/store.h"

namespace gpufleet::controller {

// Fills `res` with the standby's 503 naming `leader`.
void AnswerStandby(httplib::Response& res, const store::LeaderInfo& leader);
// The /healthz body: this controller's role and whom it knows to lead.
std::string HealthJson(bool leading, const store::LeaderInfo& leader);

// The whole API of a standby: GET /healthz, and the 503 above for anything else (no body is
// read). `leader` is asked at each request (it must be quick: a cached value).
class StandbyServer {
 public:
  explicit StandbyServer(std::function<store::LeaderInfo()> leader,
                         std::shared_ptr<net::TlsServerContext> tls = nullptr);
  core::Result<int> Bind(const net::ListenAddress& address);
  net::HttpServer& http() { return server_; }

 private:
  std::function<store::LeaderInfo()> leader_;
  net::HttpServer server_;
};

}  // namespace gpufleet::controller
