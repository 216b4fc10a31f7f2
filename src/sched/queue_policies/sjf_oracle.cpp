// SJF-oracle: shortest job first on the TRUE run times, any job that fits starts. An upper bound
// to compare deployable policies against, never a deployable policy itself.
#include <cmath>

#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

class SjfOracle final : public QueuePolicy {
 public:
  std::string_view Name() const override { return "sjf-oracle"; }
  double Key(const QueuedJob& job) const override {
    return std::isnan(job.estimate_s) ? HUGE_VAL : job.estimate_s;
  }
  Backfill backfill() const override { return Backfill::kGreedy; }
  Estimates estimates() const override { return Estimates::kOracle; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeSjfOracle() { return std::make_unique<SjfOracle>(); }

}  // namespace gpufleet::sched
