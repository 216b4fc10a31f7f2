#include "agent/run_as.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace gpufleet::agent {

std::optional<UnixAccount> LookupSystemAccount(const std::string& name) {
  if (name.empty()) return std::nullopt;
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 16384);
  passwd pw{};
  passwd* found = nullptr;
  while (getpwnam_r(name.c_str(), &pw, buffer.data(), buffer.size(), &found) == ERANGE &&
         buffer.size() < (1u << 20)) {
    buffer.resize(buffer.size() * 2);
  }
  if (found == nullptr) return std::nullopt;
  return UnixAccount{found->pw_name, found->pw_uid, found->pw_gid,
                     found->pw_dir != nullptr ? found->pw_dir : "/"};
}

namespace {

std::string SelfMappingRefusal(const std::string& node, const std::string& user,
                               const std::string& account) {
  return (node.empty() ? std::string("this node") : "node " + node) + "'s agent runs as account '" +
         account + "', not root: user '" + user +
         "', mapped onto it (--run-as-map), would run as the agent itself, able to read its "
         "credentials and every job's files; run the agent as root to run " +
         user + "'s jobs as an account of their own";
}

}  // namespace

core::Result<bool> CheckRunAsMapForAgent(const RunAsPolicy& policy, uid_t agent_uid,
                                         const AccountLookup& lookup) {
  if (agent_uid == 0) return true;
  for (const auto& [user, account_name] : policy.user_map) {
    const std::optional<UnixAccount> account = lookup(account_name);
    if (account && account->uid == agent_uid && account->name != user) {
      return core::Error{SelfMappingRefusal(policy.node_name, user, account->name),
                         core::ErrorCode::kInvalid, "--run-as-map"};
    }
  }
  return true;
}

core::Result<RunIdentity> ResolveRunAs(const RunAsPolicy& policy, const std::string& job_user,
                                       uid_t agent_uid, const AccountLookup& lookup) {
  if (job_user.empty()) {
    return core::Error{"the job has no user, so node " + policy.node_name +
                       " cannot tell whose account to run it as"};
  }
  auto mapped = policy.user_map.find(job_user);
  const std::string& name = mapped != policy.user_map.end() ? mapped->second : job_user;
  std::optional<UnixAccount> account = lookup(name);
  if (!account) {
    return core::Error{"user '" + job_user + "' has no Unix account" +
                       (name != job_user ? " '" + name + "'" : std::string()) + " on node " +
                       policy.node_name + " (an admin can map it: --run-as-map " + job_user +
                       "=ACCOUNT)"};
  }
  if (account->uid == 0 && !policy.allow_root) {
    return core::Error{"user '" + job_user + "' would run as root (account '" + account->name +
                       "') on node " + policy.node_name +
                       ", which it refuses unless its agent runs with --allow-root-jobs"};
  }
  if (account->uid != 0 && account->gid == 0 && !policy.allow_root) {
    return core::Error{"user '" + job_user + "' would run with root's group (account '" +
                       account->name + "', gid 0) on node " + policy.node_name +
                       ", which it refuses unless its agent runs with --allow-root-jobs"};
  }
  if (agent_uid == 0 && account->uid != 0 && account->uid < policy.min_uid && !policy.allow_root) {
    return core::Error{"user '" + job_user + "' would run as system account '" + account->name +
                       "' (uid " + std::to_string(account->uid) + ", below --min-job-uid " +
                       std::to_string(policy.min_uid) + ") on node " + policy.node_name +
                       ": such an account owns a service's files and keys; map the user to an "
                       "account of their own (--run-as-map " +
                       job_user + "=ACCOUNT) or lower --min-job-uid"};
  }
  RunIdentity identity;
  identity.account = *account;
  if (agent_uid != 0) {
    if (account->uid != agent_uid) {
      return core::Error{"node " + policy.node_name + "'s agent runs as uid " +
                         std::to_string(agent_uid) + " and cannot run user '" + job_user +
                         "' as account '" + account->name +
                         "' (run the agent as root to run other users' jobs)"};
    }
    if (account->name != job_user) {
      return core::Error{SelfMappingRefusal(policy.node_name, job_user, account->name)};
    }
    return identity;
  }
  // A root agent running root's own job (allowed above) has nothing to switch.
  identity.switch_user = account->uid != agent_uid;
  return identity;
}

core::Result<bool> ParseRunAsMap(const std::string& text, std::map<std::string, std::string>& map) {
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string entry =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size() ||
        entry.find('=', eq + 1) != std::string::npos) {
      return core::Error{"--run-as-map '" + entry + "': expected NAME=ACCOUNT"};
    }
    map[entry.substr(0, eq)] = entry.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

}  // namespace gpufleet::agent
