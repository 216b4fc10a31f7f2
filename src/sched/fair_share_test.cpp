// Fair share across queues: weights, borrowing, and reclaim by preemption, on hand-made
// scenarios whose right answer is known.
#include <gtest/gtest.h>

#include <bit>
#include <map>

#include "sched/policy_registry.h"
#include "sched/schedule.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using test::Node;

QueuedJob Job(JobId id, const std::string& queue, int gpus, int64_t submit) {
  QueuedJob j;
  j.id = id;
  j.queue = queue;
  j.total_gpus = gpus;
  j.submit_s = submit;
  return j;
}

class FairShareTest : public ::testing::Test {
 protected:
  // Applies `decisions` to `cluster` and `running` as the simulator would.
  void Apply(const std::vector<Decision>& decisions, core::ClusterSnapshot& cluster,
             std::vector<RunningJob>& running, const std::map<JobId, QueuedJob>& jobs,
             int64_t now) {
    for (const Decision& d : decisions) {
      if (d.kind == Decision::Kind::kPreempt) {
        auto it = std::find_if(running.begin(), running.end(),
                               [&](const RunningJob& r) { return r.job.id == d.job; });
        ASSERT_NE(it, running.end());
        for (const Allocation& a : it->placement) {
          cluster.Release(a.node, SliceSpec(it->job, std::popcount(a.gpus)), a.gpus);
        }
        running.erase(it);
        continue;
      }
      RunningJob r;
      r.job = jobs.at(d.job);
      r.placement = d.placement;
      r.started_s = now;
      for (const Allocation& a : d.placement) {
        cluster.Allocate(a.node, SliceSpec(r.job, std::popcount(a.gpus)), a.gpus);
      }
      running.push_back(r);
      scheduler_.Remove(d.job);
    }
  }
  std::map<std::string, int> GpusByQueue(const std::vector<RunningJob>& running) {
    std::map<std::string, int> out;
    for (const RunningJob& r : running) out[r.job.queue] += r.job.total_gpus;
    return out;
  }
  void Submit(const QueuedJob& job) {
    jobs_[job.id] = job;
    scheduler_.Enqueue(job);
  }

  std::unique_ptr<QueuePolicy> policy_ = MakeQueuePolicy("fairshare");
  std::unique_ptr<PlacementPolicy> placement_ = MakePlacementPolicy("bestfit");
  Scheduler scheduler_{*policy_, *placement_, true};
  core::Rng rng_{1};
  std::map<JobId, QueuedJob> jobs_;
};

TEST_F(FairShareTest, SharesFollowTheWeights) {
  scheduler_.SetQueueWeights({{"a", 3}, {"b", 1}});
  core::ClusterSnapshot cluster({Node().Gpus(8)});
  std::vector<RunningJob> running;
  for (int i = 0; i < 20; ++i) {
    Submit(Job(i, "a", 1, i));
    Submit(Job(100 + i, "b", 1, i));
  }
  Apply(scheduler_.Schedule(cluster, running, 0, rng_), cluster, running, jobs_, 0);
  EXPECT_EQ(GpusByQueue(running), (std::map<std::string, int>{{"a", 6}, {"b", 2}}));
}

// Within a queue jobs start in order, but one that no nodes of the cluster could ever hold (more
// GPUs than the cluster has) is passed over rather than stopping its queue for good.
TEST_F(FairShareTest, AJobThatCanNeverFitDoesNotStopItsQueue) {
  core::ClusterSnapshot cluster({Node().Gpus(8)});
  std::vector<RunningJob> running;
  Submit(Job(1, "a", 16, 0));
  Submit(Job(2, "a", 2, 1));
  Submit(Job(3, "a", 8, 2));  // fits the empty node only: its queue waits behind it
  Submit(Job(4, "a", 1, 3));
  Apply(scheduler_.Schedule(cluster, running, 0, rng_), cluster, running, jobs_, 0);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].job.id, 2);
}

