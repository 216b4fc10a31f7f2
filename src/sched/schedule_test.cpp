#include "sched/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "sched/gang_placement.h"
#include "sched/placer.h"
#include "sched/policy_registry.h"
#include "sched/queued_job.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using test::Node;

QueuedJob Gpus(JobId id, int gpus, int64_t submit, double estimate = std::nan("")) {
  QueuedJob j;
  j.id = id;
  j.total_gpus = gpus;
  j.submit_s = submit;
  j.estimate_s = estimate;
  return j;
}

// A running job taking the lowest `gpus` GPUs of node `node`.
RunningJob Running(core::ClusterSnapshot& c, JobId id, int node, int gpus, int64_t started,
                   double estimate) {
  RunningJob r;
  r.job = Gpus(id, gpus, 0, estimate);
  r.started_s = started;
  const core::GpuMask mask = (1u << gpus) - 1;
  r.placement = {{node, mask}};
  c.Allocate(node, SliceSpec(r.job, gpus), mask);
  return r;
}

class SchedulerTest : public ::testing::Test {
 protected:
  std::unique_ptr<PlacementPolicy> placement_ = MakePlacementPolicy("bestfit");
  core::Rng rng_{1};
};

// Found by a review: a job larger than every node is spread over several, taking on each only the
// GPUs its CPU covers; NeverFits counted GPUs alone, judged this one to fit, and under FIFO it
// held the queue for good though not even an empty cluster could hold it.
TEST_F(SchedulerTest, ASpreadJobShortOfCpuOnEveryNodeNeverFitsAndHoldsNothingBack) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, /*allow_spread=*/false);
  core::ClusterSnapshot c({Node("a").Cpu(16000).Gpus(4), Node("b").Cpu(16000).Gpus(4)});
  QueuedJob big = Gpus(1, 8, 10);
  big.cpu_milli_per_gpu = 5000;  // 3 GPUs a node: 6 in all
  const auto why = NeverFits(big, c, {}, false);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->field, "cpu");
  s.Enqueue(big);
  s.Enqueue(Gpus(2, 1, 20));
  std::vector<RunningJob> none;
  const auto d = s.Schedule(c, none, 30, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 2);
}

TEST_F(SchedulerTest, FifoStopsAtTheFirstJobThatCannotStart) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<RunningJob> running = {Running(c, 100, 0, 6, 0, 100)};
  s.Enqueue(Gpus(1, 4, 10));  // head: needs 4, only 2 free
  s.Enqueue(Gpus(2, 1, 20));  // would fit, but FIFO is strict
  EXPECT_TRUE(s.Schedule(c, running, 30, rng_).empty());
}

// A job accepted before its nodes joined may never fit them (here a gang of 4 nodes on a cluster
// of 2): it must hold neither the strict order nor a reservation, or the cluster idles for good.
TEST_F(SchedulerTest, AJobThatCanNeverFitHoldsNoOrderAndNoReservation) {
  for (const char* name : {"fifo", "backfill"}) {
    auto policy = MakeQueuePolicy(name);
    Scheduler s(*policy, *placement_, /*allow_spread=*/false);
    core::ClusterSnapshot c({Node().Gpus(8), Node().Gpus(8)});
    std::vector<RunningJob> running = {Running(c, 100, 0, 6, 0, 100)};
    QueuedJob never = Gpus(1, 32, 10);
    never.nodes = 4;
    s.Enqueue(never);
    s.Enqueue(Gpus(2, 2, 20));         // fits now, of unknown length
    QueuedJob both = Gpus(3, 16, 30);  // fits once job 100 ends: it holds the order from here
    both.nodes = 2;
    s.Enqueue(both);
    s.Enqueue(Gpus(4, 1, 40));
    auto d = s.Schedule(c, running, 30, rng_);
    ASSERT_EQ(d.size(), 1u) << name;
    EXPECT_EQ(d[0].job, 2) << name;
  }
}

