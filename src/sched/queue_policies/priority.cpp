// `priority`: the default for a shared server. Higher priority first, then first come, first
// served; any job that fits starts (greedy backfill), so small jobs use GPUs a big one at the head
// cannot use yet. No preemption.
#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

class Priority final : public QueuePolicy {
 public:
  std::string_view Name() const override { return "priority"; }
  double Key(const QueuedJob& job) const override { return -static_cast<double>(job.priority); }
  Backfill backfill() const override { return Backfill::kGreedy; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakePriority() { return std::make_unique<Priority>(); }

}  // namespace gpufleet::sched
