#pragma once
// `gpufleet up`: the controller, the SQLite store and this machine's node agent (linked
// in-process) in one process. `gpufleet controller`: the same without the local node; agents
// join it with `gpufleet agent --controller URL`. The `server` layer assembles the controller
// and agent layers; the CLI only parses flags and calls RunUp.
#include <sys/types.h>

#include <string>
#include <vector>

namespace gpufleet::server {

struct UpOptions {
  std::string data_dir;  // where the store, logs and token live (the CLI resolves the default)
  std::string listen = "127.0.0.1:9500";
  int simulated_gpus = -1;  // -1: NVML, falling back to simulated GPUs without a driver
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string queue_policy = "priority-backfill";
  std::string placement_policy = "fgd-balance";
  double stop_grace_s = 10;
  double elastic_grow_after_s = 300;
  std::vector<std::string> queue_weights;  // "NAME=WEIGHT" (fair-share policies)
  std::string idle_timeout;                      // "30m" ("" or "0": off)
  std::vector<std::string> queue_idle_timeouts;  // "QUEUE=DURATION" ("QUEUE=0": exempt)
  std::string own_hardware;  // advise --sizing's cost of owning GPUs, a key = value file ("": defaults)
  double lease_s = 10;                     // a silent remote agent's node is lost after this long
  bool controller_only = false;  // `gpufleet controller`: no local node; agents join over HTTP
  std::string advertise = "127.0.0.1";      // the local node's address for multi-node jobs
  std::vector<std::string> run_as_maps;     // "NAME=ACCOUNT,..." (see agent/run_as.h)
  bool allow_root_jobs = false;             // jobs may run as root on the local node
  uid_t min_job_uid = 1000;                 // no job runs as a lower uid but root (run_as.h)
  bool shared_dev_shm = false;              // RunAsPolicy::shared_dev_shm
  int64_t log_limit_mib = 1024;             // each local job's log keeps this much (0: no cap)
  std::vector<std::string> max_priorities;  // "N" (every non-admin user) or "USER=N"
  int64_t max_jobs_per_user = 10000;        // ControllerOptions::max_live_jobs_per_user (0: no cap)
  // ControllerOptions::max_job_bytes_per_user (0: no cap).
  int64_t max_job_bytes_per_user = int64_t{1} << 30;
  std::string log_retention = "0";          // ended jobs' logs kept this long ("0": for good)
  std::string job_retention = "0";  // ended jobs (rows, history, usage, logs) kept this long
  int64_t log_quota_mib = 10240;            // each user's logs on the controller (0: no quota)
  std::string user_token_lifetime = "0";    // the longest a user token may work ("0": no cap)
  std::string tls = "auto";                 // auto (on unless listening on loopback), on, off
  std::vector<std::string> tls_names;       // --tls-san: more names for the certificate
  std::vector<std::string> allowed_hosts;   // --allowed-host (ApiServerOptions)
  std::string autoscale;  // --autoscale FILE.toml: grow and shrink the fleet (scale/, cloud/)
  std::string ui_dir;     // --ui-dir DIR: serve the dashboard's files from DIR (development)
  double user_write_rate = 50;     // --user-write-rate (ApiServerOptions)
  int64_t user_write_burst = 500;  // --user-write-burst
  bool metrics_auth = false;  // --metrics-auth: /metrics asks for a token (ApiServerOptions)
  bool behind_https_proxy = false;  // --behind-https-proxy (ApiServerOptions)
  // --store: "" keeps the fleet's state in SQLite in the data directory; a postgresql:// URI (or
  // libpq key=value string) keeps it in PostgreSQL, where several controllers may share it: one
  // leads, the others stand by and take over when its lease (`leader_lease_s`) runs out.
  std::string store;
  double leader_lease_s = 3;
  // Container jobs (core/container.h): image and mount-source prefixes the admin allows (none:
  // no container job), whether nodes may pull images, and the local node's runtime CLI.
  std::vector<std::string> container_allow_images;
  std::vector<std::string> container_allow_mounts;
  std::string container_pull = "never";
  std::string container_runtime = "podman";
};
// Serves until SIGINT or SIGTERM; returns the process's exit status (2: bad options). With a
// shared store it stands by until it leads, and stands by again if it loses the lead.
int RunUp(const UpOptions& options);

}  // namespace gpufleet::server
