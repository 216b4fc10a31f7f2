#pragma once
// `AgentServer`: the agent's HTTP endpoint on one address.
//   GET /metrics                   Prometheus text (metrics_text.h)
//   GET /healthz                   "ok" while the sampler runs
//   GET /v1/gpus                   the latest samples as JSON (sample_json.h)
//   GET /v1/gpus/<i>/history?seconds=N   history points and per-minute aggregates of GPU i
//   GET /v1/topology               the GPU common-ancestor and NVLink matrices
// Anything else gets a 404 with a JSON error. Handlers only read the sampler's copies, so a slow
// driver never stalls a scrape.
#include <memory>
#include <string>

#include "agent/sample_json.h"
#include "core/result.h"
#include "gpu/sampler.h"
#include "net/http_server.h"

namespace gpufleet::agent {

class AgentServer {
 public:
  AgentServer(gpu::Sampler& sampler, HostInfo host);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Binds the address; returns the bound port (the chosen one when `address.port` is 0).
  core::Result<int> Bind(const net::ListenAddress& address);
  // The server, for Serve/Stop (net::HttpServer's contract).
  net::HttpServer& http();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufleet::agent
