// QSSF (Helios, SC'21): quasi-shortest-service-first. Jobs are ordered by predicted GPU-time
// (predicted run time x GPUs), the prediction learned online from finished jobs only; any job
// that fits starts.
#include <cmath>

#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

class Qssf final : public QueuePolicy {
 public:
  std::string_view Name() const override { return "qssf"; }
  double Key(const QueuedJob& job) const override {
    return std::isnan(job.estimate_s) ? HUGE_VAL : job.estimate_s * job.total_gpus;
  }
  Backfill backfill() const override { return Backfill::kGreedy; }
  Estimates estimates() const override { return Estimates::kPredicted; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeQssf() { return std::make_unique<Qssf>(); }

}  // namespace gpufleet::sched
