// Weighted fair share across queues (teams / virtual clusters) with quotas and borrowing, in the
// manner of Kueue cohorts or Run:ai over-quota: each queue's quota is its weight's share of the
// cluster; the queue furthest below its fair share (weighted dominant resource share, DRF) is
// served first; a queue may borrow whatever is idle; when a queue within its quota cannot fit its
// next job, it reclaims lent GPUs by preempting borrowers' most recent jobs. Within a queue jobs
// run first come, first served. The mechanics live in Scheduler::ScheduleFairShare.
#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

class WeightedFairShare final : public QueuePolicy {
 public:
  std::string_view Name() const override { return "fairshare"; }
  double Key(const QueuedJob& job) const override { return static_cast<double>(job.submit_s); }
  Backfill backfill() const override { return Backfill::kNone; }  // within a queue
  bool FairShare() const override { return true; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeFairShare() { return std::make_unique<WeightedFairShare>(); }

}  // namespace gpufleet::sched
