#pragma once
// Log retention on the controller: which jobs' logs to remove so that the logs a controller keeps
// stay within an age and a per-user quota, as journald's MaxRetentionSec and SystemMaxUse do for
// a machine. `PlanLogRemovals` decides (pure); `LogSweeper` scans the log folder, asks the store
// whose each job is, and removes.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "controller/job_logs.h"
#include "store/store.h"

namespace gpufleet::controller {

struct LogRetention {
  // An ended job's logs are removed this long after it ended (0: kept however old).
  int64_t max_age_ms = 0;
  // The bytes of logs each user may hold on the controller; over it, the user's longest-ended
  // jobs' logs are removed first (0: no quota). Running jobs' logs (and those of jobs ended within
  // settle_ms) are never removed and count up to half the quota, so they never push the logs of
  // ended jobs below half of it; the controller stops taking more of them once they alone reach
  // the quota (ControllerOptions::log_quota_bytes), so a user holds at most about 1.5 times it.
  int64_t user_quota_bytes = 0;
  // A job that ended less than this long ago is kept whatever the above say: its agent may still
  // be shipping its last chunks.
  int64_t settle_ms = 10 * 60'000;
};

struct LogRemoval {
  int64_t job_id = 0;
  std::string why;  // "older than 30 d" or "over user alice's log quota of 10240 MiB"
};

// The jobs whose logs `retention` removes, in id order. `held`: each job's bytes of logs;
// `owners`: the store's word on those jobs (a job it does not know is never removed: nobody can
// be charged for it, and a controller pointed at another store must not empty its folder).
std::vector<LogRemoval> PlanLogRemovals(const std::vector<JobLogs::Held>& held,
                                        const std::vector<store::JobOwner>& owners,
                                        const LogRetention& retention, int64_t now_ms);

struct LogSweepStats {
  int64_t jobs_held = 0, bytes_held = 0;        // before the sweep
  int64_t jobs_removed = 0, bytes_removed = 0;  // by it
  int64_t unknown_jobs = 0;                     // logs of jobs the store does not know
  std::string error;                            // the store's, when it could not be asked
};

class LogSweeper {
 public:
  LogSweeper(store::Store& store, JobLogs logs, LogRetention retention);
  // One sweep at `now_ms`: scans, plans and removes. Safe beside the controller's appends (only
  // jobs that ended settle_ms ago are touched). It ends early, between two jobs' removals, once
  // `stopping` says so (a controller shutting down does not wait for a sweep of many logs); the
  // next sweep goes on from what is left.
  LogSweepStats SweepOnce(int64_t now_ms, const std::function<bool()>& stopping = {});

 private:
  store::Store& store_;
  JobLogs logs_;
  LogRetention retention_;
};

}  // namespace gpufleet::controller
