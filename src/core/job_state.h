#pragma once
// A job's life: the states it may be in and the moves between them. The store enforces the moves
// (compare-and-set transitions); the controller and the CLI name the states.
//
//   PENDING -> SCHEDULED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED
//   SCHEDULED, RUNNING -> LOST | PREEMPTED -> PENDING (requeued)
//   PENDING, LOST, PREEMPTED -> CANCELLED | FAILED; SCHEDULED -> PENDING (placed, never started)
#include <optional>
#include <string_view>

namespace gpufleet::core {

enum class JobState {
  kPending,
  kScheduled,
  kRunning,
  kSucceeded,
  kFailed,
  kCancelled,
  kPreempted,
  kLost,
};
std::string_view StateName(JobState state);  // "PENDING", ...
std::optional<JobState> ParseState(std::string_view name);
bool IsTerminal(JobState state);  // SUCCEEDED, FAILED, CANCELLED
// Ended for good: terminal, or LOST (a restartable job lost is PENDING again in the same commit;
// one that is not stays LOST).
bool HasEnded(JobState state);
// Whether a job may go from `from` to `to`. A SCHEDULED or RUNNING job may also be changed in
// place (from == to), e.g. marked for preemption.
bool TransitionAllowed(JobState from, JobState to);

}  // namespace gpufleet::core
