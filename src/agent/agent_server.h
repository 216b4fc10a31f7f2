#pragma once
// `AgentServer`: the agent's HTTP endpoint on one address.
//   GET /metrics                   Prometheus text (metrics_text.h)
//   GET /healthz                   "ok" while the sampler runs
//   GET /v1/gpus                   the latest samples as JSON (sample_json.h)
//   GET /v1/gpus/<i>/history?seconds=N   history points and per-minute aggregates of GPU i
//   GET /v1/topology               the GPU common-ancestor matrix
// Anything else gets a 404 with a JSON error. Handlers only read the sampler's copies, so a slow
// driver never stalls a scrape.
#include <memory>
#include <string>

#include "agent/sample_json.h"
#include "core/result.h"
#include "gpu/sampler.h"

namespace gpufleet::agent {

struct ListenAddress {
  std::string host;
  int port = 0;  // 0: any free port
};
// Parses "HOST:PORT" ("127.0.0.1:9400", "[::1]:9400"); errors say what is wrong.
core::Result<ListenAddress> ParseListenAddress(const std::string& text);

class AgentServer {
 public:
  AgentServer(gpu::Sampler& sampler, HostInfo host);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Binds the address; returns the bound port (the chosen one when `address.port` is 0).
  core::Result<int> Bind(const ListenAddress& address);
  // Serves requests until Stop() is called (from any thread). False when the listener failed
  // without a Stop (the caller should exit with an error, so a supervisor restarts it).
  bool Serve();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufleet::agent
