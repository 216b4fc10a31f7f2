#include "sched/running_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "core/rng.h"
#include "sched/policy_registry.h"

namespace gpufleet::sched {
namespace {

QueuedJob Gpus(JobId id, int gpus, int64_t submit) {
  QueuedJob j;
  j.id = id;
  j.total_gpus = gpus;
  j.submit_s = submit;
  return j;
}

// What the index must say at `now`: the pass's own computation over every running job.
void ExpectMatchesAFullScan(const QueuePolicy& policy, const RunningIndex& index,
                            const std::vector<RunningJob>& running, int64_t now) {
  ASSERT_EQ(index.size(), running.size());
  int max_class = -1;
  int64_t elastic = 0;
  std::map<int, int64_t> preemptible;
  std::map<int, std::vector<size_t>> victims;  // in victim order, once sorted below
  for (size_t i = 0; i < running.size(); ++i) {
    const RunningJob& r = running[i];
    const int gpus = GpusOf(r.placement);
    const double ran_s = static_cast<double>(now - r.started_s);
    const int cls = policy.Preemptive()
                        ? policy.PriorityClassAt(r.job, r.job.attained_gpu_s + gpus * ran_s)
                        : 0;
    ASSERT_EQ(index.class_of(i), cls) << "slot " << i << " at " << now;
    ASSERT_EQ(index.gpus_of(i), gpus);
    max_class = std::max(max_class, cls);
    elastic += IsElastic(r.job);
    if (policy.Preemptive() && ran_s >= policy.MinRunBeforePreemptionS()) {
      if (gpus > 0) preemptible[cls] += gpus;
      victims[cls].push_back(i);
    }
  }
  EXPECT_EQ(index.max_class(), max_class) << "at " << now;
  EXPECT_EQ(index.elastic_jobs(), elastic);
  EXPECT_EQ(index.preemptible_gpus_of_class(), preemptible) << "at " << now;
  ASSERT_EQ(index.victims_by_class().size(), victims.size());
  for (auto& [cls, slots] : victims) {
    std::sort(slots.begin(), slots.end(), [&](size_t a, size_t b) {
      return RankAsVictim(running[a]) < RankAsVictim(running[b]);
    });
    std::vector<size_t> got;
    for (const auto& v : index.victims_by_class().at(cls)) got.push_back(v.slot);
    EXPECT_EQ(got, slots) << "class " << cls << " at " << now;
  }
}

// Jobs start, stop and run across class thresholds (and, under gittins, the minimum run before
// preemption and table rebuilds) over random steps of time, some of them a second or less: at
// every step the index says exactly what a scan of every running job computes.
TEST(RunningIndexTest, SaysWhatAFullScanComputesAsJobsStartStopAndCrossClasses) {
  for (const char* name : {"tiresias", "las-qssf", "gittins", "fifo"}) {
    SCOPED_TRACE(name);
    auto policy = MakeQueuePolicy(name);
    for (int i = 0; i < 120; ++i) policy->Learn(1 << (i % 4), 900.0 * (1 + i % 9));
    RunningIndex index(*policy);
    std::vector<RunningJob> running;
    core::Rng rng(7);
    int64_t now = 1000;
    JobId id = 1;
    int class_changes = 0;
    std::vector<int> last_class;
    for (int step = 0; step < 3000; ++step) {
      const uint64_t what = rng.Below(10);
      if (what < 4 || running.empty()) {
        RunningJob r;
        const int gpus = 1 << rng.Below(4);
        r.job = Gpus(id++, gpus, now);
        if (gpus > 1 && rng.Below(5) == 0) r.job.min_gpus = 1;
        r.job.attained_gpu_s = rng.Below(3) == 0 ? 1800.0 * rng.Below(100) : 0;
        r.job.estimate_s = rng.Below(2) == 0 ? 600.0 * rng.Below(20) : std::nan("");
        r.started_s = now;
        r.placement = {{0, static_cast<core::GpuMask>((1u << gpus) - 1)}};
        running.push_back(r);
        index.Append(running, now);
      } else if (what < 6) {
        const size_t slot = rng.Below(running.size());
        running[slot] = running.back();
        running.pop_back();
        index.SwapRemove(slot);
      } else if (what == 6 && policy->Learn(1 << rng.Below(4), 60.0 * (1 + rng.Below(600)))) {
        index.RecomputeAll(running, now);
      }
      now += rng.Below(3) == 0 ? static_cast<int64_t>(rng.Below(2)) : rng.Below(4000);
      index.AdvanceTo(running, now);
      ASSERT_NO_FATAL_FAILURE(ExpectMatchesAFullScan(*policy, index, running, now));
      for (size_t i = 0; i < running.size() && i < last_class.size(); ++i) {
        class_changes += index.class_of(i) != last_class[i];
      }
      last_class.assign(running.size(), 0);
      for (size_t i = 0; i < running.size(); ++i) last_class[i] = index.class_of(i);
    }
    if (policy->Preemptive()) {
      EXPECT_GT(class_changes, 50) << "jobs should cross classes";
    }
  }
}

}  // namespace
}  // namespace gpufleet::sched
