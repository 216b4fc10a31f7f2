#pragma once
// Job history retention on the controller: an ended job's row, history, ranks, usage series and
// logs are removed once it ended longer ago than the retention (`--job-retention`), as Slurm's
// PurgeJobAfter and Kubernetes' ttlSecondsAfterFinished do. Without it the store only grows: every
// job ever submitted, argv and env included (up to 512 KiB each), stays for good.
#include <cstdint>
#include <functional>
#include <string>

#include "controller/job_logs.h"
#include "store/store.h"

namespace gpufleet::controller {

struct JobRetentionStats {
  int64_t jobs_removed = 0;
  // Jobs past the retention whose logs could not be removed (kept, with their rows, and tried
  // again at each sweep; the sweep goes on past them).
  int64_t jobs_stuck = 0;
  std::string error;  // the store's, when it could not be asked or written
};

class JobRetentionSweeper {
 public:
  // `max_age_ms` > 0: jobs that ended longer ago than this go.
  JobRetentionSweeper(store::Store& store, JobLogs logs, int64_t max_age_ms);
  // One sweep at `now_ms`, in batches of kBatch jobs: each batch's logs first, then its rows (a
  // stop between the two leaves rows whose logs are gone, removed by the next sweep; never logs
  // that nothing names). It ends early, between two batches, once `stopping` says so.
  JobRetentionStats SweepOnce(int64_t now_ms, const std::function<bool()>& stopping = {});
  static constexpr int kBatch = 1000;

 private:
  store::Store& store_;
  JobLogs logs_;
  int64_t max_age_ms_;
  // Jobs whose logs could not be removed in an earlier batch of this sweep: asked for and skipped,
  // so that a batch of them does not stop the sweep (at most kMaxStuck; beyond, it stops).
  static constexpr std::size_t kMaxStuck = 9000;
};

}  // namespace gpufleet::controller
