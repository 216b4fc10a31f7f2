#include "controller/log_retention.h"

#include <algorithm>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "core/duration.h"

namespace gpufleet::controller {

std::vector<LogRemoval> PlanLogRemovals(const std::vector<JobLogs::Held>& held,
                                        const std::vector<store::JobOwner>& owners,
                                        const LogRetention& retention, int64_t now_ms) {
  std::unordered_map<int64_t, const store::JobOwner*> owner_of;
  for (const store::JobOwner& o : owners) owner_of[o.id] = &o;
  std::map<int64_t, std::string> removed;  // by job id
  struct Candidate {
    int64_t end_ms, id, bytes;
  };
  // Per user: the bytes of logs the sweep may remove, and those it may not (running jobs', and
  // those of jobs that ended within settle_ms).
  std::map<std::string, int64_t> user_bytes, user_fixed_bytes;
  std::map<std::string, std::vector<Candidate>> user_candidates;
  for (const JobLogs::Held& h : held) {
    const auto it = owner_of.find(h.job_id);
    if (it == owner_of.end()) continue;
    const store::JobOwner& o = *it->second;
    const bool ended = core::HasEnded(o.state);
    const bool removable = ended && o.end_ms > 0 && now_ms - o.end_ms >= retention.settle_ms;
    if (removable && retention.max_age_ms > 0 && now_ms - o.end_ms > retention.max_age_ms) {
      removed[h.job_id] = "older than " + core::DurationText(retention.max_age_ms);
      continue;
    }
    (removable ? user_bytes : user_fixed_bytes)[o.user] += h.bytes;
    if (removable) user_candidates[o.user].push_back({o.end_ms, h.job_id, h.bytes});
  }
  if (retention.user_quota_bytes > 0) {
    for (auto& [user, candidates] : user_candidates) {
      // Logs the sweep may not remove count up to half the quota: a user whose running jobs
      // hold the whole quota still keeps half of it for the logs of jobs that ended.
      int64_t bytes =
          user_bytes[user] + std::min(user_fixed_bytes[user], retention.user_quota_bytes / 2);
      if (bytes <= retention.user_quota_bytes) continue;
      std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return a.end_ms != b.end_ms ? a.end_ms < b.end_ms : a.id < b.id;
      });
      for (const Candidate& c : candidates) {
        if (bytes <= retention.user_quota_bytes) break;
        removed[c.id] = "over user " + user + "'s log quota of " +
                        std::to_string(retention.user_quota_bytes >> 20) + " MiB";
        bytes -= c.bytes;
      }
    }
  }
  std::vector<LogRemoval> out;
  out.reserve(removed.size());
  for (auto& [id, why] : removed) out.push_back({id, std::move(why)});
  return out;
}

LogSweeper::LogSweeper(store::Store& store, JobLogs logs, LogRetention retention)
    : store_(store), logs_(std::move(logs)), retention_(retention) {}

LogSweepStats LogSweeper::SweepOnce(int64_t now_ms, const std::function<bool()>& stopping) {
  LogSweepStats stats;
  const std::vector<JobLogs::Held> held = logs_.Scan();
  if (stopping && stopping()) return stats;
  std::vector<int64_t> ids;
  ids.reserve(held.size());
  for (const JobLogs::Held& h : held) {
    ids.push_back(h.job_id);
    stats.bytes_held += h.bytes;
  }
  stats.jobs_held = static_cast<int64_t>(held.size());
  auto owners = store_.JobOwners(ids);
  if (!owners) {
    stats.error = owners.error();
    return stats;
  }
  stats.unknown_jobs = stats.jobs_held - static_cast<int64_t>(owners.value().size());
  std::unordered_map<int64_t, const JobLogs::Held*> by_id;
  for (const JobLogs::Held& h : held) by_id[h.job_id] = &h;
  const std::time_t now_s = static_cast<std::time_t>(now_ms / 1000);
  std::tm utc{};
  gmtime_r(&now_s, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &utc);
  std::vector<int64_t> noted;  // jobs whose "removed" note this sweep wrote
  for (const LogRemoval& r : PlanLogRemovals(held, owners.value(), retention_, now_ms)) {
    if (stopping && stopping()) break;
    const JobLogs::Held& h = *by_id.at(r.job_id);
    const std::string note = "[gpufleet] this job's log (" + std::to_string(h.bytes) +
                             " bytes) was removed on " + when + ": " + r.why;
    noted.push_back(r.job_id);
    if (!logs_.Remove(h, note)) continue;
    ++stats.jobs_removed;
    stats.bytes_removed += h.bytes;
  }
  // `gpufleet rm` (or a leader's job retention, while a standby sweeps) may have removed a job
  // since the scan: its erase of the note came before this sweep's write, and the note would
  // outlive the job. Asked once after every write (whether or not every file went), the store
  // tells; rm erases the note once more after removing the record, which covers a write that
  // lands before that.
  if (!noted.empty()) {
    if (auto still = store_.JobOwners(noted)) {
      std::unordered_set<int64_t> known;
      for (const store::JobOwner& o : still.value()) known.insert(o.id);
      for (int64_t id : noted) {
        if (!known.contains(id)) logs_.Erase(JobLogs::Held{id, 0, {}});
      }
    }
  }
  return stats;
}

}  // namespace gpufleet::controller
