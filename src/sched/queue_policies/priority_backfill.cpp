// `priority-backfill`: the controller's default for a shared server. Higher priority first,
// then first come; the first job that cannot start gets an EASY reservation, and a later job
// starts only if it ends before it (by its time limit or predicted run time) or fits in the GPUs
// the reservation leaves over. A job of unknown length never claims to end in time, so a big
// job at the head is never starved by a stream of small ones. No preemption.
#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

class PriorityBackfill final : public QueuePolicy {
 public:
  std::string_view Name() const override { return "priority-backfill"; }
  double Key(const QueuedJob& job) const override { return -static_cast<double>(job.priority); }
  Backfill backfill() const override { return Backfill::kEasy; }
  Estimates estimates() const override { return Estimates::kPredicted; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakePriorityBackfill() { return std::make_unique<PriorityBackfill>(); }

}  // namespace gpufleet::sched
