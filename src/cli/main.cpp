// gpufleet-full: every gpufleet command (servers, agent, simulator, top and the client commands).
// Users run `gpufleet`, which runs the client commands itself and execs this program, found beside
// it, for the others (see gpufleet_main.cpp). This file only parses the command line and hands the
// options to the command functions; it holds no logic of its own.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/agent_commands.h"
#include "cli/client_cli.h"
#include "cli/client_commands.h"
#include "cli/client_http.h"
#include "cli/full_commands.h"
#include "cli/placement_cli.h"
#include "cli/sim_run_command.h"
#include "core/node.h"
#include "net/tls.h"
#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "server/up_server.h"
#include "sim/synthetic_jobs.h"
#include "store/store.h"

namespace {

// `options` with its data directory resolved (--data-dir, else $GPUFLEET_DATA_DIR, else the
// default), as every command finds it.
gpufleet::server::UpOptions WithDataDir(gpufleet::server::UpOptions options) {
  options.data_dir = gpufleet::cli::DataDir(options.data_dir);
  return options;
}

// --allowed-host on the commands that serve HTTP (net::HttpServerOptions::allowed_hosts): a DNS
// name of up to 253 letters, digits, dots and dashes, or "*".
void AddAllowedHostOption(CLI::App* cmd, std::vector<std::string>& names) {
  cmd->add_option("--allowed-host", names,
                  "a name clients reach this server at over loopback in plain HTTP (repeatable; a "
                  "local proxy that passes its users' Host on, an /etc/hosts alias). There, only "
                  "IP addresses, localhost, this machine's name and the --listen name are taken "
                  "otherwise, which stops web pages that rebind their own name to 127.0.0.1. '*' "
                  "takes every name")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            if (name == "*") return "";
            if (name.empty() || name.size() > 253 ||
                name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789.-") != std::string::npos) {
              return "--allowed-host '" + name.substr(0, 100) +
                     "': expected a DNS name (letters, digits, dots, dashes; at most 253) or *";
            }
            return "";
          },
          "NAME"));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpufleet;
  net::EnableHttpsClients();  // agents and client commands may talk to https servers
  CLI::App app{cli::kAppDescription};
  app.name("gpufleet");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(cli::kVersion));

  CLI::App* sim = app.add_subcommand("sim", cli::FullCommandDescription("sim"));
  sim->require_subcommand(1);

  const std::string policy_help = "placement policy: " + sched::PlacementPolicyNames();

  cli::PlacementCommandOptions placement_options;
  cli::AddPlacementCommands(*sim, placement_options);

  cli::SimRunOptions run;
  CLI::App* run_cmd = sim->add_subcommand(
      "run", "Replay a job trace through the scheduler on a simulated cluster (JCT, queueing)");
  run_cmd->add_option("--trace", run.trace, "FORMAT:FILE, e.g. philly:philly_pollux_osdi21.csv")
      ->required();
  run_cmd->add_option("--cluster", run.cluster, "named cluster (philly-512)")
      ->capture_default_str();
  run_cmd->add_option("--policy", run.policy, "queue policy: " + sched::QueuePolicyNames())
      ->capture_default_str();
  run_cmd->add_option("--placement", run.placement, policy_help)->capture_default_str();
  run_cmd->add_option("--limit", run.limit, "replay only the first N jobs (0: all)");
  run_cmd->add_option("--window-start", run.window_start_h,
                      "hours after the first submit where the replay starts");
  run_cmd->add_option("--window-end", run.window_end_h,
                      "hours after the first submit where arrivals stop (0: none)");
  run_cmd
      ->add_option("--spread-slowdown", run.spread_slowdown,
                   "run-time factor of a job spread over more nodes than it needs")
      ->capture_default_str();
  run_cmd->add_option("--replicate", run.replicate,
                      "replay the trace K times over on a K times larger cluster (scaling runs)");
  run_cmd->add_option("--seed", run.seed, "seed for randomized policies")->capture_default_str();
  run_cmd->add_flag("--json", run.json, "print one JSON object");
  run_cmd->add_option("--decisions", run.decisions_path,
                      "write every start and finish to this CSV");
  // Elastic jobs in replay (docs/sim/elastic.md), for `sim run` and `sim compare`.
  auto add_elastic_flags = [](CLI::App* cmd, cli::SimRunOptions& o) {
    cmd->add_option("--elastic-fraction", o.elastic_fraction,
                    "make this fraction of whole-GPU jobs elastic (0..1)")
        ->capture_default_str();
    cmd->add_option("--elastic-min-factor", o.elastic_min_factor,
                    "an elastic job's fewest GPUs: its trace GPUs x this")
        ->capture_default_str();
    cmd->add_option("--elastic-max-factor", o.elastic_max_factor,
                    "an elastic job's most GPUs: its trace GPUs x this")
        ->capture_default_str();
    cmd->add_option("--elastic-efficiency", o.elastic_efficiency,
                    "speed-up model: each GPU past the first adds this of one GPU's throughput")
        ->capture_default_str();
    cmd->add_option("--elastic-grow-after", o.elastic_grow_after_s,
                    "seconds an elastic job runs after a start or resize before it may grow")
        ->capture_default_str();
  };
  add_elastic_flags(run_cmd, run);
  // Autoscaled replays (docs/scale.md), shared by `sim run` and the cost sweep of `sim compare`.
  auto add_fleet_flags = [](CLI::App* cmd, cli::SimRunOptions& o) {
    cmd->add_option("--spot-interruptions-per-node-hour", o.spot_interruptions_per_node_hour,
                    "spot interruptions, a Poisson rate per spot node-hour (default: AWS Spot "
                    "Instance Advisor's >20%/month bucket, see docs/scale.md)")
        ->capture_default_str();
    cmd->add_option("--checkpoint-interval", o.checkpoint_interval_s,
                    "seconds between a running job's checkpoints; an interrupted job redoes the "
                    "work since its last one (0: none)")
        ->capture_default_str();
    cmd->add_flag("--not-restartable", o.not_restartable,
                  "trace jobs may not use spot nodes (default: all restartable, DL training "
                  "with checkpoints)");
  };
  run_cmd->add_option("--autoscale", run.autoscale,
                      "FILE.toml: replay on a fleet the autoscaler buys from these node groups "
                      "(boot delays included; [provider] not needed; not with --cluster)");
  add_fleet_flags(run_cmd, run);
  run_cmd->callback([&] {
    run.cluster_given = run_cmd->count("--cluster") > 0;
    std::exit(cli::RunSimRun(run));
  });

  cli::SimGenerateOptions generate;
  CLI::App* generate_cmd = sim->add_subcommand(
      "generate", "Write a synthetic job trace (csv: format) for evaluation grids");
  generate_cmd
      ->add_option("--durations", generate.durations,
                   "run-time shape: " + std::string(sim::SyntheticDurationNames()))
      ->capture_default_str();
  generate_cmd
      ->add_option("--sizes", generate.sizes,
                   "GPU-count mix: " + std::string(sim::SyntheticSizeNames()))
      ->capture_default_str();
  generate_cmd->add_option("--jobs", generate.jobs, "number of jobs")->capture_default_str();
  generate_cmd->add_option("--cluster-gpus", generate.cluster_gpus, "GPUs of the target cluster")
      ->capture_default_str();
  generate_cmd
      ->add_option("--load", generate.load, "offered GPU demand as a fraction of the cluster")
      ->capture_default_str();
  generate_cmd->add_option("--queues", generate.queues, "number of VCs")->capture_default_str();
  generate_cmd->add_option("--seed", generate.seed, "random seed")->capture_default_str();
  generate_cmd->add_option("--out", generate.out, "write here (default: standard output)");
  generate_cmd->callback([&] { std::exit(cli::RunSimGenerate(generate)); });

  cli::SimCompareOptions compare;
  CLI::App* compare_cmd = sim->add_subcommand(
      "compare", "Replay one trace under several queue policies and print one table");
  compare_cmd->add_option("--trace", compare.run.trace, "FORMAT:FILE, e.g. philly:FILE")
      ->required();
  compare_cmd->add_option("--cluster", compare.run.cluster, "named cluster (philly-512)")
      ->capture_default_str();
  compare_cmd
      ->add_option("--policies", compare.policies,
                   "queue policies (default: all): " + sched::QueuePolicyNames())
      ->delimiter(',');
  compare_cmd->add_option("--placement", compare.run.placement, policy_help)->capture_default_str();
  compare_cmd->add_option("--limit", compare.run.limit, "replay only the first N jobs (0: all)");
  compare_cmd->add_option("--window-start", compare.run.window_start_h,
                          "hours after the first submit");
  compare_cmd->add_option("--window-end", compare.run.window_end_h,
                          "hours after the first submit (0: none)");
  compare_cmd
      ->add_option("--spread-slowdown", compare.run.spread_slowdown,
                   "run-time factor of a job spread over more nodes than it needs")
      ->capture_default_str();
  compare_cmd->add_option("--replicate", compare.run.replicate,
                          "replay the trace K times over on a K times larger cluster");
  compare_cmd->add_option("--out", compare.out_dir,
                          "write the table, a CSV, plots and index.html here");
  compare_cmd->add_option("--threads", compare.threads, "worker threads (0: all cores)");
  compare_cmd
      ->add_option("--static", compare.static_sizes,
                   "cost sweep: static clusters of these node counts, e.g. 32,64,128")
      ->delimiter(',');
  compare_cmd
      ->add_option("--autoscale", compare.autoscale_files,
                   "cost sweep: one autoscaled point per FILE.toml (labelled by its stem)")
      ->delimiter(',');
  compare_cmd->add_option("--seed", compare.run.seed, "seed for randomized policies")
      ->capture_default_str();
  add_fleet_flags(compare_cmd, compare.run);
  add_elastic_flags(compare_cmd, compare.run);
  compare_cmd->callback([&] { std::exit(cli::RunSimCompare(compare)); });

  // Flags shared by the commands that read this machine's GPUs.
  auto add_probe_flags = [](CLI::App* cmd, agent::ProbeFlags& flags) {
    cmd->add_option("--simulated-gpus", flags.simulated_gpus,
                    "use N simulated GPUs instead of NVML (0: none); without this flag, NVML is "
                    "used and simulated GPUs only when no driver is found")
        ->check(CLI::Range(0, 64));
    cmd->add_option("--simulated-gpu-model", flags.simulated_model,
                    "the model simulated GPUs report, a name of data/gpu_catalog.csv (default: "
                    "H100 80GB)")
        ->check([](const std::string& name) {
          return core::GpuCatalog::Builtin().Find(name)
                     ? std::string()
                     : "unknown GPU model '" + name + "' (see data/gpu_catalog.csv)";
        });
    cmd->add_option("--nvml-library", flags.nvml_library,
                    "NVML library to load (a path, or a name searched like dlopen does)")
        ->capture_default_str();
    cmd->add_option("--interval", flags.interval_s, "seconds between samples")
        ->capture_default_str();
    cmd->add_option("--hostname", flags.hostname,
                    "the Hostname label (default: $NODE_NAME, else this machine's name)");
  };

  // Whose account jobs run under (agent/run_as.h), for `agent` and `up`.
  auto add_run_as_flags = [](CLI::App* cmd, std::vector<std::string>& maps, bool& allow_root,
                             uid_t& min_uid, bool& shared_dev_shm) {
    cmd->add_option("--run-as-map", maps,
                    "run gpufleet user NAME's jobs as Unix account ACCOUNT: NAME=ACCOUNT[,...] "
                    "(default: the account named like the user; a user without one cannot run "
                    "jobs here)");
    cmd->add_flag("--allow-root-jobs", allow_root,
                  "let jobs run as root (a user named root, or mapped to it); refused without it");
    cmd->add_option("--min-job-uid", min_uid,
                    "run no job as an account with a uid below this (system accounts that own "
                    "services' data), root aside (--allow-root-jobs allows both); 0: no check")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 30));
    cmd->add_flag("--shared-dev-shm", shared_dev_shm,
                  "host jobs share the node's /dev/shm and System V IPC (by default each gets its "
                  "own, gone with it): for jobs that meet through them, or NVIDIA MPS");
  };
  auto add_log_limit_flag = [](CLI::App* cmd, int64_t& mib) {
    cmd->add_option("--log-limit", mib,
                    "MiB of output each job's log keeps; later output is dropped with a note "
                    "(0: no cap)")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  };
  // Which container jobs the controller accepts (core/container.h).
  auto add_container_flags = [](CLI::App* cmd, server::UpOptions& o) {
    cmd->add_option("--container-allow-image", o.container_allow_images,
                    "an image prefix container jobs may use, e.g. localhost/ or nvcr.io/nvidia/ "
                    "(repeatable; none: --image is refused)");
    cmd->add_option("--container-allow-mount", o.container_allow_mounts,
                    "a host directory container jobs may bind-mount from, or below (repeatable; "
                    "none: --mount is refused)");
    cmd->add_option("--container-pull", o.container_pull,
                    "whether nodes pull a job's image: never (only images already on the node), "
                    "if-missing, always")
        ->capture_default_str();
  };
  // TLS of the API, for `up` and `controller` (net/tls_identity.h).
  auto add_tls_flags = [](CLI::App* cmd, server::UpOptions& o) {
    cmd->add_option("--tls", o.tls,
                    "https for the API: auto (on unless --listen is a loopback address), on, "
                    "or off (plain HTTP: tokens and jobs travel in clear)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "on", "off"}));
    cmd->add_flag("--behind-https-proxy", o.behind_https_proxy,
                  "users reach the server through an https proxy that terminates TLS (--tls "
                  "off behind it): the dashboard's session cookie is then sent over https only "
                  "(Secure) and cannot be set by another host (__Host-); a proxy that passes its "
                  "users' Host header on needs that name in --allowed-host");
    AddAllowedHostOption(cmd, o.allowed_hosts);
    cmd->add_option("--tls-san", o.tls_names,
                    "a further DNS name or IP address agents and users reach the server at, for "
                    "its certificate (repeatable; this machine's names and addresses are in it)");
    cmd->add_option("--store", o.store,
                    "where the fleet's state lives: postgresql://USER@HOST/DB (or a libpq "
                    "connection string) to share it between controllers, one leading and the "
                    "others standing by (docs/cluster.md); default: SQLite in the data directory");
    cmd->add_option("--leader-lease", o.leader_lease_s,
                    "seconds a leading controller's lease lasts without renewal (shared store): "
                    "a standby takes over this long after the leader dies")
        ->capture_default_str();
  };
  auto add_priority_flag = [](CLI::App* cmd, std::vector<std::string>& values) {
    cmd->add_option("--max-priority", values,
                    "the highest job priority non-admin users may set: N for all of them, "
                    "USER=N for one (default 0: users can only lower their priority)");
  };
  auto add_jobs_cap_flag = [](CLI::App* cmd, server::UpOptions& o) {
    cmd->add_option("--max-jobs-per-user", o.max_jobs_per_user,
                    "the pending and running jobs one non-admin user may hold at once; a submit "
                    "beyond it is refused (403) until some end (0: no cap)")
        ->check(CLI::Range(int64_t{0}, int64_t{100000000}))
        ->capture_default_str();
    cmd->add_option("--max-job-bytes-per-user", o.max_job_bytes_per_user,
                    "the bytes of argv and env one non-admin user's jobs may keep in the store, "
                    "pending, running and ended (until --job-retention removes them); a submit "
                    "beyond it is refused (403) (0: no cap)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 50))
        ->capture_default_str();
  };
  auto add_token_lifetime_flag = [](CLI::App* cmd, server::UpOptions& o) {
    cmd->add_option("--user-token-lifetime", o.user_token_lifetime,
                    "the longest a user token made by `users add` or `token create` works, e.g. "
                    "90d; tokens made without --ttl get exactly this (0: no cap; the local "
                    "admin's token file is not affected)")
        ->capture_default_str();
  };
  auto add_log_retention_flags = [](CLI::App* cmd, server::UpOptions& o) {
    cmd->add_option("--log-retention", o.log_retention,
                    "remove an ended job's logs from the controller this long after it ended, "
                    "e.g. 30d (0: keep them)")
        ->capture_default_str();
    cmd->add_option("--job-retention", o.job_retention,
                    "remove an ended job (its record, history, usage and logs) this long after "
                    "it ended, e.g. 180d, as Slurm's PurgeJobAfter (0: keep every job)")
        ->capture_default_str();
    cmd->add_option("--log-quota", o.log_quota_mib,
                    "MiB of job logs each user may keep on the controller; over it, the user's "
                    "longest-ended jobs' logs are removed first, and their running jobs' "
                    "logs together stop growing here at it (the rest waits on the node) "
                    "(0: no quota)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
        ->capture_default_str();
  };
  auto add_idle_flags = [](CLI::App* cmd, server::UpOptions& o) {
    cmd->add_option("--idle-timeout", o.idle_timeout,
                    "stop a running job whose GPUs all stay idle (below 2% SM) this long, e.g. "
                    "30m: warned at 80% of it, then cancelled with the reason \"idle for 30 "
                    "min\" (default off)");
    cmd->add_option("--idle-timeout-queue", o.queue_idle_timeouts,
                    "QUEUE=DURATION: that queue's own idle timeout (0: its jobs are exempt), "
                    "e.g. interactive=4h (repeatable)");
    cmd->add_option("--autoscale", o.autoscale,
                    "grow and shrink the fleet from the queue: a TOML file of node groups, "
                    "prices, limits and the provider (docs/scale.md)");
    cmd->add_option("--ui-dir", o.ui_dir,
                    "serve the web dashboard (/ui/) from this directory (a checkout's web/), "
                    "read at each request, instead of the copy built in (development)");
    cmd->add_flag("--metrics-auth", o.metrics_auth,
                  "/metrics asks for a user's token (Prometheus: authorization in the scrape "
                  "config); by default it is open, the per-job series (ids and users) shown only "
                  "with a token: an admin's shows every job's, another user's their own jobs'");
    cmd->add_option("--user-write-rate", o.user_write_rate,
                    "writing requests (submit, cancel...) a second that each user but admins may "
                    "make, sustained; more are answered 429 with Retry-After, which the CLI "
                    "waits out (0: no limit)")
        ->capture_default_str()
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              char* end = nullptr;
              const double v = std::strtod(text.c_str(), &end);
              if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0 ||
                  (v > 0 && v < 0.001) || v > 1e6) {
                return "--user-write-rate '" + text.substr(0, 40) +
                       "': expected 0 (no limit) or 0.001 to 1000000 requests a second";
              }
              return "";
            },
            "RATE"));
    cmd->add_option("--user-write-burst", o.user_write_burst,
                    "writing requests a user may make at once before --user-write-rate applies")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
    cmd->add_option("--own-hardware", o.own_hardware,
                    "what owning GPUs costs, for `advise --sizing`: a key = value file like "
                    "data/own_hardware.example.conf (default: that file's values)");
  };
  agent::AgentOptions agent_options;
  CLI::App* agent_cmd = app.add_subcommand("agent", cli::FullCommandDescription("agent"));
  agent_cmd->add_option("--listen", agent_options.listen, "HOST:PORT to serve on (port 0: any)")
      ->capture_default_str();
  AddAllowedHostOption(agent_cmd, agent_options.allowed_hosts);
  add_probe_flags(agent_cmd, agent_options.probe);
  agent_cmd->add_flag("--print-symbols", agent_options.print_symbols,
                      "print which NVML entry points resolved to which symbols");
  std::string agent_token_file;
  agent_cmd->add_option("--controller", agent_options.controller_url,
                        "join this controller (http://HOST:PORT of `gpufleet controller` or "
                        "`gpufleet up`) and run the jobs it places here; or the comma-separated "
                        "URLs of controllers sharing one store: heartbeats follow the leader");
  agent_cmd->add_option("--token-file", agent_token_file,
                        "file holding the controller's admin token (default: $GPUFLEET_TOKEN, "
                        "else the token file in the data directory)");
  agent_cmd->add_option("--data-dir", agent_options.data_dir,
                        "where held jobs and their logs live (default: the data directory's "
                        "agent-NODE folder)");
  agent_cmd->add_option("--advertise-address", agent_options.advertise,
                        "the address other nodes reach this one at (MASTER_ADDR of multi-node "
                        "jobs; default: the node name)");
  agent_cmd->add_option("--heartbeat", agent_options.heartbeat_s, "seconds between heartbeats")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 60.0));
  agent_cmd->add_option("--join-token", agent_options.join_token,
                        "join the controller with a one-time join token (`gpufleet token create "
                        "--join`): the agent trades it for its node's own credential, kept in "
                        "its data directory, and needs no admin token; an https controller's "
                        "CA is pinned by the hash at the token's end");
  agent_cmd->add_option("--ca", agent_options.ca_file,
                        "the CA file an https controller is trusted by (default: $GPUFLEET_CA, "
                        "the CA a pinned join saved, else the data directory's tls/ca.pem)");
  std::vector<std::string> agent_run_as_maps;
  add_run_as_flags(agent_cmd, agent_run_as_maps, agent_options.run_as.allow_root,
                   agent_options.run_as.min_uid, agent_options.run_as.shared_dev_shm);
  add_log_limit_flag(agent_cmd, agent_options.log_limit_mib);
  agent_cmd
      ->add_option("--container-runtime", agent_options.container_runtime,
                   "the container CLI for --image jobs: podman, docker, or a path")
      ->capture_default_str();
  agent_cmd->callback([&] {
    for (const std::string& map : agent_run_as_maps) {
      if (auto parsed = agent::ParseRunAsMap(map, agent_options.run_as.user_map); !parsed) {
        std::fprintf(stderr, "gpufleet agent: %s\n", parsed.error().c_str());
        std::exit(2);
      }
    }
    if (auto safe = agent::CheckRunAsMapForAgent(agent_options.run_as, ::geteuid()); !safe) {
      std::fprintf(stderr, "gpufleet agent: --run-as-map: %s\n", safe.error().c_str());
      std::exit(2);
    }
    if (!agent_options.controller_url.empty()) {
      // The join token may come in the environment, out of sight of `ps` (the local provider,
      // cloud-init scripts): GPUFLEET_JOIN_TOKEN, used once, like --join-token.
      if (agent_options.join_token.empty()) {
        if (const char* env = std::getenv("GPUFLEET_JOIN_TOKEN"); env != nullptr) {
          agent_options.join_token = env;
        }
      }
      const std::string data = cli::DataDir("");
      std::string token;
      if (const char* env = std::getenv("GPUFLEET_TOKEN"); env != nullptr) token = env;
      const std::string token_file = !agent_token_file.empty() ? agent_token_file : data + "/token";
      if (!agent_options.join_token.empty() && agent_token_file.empty()) {
        token.clear();  // the node's own credential, from the join (RunAgent)
      } else if (token.empty() || !agent_token_file.empty()) {
        std::ifstream in(token_file);
        std::getline(in, token);
        // The data directory's own token (not one named by --token-file) is its server's admin
        // credential: sent only to that server, under any of this machine's names for a local one
        // (cli::TokenFileMayGoTo).
        std::string own;
        if (std::ifstream server(data + "/server"); server) std::getline(server, own);
        if (agent_token_file.empty() && !token.empty() &&
            !cli::TokenFileMayGoTo(agent_options.controller_url, own)) {
          std::fprintf(stderr,
                       "gpufleet agent: not sending %s to %s: it is the credential of that "
                       "data directory's own server; pass --token-file or a join token\n",
                       token_file.c_str(), agent_options.controller_url.c_str());
          token.clear();
        }
      }
      if (token.empty() && agent_options.join_token.empty()) {
        std::fprintf(stderr,
                     "gpufleet agent: no token for the controller: pass --token-file (the "
                     "controller writes one in its data directory) or set GPUFLEET_TOKEN\n");
        std::exit(2);
      }
      agent_options.token = token;
      if (agent_options.ca_file.empty()) {
        if (const char* env = std::getenv("GPUFLEET_CA"); env != nullptr && *env != '\0') {
          agent_options.ca_file = env;
        }
      }
      if (agent_options.data_dir.empty()) {
        agent_options.data_dir =
            data + "/agent-" +
            (agent_options.probe.hostname.empty() ? std::string("local")
                                                  : agent_options.probe.hostname);
      }
      // An agent beside `up` on its machine trusts the CA `up` made, as it takes its token.
      std::error_code ec;
      if (agent_options.ca_file.empty() && agent_options.join_token.empty() &&
          !std::filesystem::exists(agent_options.data_dir + "/controller-ca.pem", ec) &&
          std::filesystem::exists(data + "/tls/ca.pem", ec)) {
        agent_options.ca_file = data + "/tls/ca.pem";
      }
    }
    std::exit(agent::RunAgent(agent_options));
  });

  agent::TopOptions top_options;
  CLI::App* top_cmd = app.add_subcommand("top", cli::FullCommandDescription("top"));
  top_cmd->add_flag("--once", top_options.once, "print one snapshot and exit");
  top_cmd->add_flag("--json", top_options.json,
                    "print one JSON document (GPUs with their processes) and exit");
  top_cmd
      ->add_option("--sort", top_options.sort,
                   "process order: m (GPU memory), s (SM%), p (pid), u (user)")
      ->capture_default_str();
  add_probe_flags(top_cmd, top_options.probe);
  top_cmd->callback([&] { std::exit(agent::RunTop(top_options)); });

  server::UpOptions up;
  CLI::App* up_cmd = app.add_subcommand("up", cli::FullCommandDescription("up"));
  up_cmd->add_option("--data-dir", up.data_dir,
                     "where the store, logs and token live (default: $GPUFLEET_DATA_DIR, else "
                     "~/.gpufleet)");
  up_cmd->add_option("--listen", up.listen, "HOST:PORT for the API (port 0: any)")
      ->capture_default_str();
  up_cmd
      ->add_option("--simulated-gpus", up.simulated_gpus,
                   "use N simulated GPUs instead of NVML (without it: NVML, or simulated GPUs "
                   "when no driver is found)")
      ->check(CLI::Range(0, core::kMaxGpusPerNode));
  up_cmd->add_option("--nvml-library", up.nvml_library, "NVML library to load")
      ->capture_default_str();
  up_cmd->add_option("--policy", up.queue_policy, "queue policy: " + sched::QueuePolicyNames())
      ->capture_default_str();
  up_cmd->add_option("--placement", up.placement_policy, policy_help)->capture_default_str();
  up_cmd
      ->add_option("--stop-grace", up.stop_grace_s,
                   "seconds between SIGTERM and SIGKILL when a job is cancelled or preempted "
                   "(its time to checkpoint)")
      ->capture_default_str();
  up_cmd
      ->add_option("--elastic-grow-after", up.elastic_grow_after_s,
                   "seconds an elastic job (--gpus MIN..MAX) runs after a start or resize before "
                   "it may grow into idle GPUs (each resize is a checkpoint-restart)")
      ->capture_default_str();
  up_cmd->add_option(
      "--queue-weight", up.queue_weights,
      "QUEUE=WEIGHT for fair-share policies (repeatable; a queue not named weighs 1)");
  up_cmd
      ->add_option("--lease", up.lease_s,
                   "seconds of agent silence before its node is lost (remote agents)")
      ->capture_default_str();
  up_cmd
      ->add_option("--advertise-address", up.advertise,
                   "this node's address for multi-node jobs (MASTER_ADDR)")
      ->capture_default_str();
  add_run_as_flags(up_cmd, up.run_as_maps, up.allow_root_jobs, up.min_job_uid, up.shared_dev_shm);
  add_log_limit_flag(up_cmd, up.log_limit_mib);
  add_priority_flag(up_cmd, up.max_priorities);
  add_jobs_cap_flag(up_cmd, up);
  add_idle_flags(up_cmd, up);
  add_log_retention_flags(up_cmd, up);
  add_token_lifetime_flag(up_cmd, up);
  add_tls_flags(up_cmd, up);
  add_container_flags(up_cmd, up);
  up_cmd
      ->add_option("--container-runtime", up.container_runtime,
                   "the local node's container CLI for --image jobs: podman, docker, or a path")
      ->capture_default_str();
  up_cmd->callback([&] { std::exit(server::RunUp(WithDataDir(up))); });

  server::UpOptions controller_opts;
  controller_opts.controller_only = true;
  CLI::App* controller_cmd =
      app.add_subcommand("controller", cli::FullCommandDescription("controller"));
  controller_cmd->add_option("--data-dir", controller_opts.data_dir,
                             "where the store, logs and token live (default: "
                             "$GPUFLEET_DATA_DIR, else ~/.gpufleet)");
  controller_cmd->add_option("--listen", controller_opts.listen, "HOST:PORT for the API")
      ->capture_default_str();
  controller_cmd
      ->add_option("--policy", controller_opts.queue_policy,
                   "queue policy: " + sched::QueuePolicyNames())
      ->capture_default_str();
  controller_cmd->add_option("--placement", controller_opts.placement_policy, policy_help)
      ->capture_default_str();
  controller_cmd
      ->add_option("--stop-grace", controller_opts.stop_grace_s,
                   "seconds between SIGTERM and SIGKILL when a job is cancelled or preempted "
                   "(its time to checkpoint)")
      ->capture_default_str();
  controller_cmd
      ->add_option("--elastic-grow-after", controller_opts.elastic_grow_after_s,
                   "seconds an elastic job (--gpus MIN..MAX) runs after a start or resize before "
                   "it may grow into idle GPUs (each resize is a checkpoint-restart)")
      ->capture_default_str();
  controller_cmd->add_option(
      "--queue-weight", controller_opts.queue_weights,
      "QUEUE=WEIGHT for fair-share policies (repeatable; a queue not named weighs 1)");
  controller_cmd
      ->add_option("--lease", controller_opts.lease_s,
                   "seconds of agent silence before its node is lost: its jobs become LOST, "
                   "and PENDING again when restartable")
      ->capture_default_str();
  add_priority_flag(controller_cmd, controller_opts.max_priorities);
  add_jobs_cap_flag(controller_cmd, controller_opts);
  add_idle_flags(controller_cmd, controller_opts);
  add_log_retention_flags(controller_cmd, controller_opts);
  add_token_lifetime_flag(controller_cmd, controller_opts);
  add_tls_flags(controller_cmd, controller_opts);
  add_container_flags(controller_cmd, controller_opts);
  controller_cmd->callback([&] { std::exit(server::RunUp(WithDataDir(controller_opts))); });

  // A database password on the command line (--store postgresql://USER:PASSWORD@...) is readable
  // by every local account, jobs included, in /proc/PID/cmdline: the command line is parsed from
  // a copy and the process's own is masked (a moment after start, so a warning says what to use).
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> parsed_argv;
  for (std::string& a : args) parsed_argv.push_back(a.data());
  parsed_argv.push_back(nullptr);
  for (int i = 1; i < argc; ++i) {
    char* value = std::strcmp(argv[i - 1], "--store") == 0    ? argv[i]
                  : std::strncmp(argv[i], "--store=", 8) == 0 ? argv[i] + 8
                                                              : nullptr;
    if (value != nullptr && store::MaskConnectionPassword(value)) {
      std::fprintf(stderr,
                   "gpufleet: warning: --store holds a password, which other local accounts can "
                   "read in this process's command line until it is masked; use a password file "
                   "(~/.pgpass, PGPASSFILE) or PGPASSWORD instead\n");
    }
  }
  return cli::AddClientCommandsAndRun(app, argc, parsed_argv.data());
}
