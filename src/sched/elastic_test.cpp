#include "sched/elastic.h"

#include <gtest/gtest.h>

#include <bit>

#include "sched/policy_registry.h"
#include "sched/schedule.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using test::Node;

QueuedJob Job(JobId id, int gpus, int64_t submit, int min_gpus = 0) {
  QueuedJob j;
  j.id = id;
  j.total_gpus = gpus;
  j.min_gpus = min_gpus;
  j.submit_s = submit;
  return j;
}

// A running job `job` on the lowest `gpus` GPUs of node `node` (above `skip` GPUs).
RunningJob RunningOn(core::ClusterSnapshot& c, QueuedJob job, int node, int gpus, int skip,
                     int64_t started) {
  RunningJob r;
  r.job = std::move(job);
  r.started_s = started;
  const core::GpuMask mask = ((1u << gpus) - 1) << skip;
  r.placement = {{node, mask}};
  c.Allocate(node, SliceSpec(r.job, gpus), mask);
  return r;
}

// Carries the decisions out on `c` and `running` as a caller would; checks that each fits.
void Apply(core::ClusterSnapshot& c, std::vector<RunningJob>& running,
           const std::vector<Decision>& decisions, const Scheduler& s) {
  for (const Decision& d : decisions) {
    auto it = std::find_if(running.begin(), running.end(),
                           [&](const RunningJob& r) { return r.job.id == d.job; });
    if (d.kind != Decision::Kind::kStart) {
      ASSERT_NE(it, running.end());
      for (const Allocation& a : it->placement) {
        c.Release(a.node, SliceSpec(it->job, std::popcount(a.gpus)), a.gpus);
      }
    }
    if (d.kind == Decision::Kind::kPreempt) {
      running.erase(it);
      continue;
    }
    for (const Allocation& a : d.placement) {
      for (int g = 0; g < 32; ++g) {
        if (a.gpus & (1u << g)) {
          ASSERT_EQ(c.state(a.node).gpu_free[g], core::kGpuMilli) << "job " << d.job;
        }
      }
    }
    if (d.kind == Decision::Kind::kResize) {
      for (const Allocation& a : d.placement) {
        c.Allocate(a.node, SliceSpec(it->job, std::popcount(a.gpus)), a.gpus);
      }
      it->placement = d.placement;
      continue;
    }
    (void)s;
    RunningJob r;
    r.job.id = d.job;
    r.placement = d.placement;
    for (const Allocation& a : d.placement) {
      c.Allocate(a.node, SliceSpec(r.job, std::popcount(a.gpus)), a.gpus);
    }
    running.push_back(std::move(r));
  }
}

class ElasticTest : public ::testing::Test {
 protected:
  std::unique_ptr<PlacementPolicy> placement_ = MakePlacementPolicy("bestfit");
  core::Rng rng_{1};
};

TEST_F(ElasticTest, StartsAtTheMostThatFitsBetweenMinAndMax) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<RunningJob> running = {RunningOn(c, Job(100, 3, 0), 0, 3, 0, 0)};
  s.Enqueue(Job(1, 8, 10, 2));  // 2..8 GPUs; 5 free
  auto d = s.Schedule(c, running, 20, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kStart);
  EXPECT_EQ(GpusOf(d[0].placement), 5);
  // Below its min it waits.
  Scheduler s2(*fifo, *placement_, true);
  core::ClusterSnapshot c2({Node().Gpus(8)});
  std::vector<RunningJob> running2 = {RunningOn(c2, Job(100, 7, 0), 0, 7, 0, 0)};
  s2.Enqueue(Job(1, 8, 10, 2));
  EXPECT_TRUE(s2.Schedule(c2, running2, 20, rng_).empty());
}