TEST_F(FairShareTest, SharesConvergeAsJobsFinish) {
  // Queue a starts alone and takes everything; b arrives with jobs larger than its quota can
  // reclaim at once. As a's jobs finish one by one, the freed GPUs go to whoever is furthest
  // below its share, until the split is 1:1.
  scheduler_.SetQueueWeights({{"a", 1}, {"b", 1}});
  core::ClusterSnapshot cluster({Node().Gpus(8)});
  std::vector<RunningJob> running;
  for (int i = 0; i < 8; ++i) Submit(Job(i, "a", 1, 0));
  Apply(scheduler_.Schedule(cluster, running, 0, rng_), cluster, running, jobs_, 0);
  ASSERT_EQ(GpusByQueue(running)["a"], 8);
  for (int i = 0; i < 20; ++i) Submit(Job(100 + i, "a", 1, 1));
  for (int i = 0; i < 20; ++i) Submit(Job(200 + i, "b", 1, 1));
  for (int64_t t = 2; t < 12; ++t) {
    // The oldest running job of queue a finishes.
    auto oldest = std::find_if(running.begin(), running.end(),
                               [](const RunningJob& r) { return r.job.queue == "a"; });
    for (const Allocation& a : oldest->placement) {
      cluster.Release(a.node, SliceSpec(oldest->job, std::popcount(a.gpus)), a.gpus);
    }
    running.erase(oldest);
    Apply(scheduler_.Schedule(cluster, running, t, rng_), cluster, running, jobs_, t);
  }
  EXPECT_EQ(GpusByQueue(running), (std::map<std::string, int>{{"a", 4}, {"b", 4}}));
}

TEST_F(FairShareTest, IdleQuotaIsBorrowed) {
  scheduler_.SetQueueWeights({{"a", 1}, {"b", 1}});
  core::ClusterSnapshot cluster({Node().Gpus(8)});
  std::vector<RunningJob> running;
  for (int i = 0; i < 10; ++i) Submit(Job(i, "a", 1, i));
  Apply(scheduler_.Schedule(cluster, running, 0, rng_), cluster, running, jobs_, 0);
  EXPECT_EQ(GpusByQueue(running)["a"], 8) << "b is idle, so a borrows its half";
}

TEST_F(FairShareTest, ReclaimReturnsQuotaWithinOneRound) {
  scheduler_.SetQueueWeights({{"a", 3}, {"b", 1}});  // quotas: a 6, b 2
  core::ClusterSnapshot cluster({Node().Gpus(8)});
  std::vector<RunningJob> running;
  for (int i = 0; i < 8; ++i) Submit(Job(i, "a", 1, i));
  for (int64_t t = 0; t < 8; ++t) {  // one start per second: a's jobs have distinct start times
    Apply(scheduler_.Schedule(cluster, running, t, rng_), cluster, running, jobs_, t);
    if (GpusByQueue(running)["a"] == 8) break;
  }
  ASSERT_EQ(GpusByQueue(running)["a"], 8);
  Submit(Job(100, "b", 1, 50));
  Submit(Job(101, "b", 1, 50));
  Submit(Job(102, "b", 1, 50));  // beyond b's quota: waits, reclaims nothing
  const std::vector<Decision> round = scheduler_.Schedule(cluster, running, 60, rng_);
  int preempts = 0, starts = 0;
  for (const Decision& d : round) {
    if (d.kind == Decision::Kind::kPreempt) {
      ++preempts;
      EXPECT_EQ(jobs_.at(d.job).queue, "a");
    } else {
      ++starts;
      EXPECT_EQ(jobs_.at(d.job).queue, "b");
    }
  }
  EXPECT_EQ(preempts, 2);
  EXPECT_EQ(starts, 2);
  Apply(round, cluster, running, jobs_, 60);
  EXPECT_EQ(GpusByQueue(running), (std::map<std::string, int>{{"a", 6}, {"b", 2}}));
  // The most recently started of a's jobs were the ones preempted.
  for (const RunningJob& r : running) {
    if (r.job.queue == "a") {
      EXPECT_LT(r.job.id, 6);
    }
  }
  // Stable: a second round changes nothing.
  EXPECT_TRUE(scheduler_.Schedule(cluster, running, 61, rng_).empty());
}

TEST_F(FairShareTest, NoReclaimFromAQueueWithinItsQuota) {
  scheduler_.SetQueueWeights({{"a", 1}, {"b", 1}});  // quotas 4 and 4
  core::ClusterSnapshot cluster({Node().Gpus(8)});
  std::vector<RunningJob> running;
  for (int i = 0; i < 4; ++i) Submit(Job(i, "a", 1, 0));
  for (int i = 0; i < 4; ++i) Submit(Job(10 + i, "b", 1, 0));
  Apply(scheduler_.Schedule(cluster, running, 0, rng_), cluster, running, jobs_, 0);
  Submit(Job(20, "b", 2, 5));  // b is at its quota: must wait for its own GPUs
  EXPECT_TRUE(scheduler_.Schedule(cluster, running, 6, rng_).empty());
}

}  // namespace
}  // namespace gpufleet::sched
