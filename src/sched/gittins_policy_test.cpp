// The `gittins` queue policy: it learns the workload's service distribution, re-orders the queue
// when told (Scheduler::Rekey), never preempts a job that is on track, and protects a job that
// has just (re)started.
#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "sched/policy_registry.h"
#include "sched/schedule.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using test::Node;

QueuedJob Job(JobId id, int gpus, int64_t submit, double attained) {
  QueuedJob j;
  j.id = id;
  j.total_gpus = gpus;
  j.submit_s = submit;
  j.attained_gpu_s = attained;
  return j;
}

RunningJob RunningOn(core::ClusterSnapshot& c, JobId id, int gpus, double attained,
                     int64_t started) {
  RunningJob r;
  r.job = Job(id, gpus, 0, attained);
  r.started_s = started;
  const core::GpuMask mask = (1u << gpus) - 1;
  r.placement = {{0, mask}};
  c.Allocate(0, SliceSpec(r.job, gpus), mask);
  return r;
}

int Preemptions(const std::vector<Decision>& decisions) {
  int n = 0;
  for (const Decision& d : decisions) n += d.kind == Decision::Kind::kPreempt;
  return n;
}

// Teaches `policy` that 1-GPU jobs need `gpu_s` (+-5%) until it says its order changed.
void Teach(QueuePolicy& policy, double gpu_s, int jobs) {
  core::Rng rng(7);
  for (int i = 0; i < jobs; ++i) policy.Learn(1, gpu_s * (0.95 + 0.1 * rng.Uniform()));
}

class GittinsPolicyTest : public ::testing::Test {
 protected:
  std::unique_ptr<QueuePolicy> policy_ = MakeQueuePolicy("gittins");
  std::unique_ptr<PlacementPolicy> placement_ = MakePlacementPolicy("bestfit");
  core::Rng rng_{1};
};

TEST_F(GittinsPolicyTest, RekeyAppliesWhatWasLearned) {
  ASSERT_NE(policy_, nullptr);
  Scheduler s(*policy_, *placement_, true);
  s.Enqueue(Job(1, 1, 0, 3600));  // ran an hour before it was preempted
  s.Enqueue(Job(2, 1, 10, 0));    // new
  // Nothing learned yet: the prior is least attained service first.
  ASSERT_EQ(s.Waiting().front().id, 2);
  // Every job needs about two GPU-hours: the one that ran an hour is on track, and goes first
  // (same class as a newcomer, and it came first).
  bool changed = false;
  core::Rng rng(7);
  for (int i = 0; i < 500; ++i) changed |= policy_->Learn(1, 7200 * (0.95 + 0.1 * rng.Uniform()));
  ASSERT_TRUE(changed);
  EXPECT_EQ(s.Waiting().front().id, 2) << "keys are cached until Rekey";
  s.Rekey();
  EXPECT_EQ(s.Waiting().front().id, 1);
  EXPECT_EQ(s.waiting(), 2U);
  EXPECT_TRUE(s.Remove(1));
  EXPECT_TRUE(s.Remove(2));
}

TEST_F(GittinsPolicyTest, NarrowServiceNeverPreemptsAJobOnTrack) {
  Teach(*policy_, 7200, 500);
  Scheduler s(*policy_, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(1)});
  std::vector<RunningJob> running = {RunningOn(c, 1, 1, 0, 0)};
  s.Enqueue(Job(2, 1, 4000, 0));
  // An hour in, of about two: a newcomer waits.
  EXPECT_EQ(Preemptions(s.Schedule(c, running, 3600, rng_)), 0);
}

TEST_F(GittinsPolicyTest, HeavyTailPreemptsAJobThatTurnedOutLongButNotRightAfterItStarted) {
  // 90% of jobs need 5 GPU-minutes, 10% 100 GPU-hours.
  for (int i = 0; i < 900; ++i) policy_->Learn(1, 300);
  for (int i = 0; i < 100; ++i) policy_->Learn(1, 360000);
  Scheduler s(*policy_, *placement_, true);
  s.Enqueue(Job(2, 1, 5000, 0));
  {
    // Restarted 60 s ago after 2 GPU-hours in earlier runs: protected for now.
    core::ClusterSnapshot c({Node().Gpus(1)});
    std::vector<RunningJob> running = {RunningOn(c, 1, 1, 7200, 5000)};
    EXPECT_EQ(Preemptions(s.Schedule(c, running, 5060, rng_)), 0);
  }
  {
    // Running for an hour now: the newcomer (likely short) preempts it.
    core::ClusterSnapshot c({Node().Gpus(1)});
    std::vector<RunningJob> running = {RunningOn(c, 1, 1, 0, 0)};
    const std::vector<Decision> d = s.Schedule(c, running, 3600, rng_);
    ASSERT_EQ(d.size(), 2U);
    EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
    EXPECT_EQ(d[0].job, 1);
    EXPECT_EQ(d[1].job, 2);
  }
}