TEST_F(ElasticTest, GrowsIntoIdleGpusOnlyAfterTheGrowDelayAndWhenNothingWaits) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, true);
  s.SetElasticGrowAfter(100);
  core::ClusterSnapshot c({Node().Gpus(8)});
  // An elastic job at 2 of its 2..8 GPUs, started at t=0; the other 6 GPUs are idle.
  std::vector<RunningJob> running = {RunningOn(c, Job(7, 8, 0, 2), 0, 2, 0, 0)};
  EXPECT_TRUE(s.Schedule(c, running, 50, rng_).empty()) << "too soon after its start";
  auto d = s.Schedule(c, running, 150, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kResize);
  EXPECT_EQ(d[0].job, 7);
  EXPECT_EQ(GpusOf(d[0].placement), 8);
  Apply(c, running, d, s);
  EXPECT_EQ(c.used_gpu_milli(), 8000);
  // A rigid job of 4 arrives: the grown job gives back all it holds above its min (one restart
  // now rather than one per later arrival) before anything else happens.
  s.Enqueue(Job(8, 4, 200));
  d = s.Schedule(c, running, 200, rng_);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kResize);
  EXPECT_EQ(d[0].job, 7);
  EXPECT_EQ(GpusOf(d[0].placement), 2);
  EXPECT_EQ(d[1].kind, Decision::Kind::kStart);
  EXPECT_EQ(d[1].job, 8);
  Apply(c, running, d, s);
}

TEST_F(ElasticTest, ShrinksBeforePreemptingAnyone) {
  // Tiresias: the new job (no service yet) outranks the running ones and may preempt; an elastic
  // job above its min gives GPUs back first, and no job is preempted.
  auto tiresias = MakeQueuePolicy("tiresias");
  Scheduler s(*tiresias, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<RunningJob> running = {
      RunningOn(c, Job(100, 2, 0), 0, 2, 0, 0),       // rigid, 2 GPUs
      RunningOn(c, Job(101, 8, 0, 2), 0, 6, 2, 0)};  // elastic 2..8, at 6
  s.Enqueue(Job(1, 3, 5000));
  auto d = s.Schedule(c, running, 5000, rng_);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kResize);
  EXPECT_EQ(d[0].job, 101);
  EXPECT_EQ(GpusOf(d[0].placement), 2);  // down to its min, in one restart
  EXPECT_EQ(d[1].kind, Decision::Kind::kStart);
  for (const Decision& x : d) EXPECT_NE(x.kind, Decision::Kind::kPreempt);
  Apply(c, running, d, s);
}

// Found by a review: a waiting job that no node could ever hold (here: more CPU per GPU than any
// node has) tried a shrink plan on every pass and used up one of the pass's kMaxShrinkPlans; 16
// of them ahead in the queue kept a job behind from the shrink that would start it, for good.
TEST_F(ElasticTest, JobsThatCanNeverFitDoNotUseUpTheShrinkBudget) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, false);
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<RunningJob> running = {RunningOn(c, Job(100, 8, 0, 2), 0, 8, 0, 0)};
  for (int k = 0; k < 20; ++k) {
    QueuedJob never = Job(1 + k, 1, k);
    never.cpu_milli_per_gpu = int64_t{1} << 40;
    s.Enqueue(never);
  }
  s.Enqueue(Job(50, 1, 100));
  const auto d = s.Schedule(c, running, 200, rng_);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kResize);
  EXPECT_EQ(d[0].job, 100);
  EXPECT_EQ(d[1].kind, Decision::Kind::kStart);
  EXPECT_EQ(d[1].job, 50);
  Apply(c, running, d, s);
}

TEST_F(ElasticTest, PreemptsOnlyWhenShrinkingIsNotEnough) {
  auto tiresias = MakeQueuePolicy("tiresias");
  Scheduler s(*tiresias, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  QueuedJob rigid = Job(100, 4, 0);
  rigid.attained_gpu_s = 1e9;  // far down the queue: the first victim
  std::vector<RunningJob> running = {
      RunningOn(c, rigid, 0, 4, 0, 0),
      RunningOn(c, Job(101, 4, 0, 3), 0, 4, 4, 0)};  // elastic 3..4: 1 GPU to give back
  s.Enqueue(Job(1, 4, 5000));
  auto d = s.Schedule(c, running, 5000, rng_);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d[0].job, 100);
  EXPECT_EQ(d.back().kind, Decision::Kind::kStart);
  for (const Decision& x : d) EXPECT_NE(x.kind, Decision::Kind::kResize);
}

