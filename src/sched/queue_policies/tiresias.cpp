// Tiresias 2D-LAS (NSDI'19), without knowledge of run times: jobs fall into priority classes by
// the GPU-service they have attained (GPUs x seconds run); a lower class preempts running jobs
// of a higher one, and jobs within a class go first come, first served. Default thresholds: one
// GPU-hour and ten GPU-hours (three classes).
// Starvation guard: a job that has waited `kStarveFactor` times as long as it has run (and at
// least `kStarveFloorS`) since it last entered the queue is promoted to the top class.
#include <algorithm>
#include <vector>

#include "sched/queue_policies/las_classes.h"
#include "sched/queue_policy.h"

namespace gpufleet::sched {
namespace {

constexpr double kStarveFactor = 10.0;
constexpr double kStarveFloorS = 3600.0;

class Tiresias final : public QueuePolicy {
 public:
  explicit Tiresias(std::vector<double> thresholds_gpu_s) : classes_(std::move(thresholds_gpu_s)) {}
  std::string_view Name() const override { return "tiresias"; }
  // Class first, then submit time.
  double Key(const QueuedJob& job) const override {
    return static_cast<double>(PriorityClass(job)) * 1e12 + static_cast<double>(job.submit_s);
  }
  Backfill backfill() const override { return Backfill::kGreedy; }
  bool Preemptive() const override { return true; }
  int PriorityClassAt(const QueuedJob& /*job*/, double attained_gpu_s) const override {
    return classes_.ClassOf(attained_gpu_s);
  }
  double PromotionTime(const QueuedJob& job) const override {
    if (job.attained_gpu_s <= 0) return HUGE_VAL;  // already in the top class
    const double ran_s = job.attained_gpu_s / std::max(job.total_gpus, 1);
    return static_cast<double>(job.waiting_since_s) +
           std::max(kStarveFactor * ran_s, kStarveFloorS);
  }
  double NextClassChange(const QueuedJob& /*job*/, double attained_gpu_s) const override {
    return classes_.NextChange(attained_gpu_s);
  }

 private:
  LasClasses classes_;
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeTiresias() {
  return std::make_unique<Tiresias>(std::vector<double>{3600.0, 36000.0});
}

}  // namespace gpufleet::sched