// What can start one day keeps its place: a job larger than every node, which the placer spreads
// over nodes even where spreading is off, and a gang that fits only the nodes the fleet may grow
// by.
TEST_F(SchedulerTest, AJobThatFitsOnlySpreadOrOnlyTheGrowthNodesHoldsTheOrder) {
  auto fifo = MakeQueuePolicy("fifo");
  for (const bool growth : {false, true}) {
    Scheduler s(*fifo, *placement_, /*allow_spread=*/false);
    core::ClusterSnapshot c({Node().Gpus(8), Node().Gpus(8)});
    std::vector<RunningJob> running = {Running(c, 100, 0, 6, 0, 100)};
    QueuedJob head = Gpus(1, 16, 10);  // both nodes, once job 100 ends
    if (growth) {
      s.SetGrowthNodes({Node().Gpus(8), Node().Gpus(8)});
      head = Gpus(1, 32, 10);
      head.nodes = 4;
    }
    s.Enqueue(head);
    s.Enqueue(Gpus(2, 1, 20));
    EXPECT_TRUE(s.Schedule(c, running, 30, rng_).empty()) << (growth ? "growth" : "spread");
  }
}

// Found by a review: a gang that only spot growth nodes could hold held the order even when it
// was not restartable, though an autoscaler never puts such a job on spot: the queue behind it
// waited for good.
TEST_F(SchedulerTest, OnlyARestartableJobCountsOnGrowthNodesBoughtAtTheSpotPrice) {
  auto fifo = MakeQueuePolicy("fifo");
  for (const bool restartable : {true, false}) {
    Scheduler s(*fifo, *placement_, /*allow_spread=*/false);
    // Two nodes' growth at the spot price, none on demand.
    s.SetGrowthNodes({Node().Gpus(8), Node().Gpus(8)}, std::vector<core::NodeSpec>{});
    core::ClusterSnapshot c({Node().Gpus(8), Node().Gpus(8)});
    std::vector<RunningJob> running = {Running(c, 100, 0, 6, 0, 100)};
    QueuedJob head = Gpus(1, 32, 10);  // four nodes: two here, two the fleet may grow by
    head.nodes = 4;
    head.restartable = restartable;
    s.Enqueue(head);
    s.Enqueue(Gpus(2, 1, 20));
    const auto d = s.Schedule(c, running, 30, rng_);
    if (restartable) {
      EXPECT_TRUE(d.empty()) << "it holds the order";
    } else {
      ASSERT_EQ(d.size(), 1u) << "it never fits: the job behind it starts";
      EXPECT_EQ(d[0].job, 2);
    }
  }
}

TEST_F(SchedulerTest, EasyBackfillNeverDelaysTheHeadReservation) {
  auto easy = MakeQueuePolicy("backfill");
  Scheduler s(*easy, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  // 6 GPUs busy until t=100 (by estimate); the head needs all 8, so its reservation is t=100
  // with nothing left over.
  std::vector<RunningJob> running = {Running(c, 100, 0, 6, 0, 100)};
  s.Enqueue(Gpus(1, 8, 0));
  s.Enqueue(Gpus(2, 2, 1, 150));  // would end at 160 > 100: would delay the head
  s.Enqueue(Gpus(3, 2, 2, 50));   // ends at 60 <= 100: may start
  s.Enqueue(Gpus(4, 1, 3));       // no estimate: may not start
  auto d = s.Schedule(c, running, 10, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 3);
}

TEST_F(SchedulerTest, EasyBackfillUsesTheGpusTheReservationLeavesOver) {
  auto easy = MakeQueuePolicy("backfill");
  Scheduler s(*easy, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  // 4 busy until t=100; the head needs 6: at t=100, 8 free, 2 left over for long jobs.
  std::vector<RunningJob> running = {Running(c, 100, 0, 4, 0, 100)};
  s.Enqueue(Gpus(1, 6, 0));
  s.Enqueue(Gpus(2, 2, 1, 1000));  // long, but fits the 2 spare GPUs
  s.Enqueue(Gpus(3, 1, 2, 1000));  // long, and nothing spare is left
  auto d = s.Schedule(c, running, 10, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 2);
}

TEST_F(SchedulerTest, GangJobsStartWholeOrNotAtAll) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, true);
  core::ClusterSnapshot c({Node("a").Gpus(8), Node("b").Gpus(8)});
  std::vector<RunningJob> running = {Running(c, 100, 1, 1, 0, 100)};
  s.Enqueue(Gpus(1, 16, 0));  // 15 free: must not start on part of them
  EXPECT_TRUE(s.Schedule(c, running, 1, rng_).empty());
  s.Remove(1);
  s.Enqueue(Gpus(2, 15, 0));  // exactly what is free: starts across both nodes
  auto d = s.Schedule(c, running, 1, rng_);
  ASSERT_EQ(d.size(), 1u);
  int gpus = 0;
  for (const auto& a : d[0].placement) gpus += std::popcount(a.gpus);
  EXPECT_EQ(gpus, 15);
  EXPECT_EQ(d[0].placement.size(), 2u);
}

