#include "controller/settlement.h"

#include <algorithm>

namespace gpufleet::controller {

std::string OomReason(int64_t kills, int64_t memory_mib, int exit_code) {
  return "out of memory: the kernel's OOM killer ended " + std::to_string(kills) +
         (kills == 1 ? " process" : " processes") +
         (memory_mib > 0 ? " at the job's memory limit of " + std::to_string(memory_mib) + " MiB"
                         : std::string(" (the job has no memory limit: its node ran out)")) +
         " (exit code " + std::to_string(exit_code) + ")";
}

Settlement Settle(const std::vector<RankStanding>& ranks, const JobStanding& job) {
  Settlement out;
  bool all_started = true, all_ended = true, failed = false, lost = false, logs_in = true;
  for (const RankStanding& r : ranks) {
    all_started = all_started && r.started;
    all_ended = all_ended && r.ended;
    if (r.ended && (r.lost || r.exit_code != 0)) failed = true;
    if (r.lost) lost = true;
    if (r.ended && r.log_in_flight) logs_in = false;
  }
  out.now_running = !job.running && all_started && !lost && !ranks.empty();
  out.stop_the_rest = failed && !all_ended && !job.stopping;
  if (!all_ended || !logs_in || ranks.empty()) return out;
  int code = 0;
  std::string reason;
  // The cause: a rank that failed on its own, before one the controller then stopped.
  std::vector<const RankStanding*> causes;
  for (const RankStanding& r : ranks) {
    if (r.lost || (r.exit_code != 0 && !r.stopped)) causes.push_back(&r);
  }
  for (const RankStanding& r : ranks) {
    if (r.exit_code != 0 && r.stopped) causes.push_back(&r);
  }
  if (!causes.empty()) {
    const RankStanding& r = *causes.front();
    code = r.exit_code;
    reason = !r.reason.empty() ? r.reason : "exit code " + std::to_string(r.exit_code);
    if (!r.lost && r.exit_code != 0 && r.oom_kills > 0) {
      reason = OomReason(r.oom_kills, job.memory_mib, r.exit_code);
    }
    if (ranks.size() > 1) reason = "node " + r.node + ": " + reason;
  }
  const bool finished_first = std::all_of(ranks.begin(), ranks.end(), [](const RankStanding& r) {
    return !r.stopped && !r.lost && r.exit_code == 0;
  });
  const bool failed_on_its_own =
      std::any_of(ranks.begin(), ranks.end(), [](const RankStanding& r) {
        return !r.stopped && !r.lost && r.exit_code != 0;
      });
  using store::JobState;
  if (job.cancel) {
    out.end = JobState::kCancelled;
    out.exit_code = code;
    out.reason = "cancelled while running";
  } else if (!job.idle_stop.empty() && !finished_first && !failed_on_its_own) {
    // Reclaimed: its GPUs stayed idle past the idle timeout. Stopped like a cancel.
    out.end = JobState::kCancelled;
    out.exit_code = code;
    out.reason = job.idle_stop;
  } else if (!job.health_stop.empty() && !finished_first) {
    // Stopped because a GPU of its became unhealthy: it runs again elsewhere when it may.
    out.end = job.restartable ? JobState::kLost : JobState::kFailed;
    if (!job.restartable) out.exit_code = code;
    out.reason = job.health_stop;
  } else if (job.preempting && !lost && !finished_first && !failed_on_its_own) {
    // Stopped (SIGTERM, the grace period to checkpoint, SIGKILL) for a job the queue policy
    // ranks higher: it waits again.
    out.end = JobState::kPreempted;
    out.exit_code = code;
    out.reason = job.resizing.empty() ? "preempted by the " + job.queue_policy + " policy"
                                      : job.resizing;
  } else if (job.timed_out) {
    out.end = JobState::kFailed;
    out.exit_code = code;
    out.reason = "time limit of " + std::to_string(job.time_limit_s) + " s reached";
  } else if (lost) {
    out.end = JobState::kLost;
    out.reason = reason;
  } else if (failed) {
    out.end = JobState::kFailed;
    out.exit_code = code;
    out.reason = reason;
  } else {
    out.end = JobState::kSucceeded;
    out.exit_code = 0;
  }
  return out;
}

}  // namespace gpufleet::controller
