#pragma once
// The client commands: `submit`, `jobs`, `show`, `cancel`, `logs`, `nodes`. They find the server
// from --server, else $GPUFLEET_SERVER, else the `server` file `gpufleet up` wrote in the data
// directory; the token from $GPUFLEET_TOKEN, else that directory's `token` file.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text.h"

namespace gpufleet::cli {

// Everything the CLI prints for people goes through core::Printable, so a job name or reason
// can never move the cursor, clear the screen, retitle the window or reorder the text around it.
using core::Printable;

struct ClientOptions {
  std::string server;
  std::string data_dir;
  std::string ca_file;  // an https server's CA ("": $GPUFLEET_CA, else <data_dir>/tls/ca.pem)
  bool json = false;
};

struct SubmitOptions {
  ClientOptions client;
  std::string gpus = "1";  // N, or MIN..MAX for an elastic job
  std::string gpu_type;
  double gpu_share = 0;  // 0: whole GPUs
  int nodes = 1;
  int priority = 0;
  std::string queue;
  std::string name;
  std::vector<std::string> env;  // NAME=value
  std::string workdir;           // "" : the current directory
  bool restartable = false;      // requeue when its node is lost
  double cpus = 0;               // CPU limit in cores (0: none)
  std::string memory;            // memory limit: "16G", "512M", or MiB ("" : none)
  std::string time_limit;        // "90m", "2h", "1d", "1:30:00" or seconds ("" : none)
  std::string image;             // run in a container of this image ("" : a host process)
  std::vector<std::string> mounts;  // SRC:DST[:ro] bind mounts into the container
  std::vector<std::string> command;
};
int RunSubmit(const SubmitOptions& options);

struct JobsOptions {
  ClientOptions client;
  bool all_users = false;
  std::string state;
  int limit = 1000;
  int64_t after = 0;  // only ids above this (0: from the first)
};
int RunJobs(const JobsOptions& options);
// `gpufleet show ID`: one job, what the advisor says of it, and its history: the latest
// `events_limit` events (0: the server's default page), or those before event `events_before`.
struct ShowOptions {
  ClientOptions client;
  int64_t id = 0;
  int events_limit = 0;
  int64_t events_before = 0;
};
int RunShow(const ShowOptions& options);
int RunCancel(const ClientOptions& client, int64_t id);
// `gpufleet rm ID`: removes an ended job of the caller's (an admin: anyone's) for good, with its
// history and logs.
int RunRemove(const ClientOptions& client, int64_t id);
int RunLogs(const ClientOptions& client, int64_t id, bool follow, bool raw = false);
int RunNodes(const ClientOptions& client);

// Admin commands: users, tokens, node credentials (see controller/admin_routes.h). A new token is
// printed once; the server keeps only its hash.
struct AdminOptions {
  ClientOptions client;
  std::string name;        // users add/remove: the user; nodes revoke: the node
  bool admin = false;      // users add --admin
  bool reclaim = false;    // users add --reclaim: a removed user back, with their jobs
  std::string user;        // token create --user (default: yourself)
  bool join = false;       // token create --join: a one-time token for a new agent
  std::string ttl;         // users add / token create --ttl ("": the server's default)
  std::string node;        // token create --join --node: the one node name it may claim
  std::string id;          // token revoke ID
  std::string reason;      // drain --reason
};
int RunUsersAdd(const AdminOptions& options);
int RunUsersList(const ClientOptions& client);
int RunUsersRemove(const AdminOptions& options);
int RunTokenCreate(const AdminOptions& options);
int RunTokenList(const ClientOptions& client);
int RunTokenRevoke(const AdminOptions& options);
int RunNodeRevoke(const AdminOptions& options);
// `drain NODE[:GPU] --reason R` and `undrain NODE[:GPU]` (`name` holds NODE[:GPU]).
int RunDrain(const AdminOptions& options, bool drain);

// What a client command does with an https server when this program has no TLS (the static
// `gpufleet`: it execs gpufleet-full with the same arguments); unset, the command fails there.
void SetHttpsHandoff(void (*handoff)());

// The data directory a command uses: `flag`, else $GPUFLEET_DATA_DIR, else ~/.gpufleet.
std::string DataDir(const std::string& flag);

}  // namespace gpufleet::cli