TEST_F(SchedulerTest, EasyBackfillWithUnknownRunTimesNeverStarvesTheHead) {
  auto policy = MakeQueuePolicy("priority-backfill");
  Scheduler s(*policy, *placement_, false);
  core::ClusterSnapshot c({Node("a").Gpus(8)});
  // A running job of unknown length: when the head can start is unknown.
  std::vector<RunningJob> running = {Running(c, 100, 0, 4, 0, std::nan(""))};
  s.Enqueue(Gpus(1, 8, 0));      // the head: needs the whole node
  s.Enqueue(Gpus(2, 1, 1, 10));  // short, with a time limit
  s.Enqueue(Gpus(3, 1, 2));      // unknown length
  EXPECT_TRUE(s.Schedule(c, running, 5, rng_).empty())
      << "a job backfilled past a head whose reservation time is unknown";
  // Once the running job has a known end, a job that ends before it may start.
  running[0].job.estimate_s = 100;
  auto d = s.Schedule(c, running, 5, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, 2);
}

TEST_F(SchedulerTest, MultiNodeJobsTakeExactlyTheirNodesWithAnEqualShareEach) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, /*allow_spread=*/false);
  core::ClusterSnapshot c({Node("a").Gpus(8), Node("b").Gpus(8), Node("c").Gpus(8)});
  std::vector<RunningJob> running = {Running(c, 100, 0, 6, 0, 100), Running(c, 101, 2, 3, 0, 100)};
  QueuedJob gang = Gpus(1, 8, 0);
  gang.nodes = 2;  // 4 per node: fits b (8 free) and c (5 free), not a (2 free)
  s.Enqueue(gang);
  auto d = s.Schedule(c, running, 1, rng_);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].placement.size(), 2u);  // although one node could hold all 8
  EXPECT_EQ(d[0].placement[0].node, 1);
  EXPECT_EQ(d[0].placement[1].node, 2);
  for (const auto& a : d[0].placement) EXPECT_EQ(std::popcount(a.gpus), 4);
  s.Remove(1);
  QueuedJob three = Gpus(2, 6, 0);
  three.nodes = 3;  // 2 per node on each of a, b, c: a has exactly 2
  s.Enqueue(three);
  d = s.Schedule(c, running, 1, rng_);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].placement.size(), 3u);
  s.Remove(2);
  QueuedJob too_wide = Gpus(3, 9, 0);
  too_wide.nodes = 3;  // 3 per node: a has 2
  s.Enqueue(too_wide);
  EXPECT_TRUE(s.Schedule(c, running, 1, rng_).empty());
}

