#include "core/job_state.h"

namespace gpufleet::core {

std::string_view StateName(JobState state) {
  switch (state) {
    case JobState::kPending:
      return "PENDING";
    case JobState::kScheduled:
      return "SCHEDULED";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kSucceeded:
      return "SUCCEEDED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kCancelled:
      return "CANCELLED";
    case JobState::kPreempted:
      return "PREEMPTED";
    case JobState::kLost:
      return "LOST";
  }
  return "?";
}

std::optional<JobState> ParseState(std::string_view name) {
  for (JobState s :
       {JobState::kPending, JobState::kScheduled, JobState::kRunning, JobState::kSucceeded,
        JobState::kFailed, JobState::kCancelled, JobState::kPreempted, JobState::kLost}) {
    if (StateName(s) == name) return s;
  }
  return std::nullopt;
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

bool HasEnded(JobState s) { return IsTerminal(s) || s == JobState::kLost; }

bool TransitionAllowed(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::kPending:
      return to == S::kScheduled || to == S::kCancelled || to == S::kFailed;
    case S::kScheduled:
      return to == S::kScheduled || to == S::kRunning || to == S::kCancelled || to == S::kFailed ||
             to == S::kLost || to == S::kPreempted || to == S::kPending;
    case S::kRunning:
      return to == S::kRunning || to == S::kSucceeded || to == S::kFailed || to == S::kCancelled ||
             to == S::kLost || to == S::kPreempted;
    case S::kPreempted:
    case S::kLost:
      return to == S::kPending || to == S::kCancelled || to == S::kFailed;
    default:
      return false;  // terminal
  }
}

}  // namespace gpufleet::core
