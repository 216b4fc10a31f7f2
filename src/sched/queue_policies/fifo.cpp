// FIFO: submit order, strictly; a job that cannot start blocks every job after it.
#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

class Fifo final : public QueuePolicy {
 public:
  std::string_view Name() const override { return "fifo"; }
  double Key(const QueuedJob& job) const override { return static_cast<double>(job.submit_s); }
  Backfill backfill() const override { return Backfill::kNone; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeFifo() { return std::make_unique<Fifo>(); }

}  // namespace gpufleet::sched
