#pragma once
// Why each waiting job waits ("why is my job pending"), in the scheduler's own terms: the queue
// policy's order, its backfill rule or fair share, and the real gang placement (`PlaceGang`) on
// the cluster as it is, and as it would be when running jobs end. Pure: no clock, no I/O; `now`
// and the random generator are the caller's.

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "sched/placement_policy.h"
#include "sched/queue_policy.h"
#include "sched/queue_types.h"

namespace gpufleet::sched {

// A running job as an explanation sees it: where it runs, and when its run is expected to end.
struct ExplainRunning {
  RunningJob run;
  double time_limit_s = std::nan("");  // its run is stopped this long after `run.started_s`
  double estimate_s = std::nan("");    // its run is expected to last this long (a prediction)
};

struct ExplainInput {
  // Waiting jobs in the Scheduler's order (`Scheduler::Waiting`).
  std::span<const QueuedJob> waiting;
  // The cluster as the scheduler sees it: running jobs allocated, drained GPUs held.
  const core::ClusterSnapshot* cluster = nullptr;
  std::span<const ExplainRunning> running;
  // What `Scheduler::Schedule` decided for the same inputs: the jobs it would start (and the
  // running jobs it would preempt) now. Jobs started here are explained as "starting".
  std::span<const Decision> decisions;
  const QueuePolicy* queue_policy = nullptr;
  const PlacementPolicy* placement_policy = nullptr;  // prepared
  bool allow_spread = false;
  // Nodes the fleet may grow by (`Scheduler::SetGrowthNodes`): a job that fits only them is not
  // "never_fits", and it holds the order as the scheduler lets it.
  std::span<const core::NodeSpec> growth_nodes;
  // When set, what a job that is not restartable may count on instead (as the scheduler's).
  const std::vector<core::NodeSpec>* growth_nodes_on_demand = nullptr;
  // Fair-share policies: each queue's weight, as `Scheduler::SetQueueWeights` got them.
  const std::map<std::string, double>* queue_weights = nullptr;
  double default_queue_weight = 1.0;
  int64_t now_s = 0;
  // The "fits after" search (releasing running jobs one by one) runs for at most this many
  // distinct job shapes, the first in order; later jobs of a shape already searched reuse its
  // result, the others go without one. Bounds the cost on long queues.
  int max_fits_after_searches = 100;
};

// Why a job waits, for programs. Names are the JSON's `kind`.
enum class WaitKind {
  kStarting,          // "starting": the scheduler starts it at this pass
  kFitsNow,           // "fits_now": fits and nothing holds it back; starts at a coming pass
  kNoFitNow,          // "no_fit_now": not enough free room of its shape on any node now
  kGangWaitingNodes,  // "gang_waiting_nodes": a multi-node job short of nodes with room
  kBlockedByOrder,    // "blocked_by_order": fits, but the policy does not start jobs past an
                      // earlier one that cannot start (strict order; EASY's reservation; its
                      // fair-share queue's first job)
  kOverFairShare,     // "over_fair_share": its queue holds its share; it gets only idle room
  kNeverFits,         // "never_fits": no node of the cluster could ever hold it
};
std::string_view WaitKindName(WaitKind kind);

// Where a `fits_after_job`'s end time comes from.
enum class EndBasis { kTimeLimit, kEstimate, kUnknown };
std::string_view EndBasisName(EndBasis basis);  // "time_limit", "estimate", "unknown"
struct Explanation {
  JobId id = 0;
  int position = 0;  // 1-based, in the scheduler's order
  WaitKind kind = WaitKind::kNoFitNow;
  std::string reason;  // one line, in words; names other jobs by id only
  // `reason` saying which job it fits after but not when that job ends nor from what (time limit
  // or estimate), for a reader who may not see that job's prediction; empty for a job that fits
  // now or never (then `reason` is the text to show). Built with `reason`, never edited out of it:
  // the reason holds free text (queue names) that could mimic any phrase searched for.
  std::string reason_end_hidden;
  // Waiting jobs ahead of it of strictly higher priority.
  int higher_priority_ahead = 0;
  // For jobs that do not fit now: the running job whose end (with those expected to end before
  // it) first leaves enough room for it, by the real placement on a copy of the cluster, and in
  // how many seconds it is expected to end (none when its end is unknown). Jobs ahead may take
  // that room first: this says when room appears, not when the job starts.
  std::optional<JobId> fits_after_job;
  std::optional<double> fits_after_s;
  EndBasis fits_after_basis = EndBasis::kUnknown;
};

// One explanation per waiting job, in the order of `input.waiting`. Cost: one placement test per
// distinct job shape, plus the bounded "fits after" searches (each up to one release and a
// local fit test per running job, a placement only where room appeared): 10,000 waiting jobs
// over 1,000 nodes take tens of milliseconds (bench/explain_bench.cpp).
std::vector<Explanation> ExplainQueue(const ExplainInput& input, core::Rng& rng);

}  // namespace gpufleet::sched