TEST_F(ElasticTest, AStartGrownInThePassComesAfterThePreemptionsWhoseGpusItTakes) {
  // Tiresias: R (far down the queue) holds 6 of 8 GPUs. E (elastic 1..4) starts at 1; X needs 4
  // and preempts R; E then grows into GPUs R frees, so its start must come after R's preemption.
  auto tiresias = MakeQueuePolicy("tiresias");
  Scheduler s(*tiresias, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  QueuedJob r = Job(100, 6, 0);
  r.attained_gpu_s = 1e9;
  std::vector<RunningJob> running = {RunningOn(c, r, 0, 6, 0, 0)};
  s.Enqueue(Job(1, 4, 5000, 1));
  s.Enqueue(Job(2, 4, 5001));
  auto d = s.Schedule(c, running, 5000, rng_);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d.back().job, 1);
  EXPECT_EQ(GpusOf(d.back().placement), 4);
  Apply(c, running, d, s);  // each decision fits when carried out in order
  EXPECT_EQ(c.used_gpu_milli(), 8000);
}

TEST_F(ElasticTest, UnderFairShareAnElasticJobRunsAtItsFewest) {
  auto fair = MakeQueuePolicy("fairshare");
  Scheduler s(*fair, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<RunningJob> running = {RunningOn(c, Job(100, 4, 0), 0, 4, 0, 0)};
  s.Enqueue(Job(1, 8, 10, 2));  // 2..8 GPUs; 4 free: not its most, but enough for its fewest
  auto d = s.Schedule(c, running, 20, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(GpusOf(d[0].placement), 2);
}

TEST_F(ElasticTest, AnElasticJobPreemptsOnlyForItsFewestGpus) {
  // Tiresias, 8 GPUs held by two rigid 4-GPU jobs far down the queue. An elastic newcomer
  // (2..8) needs only 2: one victim is enough, not both.
  auto tiresias = MakeQueuePolicy("tiresias");
  Scheduler s(*tiresias, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  QueuedJob a = Job(100, 4, 0), b = Job(101, 4, 0);
  a.attained_gpu_s = b.attained_gpu_s = 1e9;
  std::vector<RunningJob> running = {RunningOn(c, a, 0, 4, 0, 0), RunningOn(c, b, 0, 4, 4, 0)};
  s.Enqueue(Job(1, 8, 5000, 2));
  auto d = s.Schedule(c, running, 5000, rng_);
  int preempted = 0;
  for (const Decision& x : d) preempted += x.kind == Decision::Kind::kPreempt;
  EXPECT_EQ(preempted, 1);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.back().kind, Decision::Kind::kStart);
  EXPECT_EQ(GpusOf(d.back().placement), 4);  // at least its 2, grown into the victim's other 2
  Apply(c, running, d, s);
}

TEST_F(ElasticTest, NoGrowWhileABlockedJobHoldsTheReservation) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8), Node().Gpus(8)});
  std::vector<RunningJob> running = {RunningOn(c, Job(7, 4, 0, 2), 0, 2, 0, 0),
                                     RunningOn(c, Job(100, 8, 0), 1, 8, 0, 0)};
  s.Enqueue(Job(1, 12, 10));  // needs 12: 6 free, 2 more from the elastic job is not enough
  EXPECT_TRUE(s.Schedule(c, running, 1000, rng_).empty());
}

TEST_F(ElasticTest, PlanShrinkTakesFromTheJobWithTheMostSurplusFirst) {
  core::ClusterSnapshot c({Node().Gpus(8), Node().Gpus(8)});
  std::vector<RunningJob> running = {RunningOn(c, Job(1, 8, 0, 6), 0, 8, 0, 0),  // surplus 2
                                     RunningOn(c, Job(2, 8, 0, 2), 1, 8, 0, 0)};  // surplus 6
  std::vector<ElasticView> views(2);
  views[0].placement = running[0].placement;
  views[1].placement = running[1].placement;
  EXPECT_EQ(ShrinkableGpus(running, views), 8);
  auto plan = PlanShrink(c, *placement_, Job(9, 4, 0), running, views, false, rng_);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->resized.size(), 1u);
  EXPECT_EQ(plan->resized[0].first, 1u);
  EXPECT_EQ(GpusOf(plan->resized[0].second), 2);  // all its surplus, at once
  EXPECT_EQ(GpusOf(plan->placement), 4);
  // Touched jobs give nothing.
  views[1].touched = true;
  EXPECT_FALSE(PlanShrink(c, *placement_, Job(9, 4, 0), running, views, false, rng_));
}

}  // namespace
}  // namespace gpufleet::sched