TEST_F(GittinsPolicyTest, ClassChangesAreReportedPerSize) {
  // 8-GPU jobs need about 8 x 2 GPU-hours, 1-GPU jobs 5 minutes: different tables once enough
  // of each have finished.
  for (int i = 0; i < 200; ++i) policy_->Learn(1, 300);
  for (int i = 0; i < 200; ++i) policy_->Learn(8, 8 * 7200);
  QueuedJob small = Job(1, 1, 0, 1200);
  QueuedJob big = Job(2, 8, 0, 1200);
  // 20 GPU-minutes: a 1-GPU job is far past its kind's service, an 8-GPU one just began.
  EXPECT_GT(policy_->PriorityClass(small), policy_->PriorityClass(big));
  EXPECT_EQ(policy_->PriorityClass(big), 0);
  EXPECT_GT(policy_->NextClassChange(small, 0), 0);
  EXPECT_LT(policy_->NextClassChange(small, 0), policy_->NextClassChange(big, 0));
}

// A gang costs the queue more than its GPU-seconds (it needs all its GPUs free at once), so a wide
// job that fell behind its kind sits deeper than a narrow one with the same prospects: 1-GPU and
// 8-GPU jobs with the same run times (the 8-GPU table, built from nearly the same jobs scaled by
// 8, puts them 3 classes apart per GPU-second) are 3 + 4 classes apart (8^1.25 = 2^3.75,
// rounded), not 3. Newcomers of either width stay in class 0. (Deterministic: no randomness.)
TEST_F(GittinsPolicyTest, AWideJobThatFellBehindSitsDeeperThanItsGpuServiceAlonePutsIt) {
  for (int gpus : {1, 8}) {
    for (int i = 0; i < 900; ++i) policy_->Learn(gpus, gpus * 300.0);
    for (int i = 0; i < 100; ++i) policy_->Learn(gpus, gpus * 360000.0);
  }
  const QueuedJob narrow = Job(1, 1, 0, 3600);  // an hour in, of a kind that mostly needs 5 min
  const QueuedJob wide = Job(2, 8, 0, 8 * 3600);
  ASSERT_GT(policy_->PriorityClass(narrow), 0);
  EXPECT_EQ(policy_->PriorityClass(wide), policy_->PriorityClass(narrow) + 7);
  EXPECT_EQ(policy_->PriorityClass(Job(3, 8, 0, 0)), 0);
  EXPECT_EQ(policy_->PriorityClass(Job(4, 1, 0, 0)), 0);
  // Where the class changes does not move with the width.
  EXPECT_DOUBLE_EQ(policy_->NextClassChange(wide, 8 * 3600),
                   8 * policy_->NextClassChange(narrow, 3600));
}

// A waiting job's key (and class) may change only when `Learn` returns true, since only then does
// the caller re-key its queue. Before, a size's own table took over as soon as the 30th job of
// that size had finished, even when that finish rebuilt nothing: the waiting job's key changed
// while the queue still held it under the old one.
TEST_F(GittinsPolicyTest, AWaitingJobsKeyChangesOnlyWhenLearnSaysSo) {
  const QueuedJob waiting = Job(1, 4, 0, 100);  // a 4-GPU job that ran 25 s
  int crossings_tried = 0;
  // Short 1-GPU jobs first (how many decides where the rebuilds fall), then long 4-GPU jobs, so a
  // job 25 s in reads differently in the shared table and in its size's. The case that matters:
  // a 30th 4-GPU job whose finish rebuilds nothing.
  for (int short_jobs = 400; short_jobs < 440; ++short_jobs) {
    std::unique_ptr<QueuePolicy> policy = MakeQueuePolicy("gittins");
    for (int i = 0; i < short_jobs; ++i) policy->Learn(1, 300);
    for (int i = 0; i < 29; ++i) policy->Learn(4, 4 * 36000);
    const double key_before = policy->Key(waiting);
    const int class_before = policy->PriorityClass(waiting);
    if (policy->Learn(4, 4 * 36000)) continue;  // a rebuild: the key may change
    ++crossings_tried;
    EXPECT_EQ(policy->Key(waiting), key_before) << short_jobs << " short jobs first";
    EXPECT_EQ(policy->PriorityClass(waiting), class_before) << short_jobs << " short jobs first";
  }
  EXPECT_GT(crossings_tried, 10);
}

}  // namespace
}  // namespace gpufleet::sched
