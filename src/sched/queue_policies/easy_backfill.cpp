// EASY backfill: submit order; the first job that cannot start gets a reservation at the
// earliest time enough GPUs free up by the running jobs' estimates, and a later job starts only
// if it will end before then or fits in the GPUs the reservation leaves over. Estimates are
// predicted from finished jobs (the traces carry no user estimates).
#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

class EasyBackfill final : public QueuePolicy {
 public:
  std::string_view Name() const override { return "backfill"; }
  double Key(const QueuedJob& job) const override { return static_cast<double>(job.submit_s); }
  Backfill backfill() const override { return Backfill::kEasy; }
  Estimates estimates() const override { return Estimates::kPredicted; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeEasyBackfill() { return std::make_unique<EasyBackfill>(); }

}  // namespace gpufleet::sched
