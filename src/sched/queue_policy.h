#pragma once
// Queue policies: the order in which waiting jobs are considered, and whether later jobs may
// start when an earlier one cannot. One file per policy under queue_policies/, listed in
// queue_policy_registry.cpp.

#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sched/queue_types.h"

namespace gpufleet::sched {

enum class Backfill {
  kNone,    // strict order: nothing starts past a job that cannot start
  kGreedy,  // any later job that fits starts (may delay the first blocked job)
  kEasy,    // EASY: later jobs start only if they do not delay the first blocked job's reservation
};

// Where a policy's run-time estimates (`QueuedJob::estimate_s`) come from.
enum class Estimates {
  kNone,       // the policy does not look at them
  kPredicted,  // learned online from finished jobs (RuntimePredictor); deployable
  kOracle,     // the true run times: an upper bound for comparison, never deployable
};

class QueuePolicy {
 public:
  virtual ~QueuePolicy() = default;
  virtual std::string_view Name() const = 0;
  // Jobs with smaller keys are considered first; equal keys go by submit time, then id. The key
  // must not change while the job waits.
  virtual double Key(const QueuedJob& job) const = 0;
  virtual Backfill backfill() const = 0;
  // What the policy needs in `estimate_s`; the caller supplies exactly that.
  virtual Estimates estimates() const { return Estimates::kNone; }

  // Preemptive policies: a waiting job may preempt running jobs whose `Key` (with the service
  // they have attained by now) is in a strictly lower priority class (`PriorityClass`).
  virtual bool Preemptive() const { return false; }
  // Preemptive policies: a job that (re)started less than this many seconds ago is not preempted,
  // so a restart's cost is not thrown away by the next arrival.
  virtual double MinRunBeforePreemptionS() const { return 0; }
  // `job`'s priority class once it has attained `attained_gpu_s` of service (its own
  // `attained_gpu_s` is not read): a running job's class now, without a copy of the job. Smaller
  // classes go first: a preemptive policy's `Key` orders by class before anything else, which
  // `Scheduler::Schedule` relies on.
  virtual int PriorityClassAt(const QueuedJob& /*job*/, double /*attained_gpu_s*/) const {
    return 0;
  }
  // `job`'s priority class with the service it has attained.
  int PriorityClass(const QueuedJob& job) const { return PriorityClassAt(job, job.attained_gpu_s); }
  // The attained GPU-seconds at which `job`, having attained `attained_gpu_s`, changes priority
  // class next (infinity: never); until then `PriorityClassAt` must give the same class. The
  // simulator wakes the scheduler at that moment, so crossings are events, not ticks, and its
  // `RunningIndex` recomputes a running job's class only then.
  virtual double NextClassChange(const QueuedJob& /*job*/, double /*attained_gpu_s*/) const {
    return HUGE_VAL;
  }
  // Starvation guard: the time at which a waiting job has waited too long and is promoted to
  // the top class (its attained service forgotten); infinity: never.
  virtual double PromotionTime(const QueuedJob& /*job*/) const { return HUGE_VAL; }

  // Fair-share policies: the Scheduler serves queues (teams, VCs) by weighted dominant resource
  // share instead of one global order, lets a queue borrow idle quota, and reclaims lent quota by
  // preemption (see Scheduler::SetQueueWeights). `Key` then orders jobs within a queue.
  virtual bool FairShare() const { return false; }

  // Learning policies: `total_gpus` GPUs' job finished after `service_gpu_s` GPU-seconds of
  // service in all its runs. True when waiting jobs' keys or classes may have changed: the caller
  // then calls `Scheduler::Rekey` before the next pass. Others ignore it.
  virtual bool Learn(int /*total_gpus*/, double /*service_gpu_s*/) { return false; }
};

struct QueuePolicyInfo {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<QueuePolicy> (*make)();
};

const std::vector<QueuePolicyInfo>& QueuePolicies();
std::unique_ptr<QueuePolicy> MakeQueuePolicy(std::string_view name);
std::string QueuePolicyNames();

// Factories, one per file under queue_policies/.
std::unique_ptr<QueuePolicy> MakeFifo();
std::unique_ptr<QueuePolicy> MakeEasyBackfill();
std::unique_ptr<QueuePolicy> MakeSjfOracle();
std::unique_ptr<QueuePolicy> MakeQssf();
std::unique_ptr<QueuePolicy> MakeTiresias();
std::unique_ptr<QueuePolicy> MakeFairShare();
std::unique_ptr<QueuePolicy> MakeLasQssf();
std::unique_ptr<QueuePolicy> MakeGittins();
std::unique_ptr<QueuePolicy> MakePriority();
std::unique_ptr<QueuePolicy> MakePriorityBackfill();

}  // namespace gpufleet::sched