TEST_F(SchedulerTest, SpreadingCanBeForbidden) {
  auto fifo = MakeQueuePolicy("fifo");
  Scheduler s(*fifo, *placement_, /*allow_spread=*/false);
  core::ClusterSnapshot c({Node("a").Gpus(4), Node("b").Gpus(4)});
  std::vector<RunningJob> running = {Running(c, 100, 0, 2, 0, 100), Running(c, 101, 1, 2, 0, 100)};
  s.Enqueue(Gpus(1, 4, 0));  // 2 + 2 free, but no node holds 4
  EXPECT_TRUE(s.Schedule(c, running, 1, rng_).empty());
}

TEST_F(SchedulerTest, DecisionsFitTogether) {
  auto sjf = MakeQueuePolicy("sjf-oracle");
  Scheduler s(*sjf, *placement_, true);
  core::ClusterSnapshot c({Node().Gpus(8)});
  for (int i = 0; i < 20; ++i) s.Enqueue(Gpus(i, 1 + i % 3, i, 100.0 - i));
  auto d = s.Schedule(c, {}, 0, rng_);
  // Shortest first: ids 19, 18, ... as long as GPUs remain; all decisions fit at once.
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].job, 19);
  core::ClusterSnapshot check = c;
  for (const auto& decision : d) {
    for (const auto& a : decision.placement) {
      check.Allocate(a.node, SliceSpec(Gpus(0, std::popcount(a.gpus), 0), std::popcount(a.gpus)),
                     a.gpus);
    }
  }
  EXPECT_LE(check.used_gpu_milli(), check.total_gpu_milli());
}

}  // namespace
}  // namespace gpufleet::sched

