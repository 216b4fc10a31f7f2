#pragma once
// `ApiServer`: the controller's HTTP/JSON API, under /v1, with bearer-token auth.
//   POST /v1/jobs                 submit; 201 {"id": N} once committed
//   GET  /v1/jobs?user=&state=&queue=&gpu_type=&sort=&order=&offset=&after=&limit=&total=1
//                                 list (users see their own; admins anyone's)
//   GET  /v1/jobs/<id>            one job
//   POST /v1/jobs/<id>/cancel     cancel
//   GET  /v1/jobs/<id>/logs?offset=N   the log from byte N (headers: X-Log-Size, X-Job-State)
//   GET  /v1/jobs/<id>/usage, /advice[?sizing=1&deadline_s=N], GET /v1/report?since=&by=
//                                 the advisor (controller/advice_routes.h)
//   GET  /v1/nodes                nodes: READY, LOST (missed its lease) or UNKNOWN
//   GET  /v1/gpus                 every node's latest GPU samples, as its agent sent them
//   POST /v1/agent/heartbeat      an agent's heartbeat (admin token); see net/node_protocol.h
//   GET  /v1/queue, GET /metrics (no auth)
//   GET  /healthz (no auth): {"status": "ok", "role": "leader"|"standby", "leader", "epoch"}
//   GET  /ui/, /v1/fleet, /v1/queues, /v1/events (SSE) ...: the dashboard (controller/ui_routes.h)
// Errors are JSON {"error": ..., "field": ...}: 400 for a bad field (named), 401 without a valid
// token, 404 for a job that does not exist or is not the caller's, 413 for bodies over 1 MiB.
#include <functional>
#include <memory>
#include <string>

#include "controller/controller.h"
#include "core/result.h"
#include "net/http_server.h"

namespace gpufleet::controller {

class Autoscaler;

struct ApiServerOptions {
  std::shared_ptr<net::TlsServerContext> tls;  // https when set
  std::string ca_sha256;  // the cluster CA's hash, appended to join tokens for agents to pin
  int64_t user_token_max_ttl_s = 0;  // AdminRouteOptions::user_token_max_ttl_s (0: no cap)
  // Users reach this plain-HTTP server through an https proxy that terminates TLS: the dashboard's
  // session cookie is made for https (Secure, __Host- prefixed) as when `tls` is set.
  bool behind_https_proxy = false;
  // More names the server may be reached by over loopback in plain HTTP (--allowed-host;
  // net::HttpServerOptions::allowed_hosts): a local proxy that passes its users' Host on needs
  // its public name here.
  std::vector<std::string> allowed_hosts;
  // Writing requests (POST, PUT, DELETE under /v1, the agents' aside) a user who is not an admin
  // may make: `user_write_rate` a second, `user_write_burst` at once (controller/write_rate.h);
  // more are answered 429 with Retry-After before their body is read. 0: no limit.
  double user_write_rate = 50;
  int64_t user_write_burst = 500;
  // Serve the dashboard's files from this directory, read at each request, instead of the
  // compiled-in copy (development; "": the compiled-in copy).
  std::string ui_dir;
  // GET /metrics asks for a user's bearer token (Prometheus: `authorization` in its scrape config)
  // and shows per-job series of the caller's own jobs only, or every job's to an admin. Off: open
  // to anyone who reaches the port, as Prometheus scrapes by default, every job's series included.
  bool metrics_need_token = false;
  // Leadership among controllers sharing a store (server/leader_lease.h): while `leading` says
  // no, every request but /healthz gets the standby's 503 naming `leader` (controller/standby.h).
  // Unset: this controller always leads (one machine's SQLite store).
  std::function<bool()> leading;
  std::function<store::LeaderInfo()> leader;
};

class ApiServer {
 public:
  explicit ApiServer(Controller& controller, const ApiServerOptions& options = {});
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  core::Result<int> Bind(const net::ListenAddress& address);  // port 0: any free port
  // Serves the autoscaler's routes and metrics, and node groups and prices in /v1/nodes; call
  // before the server serves (null: none, the default).
  void SetAutoscaler(const Autoscaler* autoscaler);
  // The server, for Serve/Stop (net::HttpServer's contract).
  net::HttpServer& http();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufleet::controller
