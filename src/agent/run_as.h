#pragma once
// Whose Unix account a job runs under on this node. A job never runs as anyone but the user it
// belongs to: its gpufleet user, or the account an admin mapped that user to (--run-as-map). A
// job whose account does not exist here fails with a reason naming the node and the user; one
// that would run as root (uid 0) fails unless the node's admin allowed it (--allow-root-jobs), and
// so does one that a root agent would run as a system account (a uid below --min-job-uid, 1000 by
// default: daemon, postgres, www-data, which own services' files and keys); an agent that is not
// root can only run jobs whose account is its own.
#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/result.h"

namespace gpufleet::agent {

struct RunAsPolicy {
  std::map<std::string, std::string> user_map;  // gpufleet user -> Unix account
  bool allow_root = false;                      // whether jobs may run as uid 0 (or below min_uid)
  // The lowest uid other than 0 a root agent runs jobs as (Debian's UID_MIN for people's
  // accounts); 0 turns the check off.
  uid_t min_uid = 1000;
  std::string node_name = "this node";          // named in errors
  // Host jobs share the node's /dev/shm and System V IPC (--shared-dev-shm), as before each got
  // its own (ShimSpec::private_shm_mib): for jobs that meet through them, or NVIDIA MPS.
  bool shared_dev_shm = false;
};

struct UnixAccount {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

// Looks an account up by name; nothing when it does not exist.
using AccountLookup = std::function<std::optional<UnixAccount>(const std::string& name)>;
// getpwnam_r.
std::optional<UnixAccount> LookupSystemAccount(const std::string& name);

struct RunIdentity {
  UnixAccount account;
  bool switch_user = false;  // setgid/initgroups/setuid needed (the agent is root)
};

// The identity a job of `job_user` runs under on a node whose agent runs as `agent_uid`.
core::Result<RunIdentity> ResolveRunAs(const RunAsPolicy& policy, const std::string& job_user,
                                       uid_t agent_uid,
                                       const AccountLookup& lookup = LookupSystemAccount);

// A node whose agent is not root runs only its own account's jobs, and only for the user of
// that very name: a mapping of another user onto the agent's account would run their jobs as the
// agent, which reads its node credential (or, under `up`, the admin's token). This refuses such a
// map at start, naming the entry; ResolveRunAs refuses such a job all the same.
core::Result<bool> CheckRunAsMapForAgent(const RunAsPolicy& policy, uid_t agent_uid,
                                         const AccountLookup& lookup = LookupSystemAccount);

// Parses one --run-as-map value, "NAME=ACCOUNT[,NAME=ACCOUNT...]", into `map`; errors name the
// entry.
core::Result<bool> ParseRunAsMap(const std::string& text, std::map<std::string, std::string>& map);

}  // namespace gpufleet::agent