namespace gpufleet::sched {
namespace {

// Fills the 8-GPU nodes of `cluster` with running jobs of 1, 2 and 4 GPUs: random estimates
// (some unknown), attained service and starts before `now`. `leave_free`: each node keeps 0 to 2
// GPUs free. `elastic`: now and then a job of 2 or more GPUs is elastic (1..8 GPUs).
std::vector<RunningJob> FillRandomly(core::ClusterSnapshot& cluster, core::Rng& rng, int64_t now,
                                     bool leave_free, bool elastic) {
  std::vector<RunningJob> running;
  JobId id = 1000;
  for (int node = 0; node < cluster.size(); ++node) {
    int used = leave_free ? static_cast<int>(rng.Below(3)) : 0;
    while (used < 8) {
      const int gpus = std::min(8 - used, 1 << rng.Below(3));
      RunningJob r;
      r.job = Gpus(id++, gpus, 0, rng.Below(3) == 0 ? std::nan("") : 100.0 * rng.Below(5000));
      r.job.attained_gpu_s = static_cast<double>(rng.Below(4)) * 3e5 * rng.Below(10);
      r.started_s = now - static_cast<int64_t>(rng.Below(4000));
      if (elastic && gpus > 1 && rng.Below(8) == 0) {
        r.job.min_gpus = 1;
        r.job.total_gpus = 8;
      }
      const core::GpuMask mask = ((1u << gpus) - 1) << used;
      r.placement = {{node, mask}};
      cluster.Allocate(node, SliceSpec(r.job, gpus), mask);
      running.push_back(r);
      used += gpus;
    }
  }
  return running;
}

// A plan works on the pass's own cluster: with a plan, the victims are off it; without one
// (even every candidate is not enough), every candidate taken is back, so what is free is what
// was free, and the placer bound to it still places as a new one would.
TEST(PreemptionPlanTest, LeavesTheClusterWithoutTheVictimsOrAsItWas) {
  const int64_t now = 2000000;
  auto placement = MakePlacementPolicy("bestfit");
  int planned = 0, refused = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    core::Rng gen(seed);
    core::ClusterSnapshot cluster(test::Replicate(Node().Gpus(8), 4));
    const std::vector<RunningJob> running =
        FillRandomly(cluster, gen, now, /*leave_free=*/false, /*elastic=*/false);
    const core::ClusterSnapshot before = cluster;
    Placer placer(cluster, *placement, std::span<const uint32_t>());
    std::vector<size_t> candidates;
    for (size_t i = 0; i < running.size(); ++i) candidates.push_back(i);
    // Even seeds: every job off nodes 1..3 may be taken, so a whole node can be freed. Odd seeds:
    // the first job of every node stays, so none can.
    std::vector<char> refused_job(running.size(), 0);
    for (size_t i = 0; i < running.size(); ++i) {
      const int node = running[i].placement[0].node;
      refused_job[i] =
          seed % 2 == 0 ? node == 0 : i == 0 || running[i - 1].placement[0].node != node;
    }
    auto may_take = [&](size_t i) { return refused_job[i] == 0; };
    const QueuedJob big = Gpus(1, 8, 0);
    core::Rng rng(seed);
    const auto none =
        PlanPreemption(cluster, placer, big, running, candidates, may_take, false, rng);
    int64_t whole_free_without_all = 0;
    {
      core::ClusterSnapshot all = before;
      for (size_t i : candidates) {
        if (!may_take(i)) continue;
        for (const Allocation& a : running[i].placement) {
          all.Release(a.node, SliceSpec(running[i].job, core::GpuCount(a.gpus)), a.gpus);
        }
      }
      whole_free_without_all = all.free_whole_gpus();
      Placer fresh(all, *placement, std::span<const uint32_t>());
      core::Rng r(seed);
      // Whether a plan was possible, computed independently.
      EXPECT_EQ(none.has_value(), PlaceGang(all, fresh, big, false, r).has_value());
    }
    ++(none ? planned : refused);
    if (!none) {
      for (int n = 0; n < cluster.size(); ++n) {
        EXPECT_EQ(cluster.state(n).gpu_free, before.state(n).gpu_free) << "seed " << seed;
        EXPECT_EQ(cluster.state(n).cpu_free, before.state(n).cpu_free);
      }
      EXPECT_EQ(cluster.used_gpu_milli(), before.used_gpu_milli());
      EXPECT_EQ(cluster.free_whole_gpus(), before.free_whole_gpus());
    } else {
      int64_t victim_gpus = 0;
      for (size_t i : none->victims) victim_gpus += GpusOf(running[i].placement);
      EXPECT_EQ(cluster.free_whole_gpus(), before.free_whole_gpus() + victim_gpus);
      EXPECT_LE(cluster.free_whole_gpus(), whole_free_without_all);
    }
    // A share of one GPU always finds room once one job is off: the same placer, after the
    // put-back, places as a new placer on the same state does.
    QueuedJob share = Gpus(2, 1, 0);
    share.gpu_milli = 500;
    core::Rng r1(seed), r2(seed);
    const auto plan = PlanPreemption(
        cluster, placer, share, running, candidates, [](size_t) { return true; }, false, r1);
    ASSERT_TRUE(plan.has_value());
    Placer fresh(cluster, *placement, std::span<const uint32_t>());
    const auto again = PlaceGang(cluster, fresh, share, false, r2);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(plan->placement[0].node, (*again)[0].node);
    EXPECT_EQ(plan->placement[0].gpus, (*again)[0].gpus);
  }
  EXPECT_GT(planned, 0) << "some seeds should make a plan";
  EXPECT_GT(refused, 0) << "some seeds should find none";
}

// The preemption index must take victims as the per-job scan it replaced did: only jobs of a
// class strictly below the waiting job's priority (a higher class number), only jobs that ran
// long enough, and across the whole pass in one order: the highest class number first, then the
// longest expected remaining run, the most recently started, the largest id. Random busy
// clusters, several waiting jobs of different classes, every preemptive policy.
TEST(PreemptionIndexTest, VictimsFollowOneOrderAndComeOnlyFromLowerClasses) {
  const int64_t now = 2000000;
  for (const char* name : {"tiresias", "las-qssf", "gittins"}) {
    SCOPED_TRACE(name);
    int preemptions = 0;
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      auto policy = MakeQueuePolicy(name);
      auto placement = MakePlacementPolicy("bestfit");
      Scheduler scheduler(*policy, *placement, /*allow_spread=*/true);
      core::Rng rng(seed);
      core::ClusterSnapshot cluster(test::Replicate(Node().Gpus(8), 6));
      const std::vector<RunningJob> running =
          FillRandomly(cluster, rng, now, /*leave_free=*/false, /*elastic=*/false);
      for (JobId w = 1; w <= 12; ++w) {
        QueuedJob j = Gpus(w, 1 << rng.Below(4), static_cast<int64_t>(w));
        j.attained_gpu_s = rng.Below(3) == 0 ? 5e4 * rng.Below(20) : 0;
        scheduler.Enqueue(j);
      }
      const std::vector<QueuedJob> waiting = scheduler.Waiting();
      const auto decisions = scheduler.Schedule(cluster, running, now, rng);

      auto class_now = [&](const RunningJob& r) {
        QueuedJob j = r.job;
        for (const Allocation& a : r.placement) {
          j.attained_gpu_s += std::popcount(a.gpus) * static_cast<double>(now - r.started_s);
        }
        return policy->PriorityClass(j);
      };
      auto remaining = [&](const RunningJob& r) {
        return std::isnan(r.job.estimate_s)
                   ? HUGE_VAL
                   : r.job.estimate_s - static_cast<double>(now - r.started_s);
      };
      // True when `a` must be taken before `b`.
      auto before = [&](const RunningJob& a, const RunningJob& b) {
        if (class_now(a) != class_now(b)) return class_now(a) > class_now(b);
        if (remaining(a) != remaining(b)) return remaining(a) > remaining(b);
        if (a.started_s != b.started_s) return a.started_s > b.started_s;
        return a.job.id > b.job.id;
      };
      auto find_running = [&](JobId job) -> const RunningJob& {
        for (const RunningJob& r : running) {
          if (r.job.id == job) return r;
        }
        ADD_FAILURE() << "preempted job " << job << " was not running";
        return running.front();
      };
      const RunningJob* last_victim = nullptr;
      std::vector<const RunningJob*> group;
      for (const Decision& d : decisions) {
        if (d.kind == Decision::Kind::kPreempt) {
          const RunningJob& v = find_running(d.job);
          EXPECT_GE(static_cast<double>(now - v.started_s), policy->MinRunBeforePreemptionS());
          if (last_victim != nullptr) {
            EXPECT_TRUE(before(*last_victim, v))
                << "victim " << v.job.id << " after " << last_victim->job.id << ", seed " << seed;
          }
          last_victim = &v;
          group.push_back(&v);
          ++preemptions;
          continue;
        }
        if (group.empty()) continue;
        // The start the victims made room for: every victim is of a lower priority.
        QueuedJob started;
        for (const QueuedJob& w : waiting) {
          if (w.id == d.job) started = w;
        }
        for (const RunningJob* v : group) {
          EXPECT_GT(class_now(*v), policy->PriorityClass(started)) << "seed " << seed;
        }
        group.clear();
      }
      EXPECT_TRUE(group.empty()) << "preemptions without the start they were for";
    }
    EXPECT_GT(preemptions, 20) << "the scenarios should preempt";
  }
}

