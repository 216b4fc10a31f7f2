#pragma once
// The running jobs' priority classes and GPUs, kept across scheduling passes so that a pass of a
// preemptive policy does not recompute every running job's class (issue 18, section 4: that read
// made the replay grow faster than the trace).

#include <cstdint>
#include <map>
#include <queue>
#include <set>
#include <span>
#include <vector>

#include "sched/queue_policy.h"
#include "sched/queue_types.h"

namespace gpufleet::sched {

// Where a running job stands among the victims of its priority class: the one expected to end
// last goes first (its estimated end, estimate + start; no estimate: never), then the most
// recently started, then the largest id. Fixed for as long as the job runs, so an order of
// running jobs kept across passes stays ordered.
struct VictimRank {
  double expected_end_s;
  int64_t started_s;
  JobId id;
  // True if this job is taken before `o`.
  bool operator<(const VictimRank& o) const {
    if (expected_end_s != o.expected_end_s) return expected_end_s > o.expected_end_s;
    if (started_s != o.started_s) return started_s > o.started_s;
    return id > o.id;
  }
};
VictimRank RankAsVictim(const RunningJob& r);

// Slot i describes running[i] of the caller's list of running jobs, which it mirrors: the caller
// calls `Append` after adding a job at the end, `SwapRemove` when it moves the last job into a
// removed job's slot, `RecomputeAll` after the policy's classes changed (`QueuePolicy::Learn`
// returned true), and `AdvanceTo(running, now)` before each pass at `now`. Then every slot's class
// is exactly `Scheduler::Schedule`'s: `PriorityClassAt(job, attained + gpus × (now − started))`,
// and "may be preempted" is exactly "ran at least `MinRunBeforePreemptionS`". A class is recomputed
// only when the service could have crossed the policy's next class change (`NextClassChange`,
// checked a second early, so rounding never lets a crossing slip by), so a pass costs
// O(changes × log R), not O(R). Pure: `now` is the caller's. It relies on the policy's contract
// that a job's class stays put until its service reaches `NextClassChange` (and changes otherwise
// only when `Learn` returns true): a policy that breaks it would be read stale here.
class RunningIndex {
 public:
  explicit RunningIndex(const QueuePolicy& policy);

  void Append(std::span<const RunningJob> running, int64_t now);
  void SwapRemove(size_t slot);
  void RecomputeAll(std::span<const RunningJob> running, int64_t now);
  void AdvanceTo(std::span<const RunningJob> running, int64_t now);

  size_t size() const { return slots_.size(); }
  int64_t now() const { return now_; }
  int class_of(size_t slot) const { return slots_[slot].cls; }
  int gpus_of(size_t slot) const { return slots_[slot].gpus; }
  // The largest class of any running job (-1: none).
  int max_class() const { return count_of_class_.empty() ? -1 : count_of_class_.rbegin()->first; }
  // GPUs of the jobs that may be preempted, by class (classes with none are absent).
  const std::map<int, int64_t>& preemptible_gpus_of_class() const { return preemptible_gpus_; }
  int64_t elastic_jobs() const { return elastic_jobs_; }
  // The jobs that may be preempted, by class, each class in victim order (`VictimRank`).
  struct Victim {
    VictimRank rank;
    size_t slot;
    bool operator<(const Victim& o) const { return rank < o.rank; }
  };
  using VictimsByClass = std::map<int, std::set<Victim>>;
  const VictimsByClass& victims_by_class() const { return victims_; }

 private:
  struct Slot {
    int cls = 0;
    int gpus = 0;
    bool preemptible = false;
    bool elastic = false;
    VictimRank rank{};
    uint64_t stamp = 0;      // changes whenever the slot's checks are re-armed
    int64_t check_s = 0;     // when the class must be looked at again (INT64_MAX: never)
    int64_t eligible_s = 0;  // when it may be preempted (INT64_MAX: already may)
  };
  struct Check {
    int64_t at;
    size_t slot;
    uint64_t stamp;
    bool operator>(const Check& o) const { return at > o.at; }
  };
  // Adds slot `slot` to the figures (+1) or takes it out (-1).
  void Count(size_t slot, int sign);
  // Recomputes slot `slot`'s class and eligibility at `now` and arms its next checks.
  void Evaluate(std::span<const RunningJob> running, size_t slot, int64_t now);
  void Arm(size_t slot);

  const QueuePolicy& policy_;
  double min_run_s_;
  std::vector<Slot> slots_;
  std::map<int, int64_t> count_of_class_;
  std::map<int, int64_t> preemptible_gpus_;
  VictimsByClass victims_;
  int64_t elastic_jobs_ = 0;
  int64_t now_ = INT64_MIN;
  uint64_t next_stamp_ = 0;
  std::priority_queue<Check, std::vector<Check>, std::greater<>> checks_;
};

}  // namespace gpufleet::sched
