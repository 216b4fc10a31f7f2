#include "controller/job_retention.h"

#include <map>
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
  for (;;) {
    if (stopping && stopping()) break;
    auto ids = store_.EndedJobIds(now_ms - max_age_ms_, kBatch);
    if (!ids) {
      stats.error = ids.error();
      break;
    }
    if (ids.value().empty()) break;
    if (!scanned) {
      for (JobLogs::Held& h : logs_.Scan()) held.emplace(h.job_id, std::move(h));
      scanned = true;
    }
    std::vector<int64_t> erased;  // whose logs are gone: their rows may go
    erased.reserve(ids.value().size());
    for (int64_t id : ids.value()) {
      auto it = held.find(id);
      const bool gone =
          it != held.end() ? logs_.Erase(it->second) : logs_.Erase(JobLogs::Held{id, 0, {}});
      if (gone) erased.push_back(id);
    }
    auto removed = store_.RemoveEndedJobs(erased);
    if (!removed) {
      stats.error = removed.error();
      break;
    }
    stats.jobs_removed += removed.value();
    // A short batch was the last; one that removed nothing (logs that cannot be removed) would
    // come back whole.
    if (static_cast<int>(ids.value().size()) < kBatch || removed.value() == 0) break;
  }
  return stats;
}

}  // namespace gpufleet::controller
