#include "cli/client_cli.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>

#include "cli/scale_commands.h"

namespace gpufleet::cli {
namespace {

// Runs a client command; an answer of an unexpected shape (a field missing or of another type)
// is reported as such instead of ending the program with an uncaught exception.
template <typename Command>
int Guarded(Command command) {
  try {
    return command();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpufleet: the server's answer is not what this client expects (%s)\n",
                 e.what());
    return 1;
  }
}

}  // namespace

int AddClientCommandsAndRun(CLI::App& app, int argc, char** argv) {
  ClientCli client_cli;
  client_cli.Register(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}

void ClientCli::Register(CLI::App& app) {
  // Flags every client command shares.
  auto add_client_flags = [](CLI::App* cmd, ClientOptions& client) {
    cmd->add_option("--server", client.server,
                    "server URL, or the comma-separated URLs of controllers sharing one store "
                    "(requests follow the leader) (default: $GPUFLEET_SERVER, likewise one URL "
                    "or a list, else what `gpufleet up` wrote in the data directory)");
    cmd->add_option("--data-dir", client.data_dir,
                    "the data directory of `gpufleet up` (for its server and token files)");
    cmd->add_option("--ca", client.ca_file,
                    "the CA file an https server is trusted by (default: $GPUFLEET_CA, else "
                    "the data directory's tls/ca.pem)");
    cmd->add_flag("--json", client.json, "print JSON for scripts");
  };

  CLI::App* submit_cmd =
      app.add_subcommand("submit", "Submit a job: gpufleet submit [flags] -- COMMAND ARGS...");
  submit_cmd
      ->add_option("--gpus", submit_.gpus,
                   "whole GPUs (per node with --nodes); MIN..MAX: an elastic job, started at "
                   "what fits, grown into idle GPUs and shrunk before anyone is preempted (each "
                   "resize a restart: SIGTERM, then WORLD_SIZE and GPUFLEET_RESTART_COUNT anew)")
      ->capture_default_str();
  submit_cmd->add_option("--gpu-type", submit_.gpu_type,
                         "GPU model(s), e.g. H100-80GB or A100-40GB|A100-80GB");
  // 0 (not given, as before) or a finite number in [low, high]: CLI11's Range lets NaN through,
  // inf became JSON null, which the server read as "not given", and negatives were dropped.
  const auto zero_or_within = [](double low, double high, const char* label) {
    return [low, high, label](const std::string& text) -> std::string {
      double value = 0;
      try {
        std::size_t used = 0;
        value = std::stod(text, &used);
        if (used != text.size()) return "'" + text.substr(0, 32) + "' is not a number";
      } catch (const std::exception&) {
        return "'" + text.substr(0, 32) + "' is not a number";
      }
      if (value == 0) return {};
      if (!std::isfinite(value) || !(value >= low) || value > high) {
        return std::string("must be a number in ") + label + " (or 0: none)";
      }
      return {};
    };
  };
  submit_cmd->add_option("--gpu-share", submit_.gpu_share, "a share of one GPU, in (0, 1]")
      ->check(zero_or_within(0.001, 1, "[0.001, 1]"));
  submit_cmd
      ->add_option("--nodes", submit_.nodes,
                   "nodes, all started together; each gets --gpus GPUs and MASTER_ADDR, "
                   "MASTER_PORT, WORLD_SIZE, NODE_RANK, RANK, LOCAL_WORLD_SIZE")
      ->capture_default_str();
  submit_cmd->add_option("--priority", submit_.priority, "higher runs first")
      ->capture_default_str();
  submit_cmd->add_option("--queue", submit_.queue, "queue (team)");
  submit_cmd->add_option("--name", submit_.name, "job name (default: the command)");
  submit_cmd->add_option("--env", submit_.env, "NAME=value for the job (repeatable)");
  submit_cmd->add_option("--workdir", submit_.workdir, "working directory (default: here)");
  submit_cmd
      ->add_option("--cpus", submit_.cpus,
                   "CPU limit in cores (cgroup v2 cpu.max or v1 cpu.cfs_quota_us, where "
                   "the node has cgroups: see `gpufleet nodes`)")
      ->check(zero_or_within(0.01, 4096, "[0.01, 4096]"));
  submit_cmd->add_option("--memory", submit_.memory,
                         "memory limit: 512M, 16G, or MiB (cgroup v2 memory.max or v1 "
                         "memory.limit_in_bytes; past it the kernel kills the job: FAILED, OOM)");
  submit_cmd->add_option("--time-limit", submit_.time_limit,
                         "stop the job (FAILED) after it has run this long: 90m, 2h, 1d, "
                         "1:30:00 or seconds; also lets it backfill ahead of a waiting big job");
  submit_cmd->add_flag("--restartable", submit_.restartable,
                       "run it again elsewhere if its node is lost (it should resume from a "
                       "checkpoint); without it such a job ends LOST");
  submit_cmd->add_option("--image", submit_.image,
                         "run the job in a container of this image (podman on the node; the "
                         "admin allows images by prefix), as your user, with its GPUs");
  submit_cmd->add_option("--mount", submit_.mounts,
                         "SRC:DST[:ro]: bind-mount host directory SRC at DST in the container "
                         "(repeatable; SRC under a directory the admin allows)");
  submit_cmd->add_option("command", submit_.command, "the command and its arguments, after --");
  add_client_flags(submit_cmd, submit_.client);
  submit_cmd->callback([this] { std::exit(Guarded([&] { return RunSubmit(submit_); })); });

  CLI::App* jobs_cmd = app.add_subcommand("jobs", "List jobs (yours; --all for everyone's)");
  jobs_cmd->add_flag("--all", jobs_.all_users, "every user's jobs (admins)");
  jobs_cmd->add_option("--state", jobs_.state, "only jobs in this state, e.g. RUNNING");
  jobs_cmd->add_option("--limit", jobs_.limit, "at most this many (1 to 10000)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  jobs_cmd
      ->add_option("--after", jobs_.after,
                   "only jobs with a larger id: the next page after the last id of this one")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 62, "a job id"));
  add_client_flags(jobs_cmd, jobs_.client);
  jobs_cmd->callback([this] { std::exit(Guarded([&] { return RunJobs(jobs_); })); });

  CLI::App* queue_cmd = app.add_subcommand(
      "queue", "The queue's summary; --explain: why each waiting job waits, in scheduler order");
  queue_cmd->add_flag("--explain", queue_.explain,
                      "each waiting job's position and reason (others' jobs without id, user or "
                      "name unless you are an admin)");
  queue_cmd->add_flag("--mine", queue_.mine, "with --explain: only your jobs");
  queue_cmd->add_option("--limit", queue_.limit, "with --explain: the first so many jobs")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  add_client_flags(queue_cmd, queue_.client);
  queue_cmd->callback([this] { std::exit(Guarded([&] { return RunQueue(queue_); })); });

  CLI::App* show_cmd = app.add_subcommand("show", "Show one job");
  show_cmd->add_option("id", show_.id, "job id")->required();
  show_cmd
      ->add_option("--events-limit", show_.events_limit,
                   "the latest so many events of its history (default: the server's, 1000)")
      ->check(CLI::Range(1, 10000));
  show_cmd
      ->add_option("--events-before", show_.events_before,
                   "only events older than this event id (the history says which to ask for)")
      ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()));
  add_client_flags(show_cmd, show_.client);
  show_cmd->callback([this] { std::exit(Guarded([&] { return RunShow(show_); })); });
  CLI::App* advise_cmd = app.add_subcommand(
      "advise", "What holds a job back: findings with evidence, waste and advice");
  advise_cmd->add_option("id", advise_.id, "job id")->required();
  advise_cmd->add_flag("--sizing", advise_.sizing,
                       "also estimate run time and cost on each GPU model, 1..N GPUs, own "
                       "hardware, cloud on-demand and spot");
  advise_cmd->add_option("--deadline", advise_.deadline,
                         "with --sizing: the cheapest option that finishes within this, e.g. 24h");
  add_client_flags(advise_cmd, advise_.client);
  advise_cmd->callback([this] { std::exit(Guarded([&] { return RunAdvise(advise_); })); });
  CLI::App* report_cmd = app.add_subcommand(
      "report", "GPU-hours allocated and used, the waste ranking, top findings, idle reclaims");
  report_cmd->add_option("--since", report_.since, "jobs ended within this, e.g. 7d or 24h")
      ->capture_default_str();
  report_cmd->add_option("--by", report_.by, "group by user, queue or model")
      ->capture_default_str();
  add_client_flags(report_cmd, report_.client);
  report_cmd->callback([this] { std::exit(Guarded([&] { return RunReport(report_); })); });
  CLI::App* scale_cmd =
      app.add_subcommand("scale", "The autoscaler (controller --autoscale FILE.toml)");
  scale_cmd->require_subcommand(1);
  CLI::App* scale_status_cmd = scale_cmd->add_subcommand(
      "status", "Spend against the cap, each group's nodes, backoffs and the latest events");
  add_client_flags(scale_status_cmd, scale_client_);
  scale_status_cmd->callback(
      [this] { std::exit(Guarded([&] { return RunScaleStatus(scale_client_); })); });
  CLI::App* cancel_cmd =
      app.add_subcommand("cancel", "Cancel a job (running: SIGTERM, grace, SIGKILL)");
  cancel_cmd->add_option("id", job_id_, "job id")->required();
  add_client_flags(cancel_cmd, job_client_);
  cancel_cmd->callback(
      [this] { std::exit(Guarded([&] { return RunCancel(job_client_, job_id_); })); });
  CLI::App* rm_cmd = app.add_subcommand(
      "rm", "Remove an ended job for good, with its history and logs (yours; admins: anyone's)");
  rm_cmd->add_option("id", job_id_, "job id")->required();
  add_client_flags(rm_cmd, job_client_);
  rm_cmd->callback([this] { std::exit(Guarded([&] { return RunRemove(job_client_, job_id_); })); });
  CLI::App* logs_cmd =
      app.add_subcommand("logs", "Print a job's output (-f: follow until it ends)");
  logs_cmd->add_option("id", job_id_, "job id")->required();
  logs_cmd->add_flag("-f,--follow", follow_, "keep printing until the job ends");
  logs_cmd->add_flag("--raw", raw_logs_,
                     "on a terminal too, print the log as it is, escape sequences included "
                     "(by default they are shown as \\xNN there, not obeyed)");
  add_client_flags(logs_cmd, job_client_);
  logs_cmd->callback([this] {
    std::exit(Guarded([&] { return RunLogs(job_client_, job_id_, follow_, raw_logs_); }));
  });
  CLI::App* nodes_cmd = app.add_subcommand("nodes", "List nodes and their GPUs");
  add_client_flags(nodes_cmd, job_client_);
  CLI::App* node_revoke = nodes_cmd->add_subcommand(
      "revoke", "Revoke every credential of a node (admins): its agent can no longer act");
  node_revoke->add_option("node", admin_.name, "node name")->required();
  add_client_flags(node_revoke, admin_.client);
  node_revoke->callback([this] { std::exit(Guarded([&] { return RunNodeRevoke(admin_); })); });
  CLI::App* drain_cmd = app.add_subcommand(
      "drain", "Place nothing new on a node's GPUs (admins); jobs running there finish");
  drain_cmd->add_option("target", admin_.name, "NODE (all its GPUs) or NODE:GPU")->required();
  drain_cmd->add_option("--reason", admin_.reason, "why (shown in `gpufleet nodes`)")->required();
  add_client_flags(drain_cmd, admin_.client);
  drain_cmd->callback([this] { std::exit(Guarded([&] { return RunDrain(admin_, true); })); });
  CLI::App* undrain_cmd = app.add_subcommand(
      "undrain", "Place jobs on drained GPUs again (admins), unhealthy ones included");
  undrain_cmd->add_option("target", admin_.name, "NODE (all its GPUs) or NODE:GPU")->required();
  add_client_flags(undrain_cmd, admin_.client);
  undrain_cmd->callback([this] { std::exit(Guarded([&] { return RunDrain(admin_, false); })); });
  nodes_cmd->callback([this, nodes_cmd] {
    if (nodes_cmd->get_subcommands().empty()) {
      std::exit(Guarded([&] { return RunNodes(job_client_); }));
    }
  });

  CLI::App* users_cmd = app.add_subcommand("users", "Manage users (admins)");
  users_cmd->require_subcommand(1);
  CLI::App* users_add = users_cmd->add_subcommand("add", "Add a user; prints their token once");
  users_add->add_option("name", admin_.name, "user name")->required();
  users_add->add_flag("--admin", admin_.admin, "the user may manage users, tokens and nodes");
  users_add->add_option("--ttl", admin_.ttl,
                        "how long their first token works (e.g. 90d; default: for "
                        "good, or the controller's --user-token-lifetime)");
  users_add->add_flag("--reclaim", admin_.reclaim,
                      "NAME was removed and still owns jobs: this is the same person, who gets "
                      "them back (without it such a name is refused)");
  add_client_flags(users_add, admin_.client);
  users_add->callback([this] { std::exit(Guarded([&] { return RunUsersAdd(admin_); })); });
  CLI::App* users_list = users_cmd->add_subcommand("list", "List users");
  add_client_flags(users_list, admin_.client);
  users_list->callback([this] { std::exit(Guarded([&] { return RunUsersList(admin_.client); })); });
  CLI::App* users_remove =
      users_cmd->add_subcommand("remove", "Remove a user and revoke their tokens");
  users_remove->add_option("name", admin_.name, "user name")->required();
  add_client_flags(users_remove, admin_.client);
  users_remove->callback([this] { std::exit(Guarded([&] { return RunUsersRemove(admin_); })); });

  CLI::App* token_cmd = app.add_subcommand("token", "Manage API tokens (admins)");
  token_cmd->require_subcommand(1);
  CLI::App* token_create = token_cmd->add_subcommand(
      "create", "Create a token (yours, --user's, or --join for a new node); shown once");
  token_create->add_option("--user", admin_.user, "whose token (default: yours)");
  auto* join = token_create->add_flag("--join", admin_.join,
                                      "a one-time join token for a new agent (agent --join-token)");
  token_create
      ->add_option("--node", admin_.node,
                   "the node name the join token may claim (the agent's --hostname; default: any "
                   "name without a credential)")
      ->needs(join);
  token_create->add_option("--ttl", admin_.ttl,
                           "how long the token works (15m, 12h, 90d): a join token 1h unless "
                           "told (30d at most); a user token for good, or the controller's "
                           "--user-token-lifetime");
  add_client_flags(token_create, admin_.client);
  token_create->callback([this] { std::exit(Guarded([&] { return RunTokenCreate(admin_); })); });
  CLI::App* token_list = token_cmd->add_subcommand("list", "List credentials by id");
  add_client_flags(token_list, admin_.client);
  token_list->callback([this] { std::exit(Guarded([&] { return RunTokenList(admin_.client); })); });
  CLI::App* token_revoke = token_cmd->add_subcommand("revoke", "Revoke a token by its id");
  token_revoke->add_option("id", admin_.id, "the id `token list` shows")->required();
  add_client_flags(token_revoke, admin_.client);
  token_revoke->callback([this] { std::exit(Guarded([&] { return RunTokenRevoke(admin_); })); });
}

}  // namespace gpufleet::cli
