#pragma once
// The node agent's two user-facing programs: `gpufleet agent` (sample the GPUs and serve them over
// HTTP until SIGINT/SIGTERM) and `gpufleet top` (a live terminal view, or one snapshot). Each
// returns the process exit code; errors go to stderr in one line that says what to do.
#include <string>

#include "agent/run_as.h"

namespace gpufleet::agent {

struct ProbeFlags {
  int simulated_gpus = -1;  // -1: NVML, falling back to simulated GPUs without a driver
  std::string simulated_model;  // the simulated GPUs' model, a catalog name ("" : H100 80GB)
  std::string nvml_library = "libnvidia-ml.so.1";
  double interval_s = 1.0;
  std::string hostname;  // "" : $NODE_NAME, else gethostname()
};

struct AgentOptions {
  ProbeFlags probe;
  std::string listen = "127.0.0.1:9400";
  // More names the agent may be reached by on a loopback --listen (--allowed-host;
  // net::HttpServerOptions::allowed_hosts).
  std::vector<std::string> allowed_hosts;
  bool print_symbols = false;  // print which NVML symbols resolved, then serve
  // Joining a controller (`gpufleet controller` or `gpufleet up`): empty for a metrics-only agent.
  std::string controller_url;
  std::string token;      // an admin token of the controller
  std::string data_dir;   // held jobs and their logs
  std::string advertise;  // the address other nodes reach this one at ("": the node name)
  double heartbeat_s = 1.0;
  RunAsPolicy run_as;  // --run-as-map, --allow-root-jobs
  // Traded once for this node's credential (<data_dir>/node-token). From a TLS controller it ends
  // in ".<sha256 of the cluster CA>", which the agent pins at the join (see net/tls.h).
  std::string join_token;
  // The CA an https controller is trusted by ("": <data_dir>/controller-ca.pem, which a pinned
  // join saves, or the join token's pin).
  std::string ca_file;
  int64_t log_limit_mib = 1024;  // each job's log keeps this much (0: no cap)
  std::string container_runtime = "podman";  // --container-runtime: podman, docker or a path
};
int RunAgent(const AgentOptions& options);

struct TopOptions {
  ProbeFlags probe;
  bool once = false;
  bool json = false;
  std::string sort = "m";  // m, s, p or u (see top_view.h)
};
int RunTop(const TopOptions& options);

}  // namespace gpufleet::agent
