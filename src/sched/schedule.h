#pragma once
// `Scheduler`: the one scheduling function the controller and the simulator share. It holds the
// waiting jobs in the queue policy's order; `Schedule` looks at a cluster snapshot, the running
// jobs and the time, and returns which jobs to start where. It performs no I/O and reads no
// clock: `now` is whatever the caller's clock says, real or simulated.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "sched/placement_policy.h"
#include "sched/queue_policy.h"
#include "sched/queue_types.h"
#include "sched/running_index.h"

namespace gpufleet::sched {

class Scheduler {
 public:
  // Both policies must outlive the Scheduler.
  Scheduler(const QueuePolicy& queue_policy, const PlacementPolicy& placement_policy,
            bool allow_spread)
      : queue_policy_(queue_policy),
        placement_policy_(placement_policy),
        allow_spread_(allow_spread) {}
  // Not copied: the buckets point into the queue's own nodes (a move keeps them).
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  Scheduler(Scheduler&&) = default;

  // Adds a waiting job; its id must not be waiting already.
  void Enqueue(const QueuedJob& job);
  // Removes a waiting job (started, cancelled); false when it is not waiting.
  bool Remove(JobId id);
  size_t waiting() const { return order_.size(); }
  // Recomputes every waiting job's key and promotion time, after the policy said its order
  // changed (`QueuePolicy::Learn`). O(waiting log waiting).
  void Rekey();
  // The waiting jobs in the policy's order (a copy: O(waiting)). Under a fair-share policy this is
  // the order within each queue merged by key; queues themselves are served by share.
  std::vector<QueuedJob> Waiting() const;
  // What `SetQueueWeights` was given (empty, 1.0 without a call).
  const std::map<std::string, double>& queue_weights() const { return queue_weights_; }
  double default_queue_weight() const { return default_queue_weight_; }

  // Fair share (`QueuePolicy::FairShare()`): each queue's weight. A queue's quota is its weight's
  // share of the cluster, over all queues named here or seen waiting or running; a queue not
  // named weighs `default_weight`. Without a call every queue weighs 1.
  void SetQueueWeights(std::map<std::string, double> weights, double default_weight = 1.0);

  // A running elastic job grows only after this many seconds since its last start or resize
  // (each resize is a checkpoint-restart, so growing at every pass would thrash). Default 0.
  void SetElasticGrowAfter(double seconds) { elastic_grow_after_s_ = seconds; }
  // Nodes the fleet may grow by (an autoscaler's groups). A waiting job that no nodes of the
  // cluster or of these could ever hold takes no reservation, strict order or queue turn (it
  // would idle the cluster for good); one that fits only these still does. Default: none.
  // `on_demand`, when given: what a job that is not restartable may count on (an autoscaler puts
  // only restartable jobs on spot, so its spend cap buys the others fewer nodes).
  void SetGrowthNodes(std::vector<core::NodeSpec> nodes,
                      std::optional<std::vector<core::NodeSpec>> on_demand = std::nullopt) {
    growth_nodes_ = std::move(nodes);
    growth_nodes_on_demand_ = std::move(on_demand);
  }
  // The growth nodes `job` may count on (SetGrowthNodes).
  std::span<const core::NodeSpec> GrowthNodesFor(const QueuedJob& job) const {
    return !job.restartable && growth_nodes_on_demand_ ? *growth_nodes_on_demand_ : growth_nodes_;
  }

  // For tests: every pass walks the whole queue and looks for victims for every job that may
  // preempt, skipping nothing (the same decisions, only slower: the reference the pass that skips
  // jobs out of reach is checked against), and checks that the queue goes by class first.
  void SetReferencePass(bool on) { reference_pass_ = on; }

  // Starvation guard: promotes every waiting job whose `PromotionTime` has come (its attained
  // service is forgotten, so it re-enters the top class). Call before `Schedule`.
  void PromoteStarved(int64_t now);
  // The earliest promotion time among waiting jobs (infinity: none), for event-driven callers.
  double NextPromotion() const;

  // The jobs to start now and, for preemptive policies, the running jobs to stop first, in the
  // order decided: each kPreempt comes before the kStart it makes room for. Carrying them out is
  // the caller's business (and so is updating the queue): after the preempted jobs stop, the
  // returned placements fit `cluster` all together.
  // Elastic jobs (`QueuedJob::min_gpus`) also get kResize decisions: shrinks, each before the
  // kStart it makes room for (tried before any preemption, and only when enough), and at the end
  // grows into GPUs left idle. Carried out in order (release the old placement, take the new
  // one), every decision fits. Only the non-fair-share policies resize; under a fair-share
  // policy an elastic job starts and stays at its fewest.
  // With elastic jobs running, call it even when nothing waits: idle GPUs may be lent to them.
  // `index`, if given, mirrors `running` and was advanced to `now` (`RunningIndex`): the pass
  // then reads the running jobs' classes and GPUs from it instead of computing them (the same
  // decisions, without a pass cost that grows with every running job).
  std::vector<Decision> Schedule(const core::ClusterSnapshot& cluster,
                                 std::span<const RunningJob> running, int64_t now, core::Rng& rng,
                                 const RunningIndex* index = nullptr) const;

  // A waiting job's place in the policy's order (public for the fair-share pass's helpers), and
  // two facts about it the pass reads often (neither changes while the job waits; not part of the
  // order).
  struct Entry {
    double key;
    int64_t submit_s;
    JobId id;
    int priority_class = 0;  // QueuePolicy::PriorityClass
    int least_gpus = 0;      // whole GPUs it needs at the least (an elastic job's min); 0: a share
    bool operator<(const Entry& o) const {
      if (key != o.key) return key < o.key;
      if (submit_s != o.submit_s) return submit_s < o.submit_s;
      return id < o.id;
    }
  };

 private:
  std::vector<Decision> ScheduleFairShare(const core::ClusterSnapshot& cluster,
                                          std::span<const RunningJob> running,
                                          core::Rng& rng) const;

  const QueuePolicy& queue_policy_;
  const PlacementPolicy& placement_policy_;
  bool allow_spread_;
  std::map<Entry, QueuedJob> order_;  // waiting jobs in policy order
  // The same jobs by priority class, then by the GPUs they need at the least, each bucket in
  // policy order (not under fair share): a pass visits only the buckets of jobs that could start,
  // not the whole queue (see Schedule).
  using Bucket = std::map<Entry, const QueuedJob*>;
  std::map<int, std::map<int, Bucket>> by_class_and_size_;
  std::unordered_map<JobId, Entry> entry_of_;  // for removal by id
  std::multimap<double, JobId> promotions_;    // promotion time -> waiting job
  // Fair-share policies only: each queue's waiting jobs, in policy order.
  std::map<std::string, std::set<Entry>> queue_entries_;
  std::map<std::string, double> queue_weights_;
  double default_queue_weight_ = 1.0;
  double elastic_grow_after_s_ = 0;
  std::vector<core::NodeSpec> growth_nodes_;
  std::optional<std::vector<core::NodeSpec>> growth_nodes_on_demand_;
  bool reference_pass_ = false;
};

}  // namespace gpufleet::sched