// The pass leaves out waiting jobs too large for what they could reach (free GPUs, and the GPUs
// of the running jobs they may preempt) without looking at them: it must decide exactly what the
// reference pass, which walks the whole queue, decides. Random busy clusters with some room,
// waiting jobs of every kind (whole, shares, multi-node gangs, elastic, demoted), every greedy
// policy, two placement policies (one of them random, so the draws must match too).
TEST(SchedulerPassTest, SkippingJobsOutOfReachDecidesWhatTheWholeQueueWalkDecides) {
  const int64_t now = 2000000;
  int starts = 0, preemptions = 0, compared = 0;
  for (const char* name : {"tiresias", "las-qssf", "gittins", "qssf", "sjf-oracle", "priority"}) {
    for (const char* placing : {"bestfit", "random"}) {
      SCOPED_TRACE(std::string(name) + " " + placing);
      for (uint64_t seed = 1; seed <= 40; ++seed) {
        auto policy = MakeQueuePolicy(name);
        auto placement = MakePlacementPolicy(placing);
        // 50 jobs of each of 4 sizes: gittins reads each size by its own table.
        for (int i = 0; i < 200; ++i) policy->Learn(1 << (i % 4), 3600.0 * (1 + i % 7));
        Scheduler fast(*policy, *placement, /*allow_spread=*/seed % 2 == 0);
        Scheduler reference(*policy, *placement, /*allow_spread=*/seed % 2 == 0);
        reference.SetReferencePass(true);
        core::Rng gen(seed);
        core::ClusterSnapshot cluster(test::Replicate(Node().Gpus(8), 6));
        const std::vector<RunningJob> running =
            FillRandomly(cluster, gen, now, /*leave_free=*/true, /*elastic=*/true);
        for (JobId w = 1; w <= 40; ++w) {
          QueuedJob j = Gpus(w, 1 << gen.Below(5), static_cast<int64_t>(w), 100.0 * gen.Below(90));
          j.attained_gpu_s = gen.Below(3) == 0 ? 5e4 * gen.Below(20) : 0;
          j.priority = static_cast<int>(gen.Below(3));
          switch (gen.Below(6)) {
            case 0:  // a share of one GPU
              j.total_gpus = 1;
              j.gpu_milli = 250;
              break;
            case 1:  // a gang of whole nodes
              j.total_gpus = 16;
              j.nodes = 2;
              break;
            case 2:  // elastic
              j.total_gpus = 8;
              j.min_gpus = 2;
              break;
            default:
              break;
          }
          fast.Enqueue(j);
          reference.Enqueue(j);
        }
        // The buckets follow removals and promotions (a job waiting since 0 with service is
        // promoted under the starvation guards).
        for (JobId w = 1; w <= 40; w += 7) {
          EXPECT_EQ(fast.Remove(w), reference.Remove(w));
        }
        fast.PromoteStarved(now);
        reference.PromoteStarved(now);
        core::Rng rng_fast(seed), rng_reference(seed);
        // The fast pass reads the running jobs from an index kept since each started (odd seeds)
        // or computes them itself (even seeds).
        RunningIndex index(*policy);
        for (size_t i = 0; i < running.size(); ++i) {
          index.Append(std::span(running).first(i + 1), running[i].started_s);
        }
        index.AdvanceTo(running, now);
        const auto got =
            fast.Schedule(cluster, running, now, rng_fast, seed % 2 == 1 ? &index : nullptr);
        const auto want = reference.Schedule(cluster, running, now, rng_reference);
        ASSERT_EQ(got.size(), want.size()) << "seed " << seed;
        for (size_t k = 0; k < got.size(); ++k) {
          EXPECT_EQ(got[k].kind, want[k].kind) << "seed " << seed << " decision " << k;
          EXPECT_EQ(got[k].job, want[k].job) << "seed " << seed << " decision " << k;
          ASSERT_EQ(got[k].placement.size(), want[k].placement.size()) << "seed " << seed;
          for (size_t a = 0; a < got[k].placement.size(); ++a) {
            EXPECT_EQ(got[k].placement[a].node, want[k].placement[a].node) << "seed " << seed;
            EXPECT_EQ(got[k].placement[a].gpus, want[k].placement[a].gpus) << "seed " << seed;
          }
          starts += got[k].kind == Decision::Kind::kStart;
          preemptions += got[k].kind == Decision::Kind::kPreempt;
        }
        EXPECT_EQ(rng_fast.Below(1000000), rng_reference.Below(1000000)) << "seed " << seed;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 6 * 2 * 40);
  EXPECT_GT(starts, 500) << "the scenarios should start jobs";
  EXPECT_GT(preemptions, 100) << "the scenarios should preempt";
}

}  // namespace
}  // namespace gpufleet::sched
