#include "controller/job_retention.h"

#include <map>
#include <set>
#include <vector>

namespace gpufleet::controller {

JobRetentionSweeper::JobRetentionSweeper(store::Store& store, JobLogs logs, int64_t max_age_ms)
    : store_(store), logs_(std::move(logs)), max_age_ms_(max_age_ms) {}

JobRetentionStats JobRetentionSweeper::SweepOnce(int64_t now_ms,
                                                 const std::function<bool()>& stopping) {
  JobRetentionStats stats;
  if (max_age_ms_ <= 0) return stats;
  std::map<int64_t, JobLogs::Held> held;  // read once, when the first batch has jobs
  bool scanned = false;
  std::set<int64_t> stuck;  // this sweep's: logs that would not go
  for (;;) {
    if (stopping && stopping()) break;
    // The store hands out the longest-ended first, stuck ones too: ask for that many more.
    const int limit = kBatch + static_cast<int>(stuck.size());
    auto ids = store_.EndedJobIds(now_ms - max_age_ms_, limit);
    if (!ids) {
      stats.error = ids.error();
      break;
    }
    std::vector<int64_t> batch;
    for (int64_t id : ids.value()) {
      if (!stuck.contains(id)) batch.push_back(id);
    }
    if (batch.empty()) break;
    if (!scanned) {
      for (JobLogs::Held& h : logs_.Scan()) held.emplace(h.job_id, std::move(h));
      scanned = true;
    }
    std::vector<int64_t> erased;  // whose logs are gone: their rows may go
    erased.reserve(batch.size());
    for (int64_t id : batch) {
      auto it = held.find(id);
      const bool gone =
          it != held.end() ? logs_.Erase(it->second) : logs_.Erase(JobLogs::Held{id, 0, {}});
      if (gone) {
        erased.push_back(id);
      } else {
        stuck.insert(id);
      }
    }
    auto removed = store_.RemoveEndedJobs(erased);
    if (!removed) {
      stats.error = removed.error();
      break;
    }
    stats.jobs_removed += removed.value();
    // A short answer was the last.
    if (static_cast<int>(ids.value().size()) < limit || stuck.size() > kMaxStuck) break;
  }
  stats.jobs_stuck = static_cast<int64_t>(stuck.size());
  return stats;
}

}  // namespace gpufleet::controller
