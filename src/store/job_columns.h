#pragma once
// How the SQLite and PostgreSQL stores read a job and a token from a result row: the same
// columns in the same order (each store's kJobColumns and token column list), so one reader
// serves both. `RowT` offers Text(col) -> std::string, Int(col) -> int64_t, Double(col) and
// IsNull(col) (a reference or a temporary). Stored JSON that does not parse leaves its field empty; nothing throws.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/store.h"

namespace gpufleet::store::columns {

// argv: a JSON array of strings (others skipped).
std::vector<std::string> StringsFromJson(const std::string& text);
// env: a JSON array of [name, value] pairs (others skipped).
std::vector<std::pair<std::string, std::string>> EnvFromJson(const std::string& text);
// The bytes of the texts both stores keep that the job's submitter chose: its argv and env (as
// JSON, valid UTF-8 as submits are), its container (image and mounts), workdir, name, queue, GPU
// model and client token: what Store::JobArgsBytesOf sums. (Rows stored before the container and
// the short texts were counted keep their argv and env figure.)
int64_t ArgsBytes(const JobRecord& job);
// A store's list of job columns (SQL, "...,argv,env,workdir,...") with env read as '[]', the
// empty list: for queries whose answer does not show it (JobFilter::without_env).
std::string WithEmptyEnv(std::string columns);
// Sets the job's placement from [[rank, node, [gpus]], ...] (any order; placed by rank) and its
// views `node` and `gpu_indices`; unreadable entries are skipped.
void SetPlacementFromJson(const std::string& text, JobRecord& job);
// container: {"image", "mounts": ["SRC:DST[:ro]", ...]}; "" (a host job) for an empty spec.
std::string ContainerToJson(const core::ContainerSpec& spec);
// Unreadable text or mounts are left out (empty spec: a host job).
core::ContainerSpec ContainerFromJson(const std::string& text);
// "node", "join", else a user token.
TokenKind TokenKindFromName(const std::string& name);

// Columns: id, user, name, queue, priority, gpus, gpu_milli, gpu_type, nodes, argv, env, workdir,
// state, submit_ms, start_ms, end_ms, exit_code, placement JSON, epoch, reason, pid, pid_start,
// client_token, restartable, cpu_milli, memory_mib, time_limit_s, usage_samples,
// gpu_util_avg_pct, gpu_mem_peak_mib, attained_gpu_s, preempting, host_usage, container,
// min_gpus, args_bytes.
template <class RowT>
JobRecord ReadJob(RowT&& s) {
  JobRecord j;
  j.id = s.Int(0);
  j.user = s.Text(1);
  j.name = s.Text(2);
  j.queue = s.Text(3);
  j.priority = static_cast<int>(s.Int(4));
  j.gpus = static_cast<int>(s.Int(5));
  j.gpu_milli = static_cast<int>(s.Int(6));
  j.gpu_type = s.Text(7);
  j.nodes = static_cast<int>(s.Int(8));
  j.argv = StringsFromJson(s.Text(9));
  j.env = EnvFromJson(s.Text(10));
  j.workdir = s.Text(11);
  j.state = ParseState(s.Text(12)).value_or(JobState::kFailed);
  j.submit_ms = s.Int(13);
  j.start_ms = s.Int(14);
  j.end_ms = s.Int(15);
  if (!s.IsNull(16)) j.exit_code = static_cast<int>(s.Int(16));
  SetPlacementFromJson(s.Text(17), j);
  j.epoch = s.Int(18);
  j.reason = s.Text(19);
  j.pid = s.Int(20);
  j.pid_start = static_cast<uint64_t>(s.Int(21));
  j.client_token = s.Text(22);
  j.restartable = s.Int(23) != 0;
  j.cpu_milli = s.Int(24);
  j.memory_mib = s.Int(25);
  j.time_limit_s = s.Int(26);
  j.usage_samples = s.Int(27);
  j.gpu_util_avg_pct = s.Double(28);
  j.gpu_mem_peak_mib = s.Int(29);
  j.attained_gpu_s = s.Double(30);
  j.preempting = s.Int(31) != 0;
  core::HostUsageFromText(s.Text(32), j.host_usage);  // unreadable: unmeasured
  j.container = ContainerFromJson(s.Text(33));
  j.min_gpus = static_cast<int>(s.Int(34));
  j.args_bytes = s.Int(35);
  return j;
}

// Columns: sha256, kind, user, node, created_ms, expires_ms, created_by.
template <class RowT>
TokenRecord ReadToken(RowT&& s) {
  TokenRecord t;
  t.sha256 = s.Text(0);
  t.kind = TokenKindFromName(s.Text(1));
  t.user = s.Text(2);
  t.node = s.Text(3);
  t.created_ms = s.Int(4);
  t.expires_ms = s.Int(5);
  t.created_by = s.Text(6);
  return t;
}

}  // namespace gpufleet::store::columns
