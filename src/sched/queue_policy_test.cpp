// The shared suite every registered queue policy runs through: whatever the policy, decisions
// start only waiting jobs, whole gangs, once each; preempt only running jobs; fit the cluster
// together; and are the same for the same inputs.
#include "sched/queue_policy.h"

#include <gtest/gtest.h>

#include <bit>
#include <set>

#include "sched/policy_registry.h"
#include "sched/schedule.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using test::Node;

class QueuePolicyTest : public ::testing::TestWithParam<std::string> {
 protected:
  QueuePolicyTest()
      : policy_(MakeQueuePolicy(GetParam())),
        placement_(MakePlacementPolicy("bestfit")),
        cluster_({Node("a").Gpus(8), Node("b").Gpus(8), Node("c").Gpus(4)}) {}

  // A busy cluster: running jobs of two queues, and a queue of mixed waiting jobs.
  void Fill(Scheduler& s) {
    core::Rng rng(7);
    for (JobId id = 1; id <= 40; ++id) {
      QueuedJob j;
      j.id = id;
      j.queue.assign(id % 3 == 0 ? "x" : "y");
      j.total_gpus = 1 << rng.Below(5);  // 1..16
      j.submit_s = id;
      j.estimate_s = 100.0 * static_cast<double>(1 + rng.Below(50));
      j.attained_gpu_s = id % 4 == 0 ? 50000 : 0;
      s.Enqueue(j);
    }
  }
  std::vector<RunningJob> Running(core::ClusterSnapshot& c) {
    std::vector<RunningJob> running;
    for (JobId id = 100; id < 104; ++id) {
      RunningJob r;
      r.job.id = id;
      r.job.queue = "x";
      r.job.total_gpus = 2;
      r.job.attained_gpu_s = 1e6;  // lots of service: preemptable under LAS
      r.started_s = 0;
      const int node = static_cast<int>(id - 100) / 2;
      const core::GpuMask mask = id % 2 == 0 ? 0b11 : 0b1100;
      r.placement = {{node, mask}};
      c.Allocate(node, SliceSpec(r.job, 2), mask);
      running.push_back(r);
    }
    return running;
  }

  std::unique_ptr<QueuePolicy> policy_;
  std::unique_ptr<PlacementPolicy> placement_;
  core::ClusterSnapshot cluster_;
};

TEST_P(QueuePolicyTest, DecisionsAreValidAndFitTogether) {
  ASSERT_NE(policy_, nullptr);
  Scheduler s(*policy_, *placement_, true);
  Fill(s);
  std::vector<RunningJob> running = Running(cluster_);
  core::Rng rng(1);
  const std::vector<Decision> decisions = s.Schedule(cluster_, running, 1000, rng);
  EXPECT_FALSE(decisions.empty()) << "free GPUs and waiting jobs, yet nothing started";
  std::set<JobId> started, preempted;
  core::ClusterSnapshot after = cluster_;
  for (const Decision& d : decisions) {
    if (d.kind == Decision::Kind::kPreempt) {
      auto it = std::find_if(running.begin(), running.end(),
                             [&](const RunningJob& r) { return r.job.id == d.job; });
      ASSERT_NE(it, running.end()) << "preempted a job that is not running";
      EXPECT_TRUE(preempted.insert(d.job).second);
      for (const Allocation& a : it->placement) {
        after.Release(a.node, SliceSpec(it->job, std::popcount(a.gpus)), a.gpus);
      }
      continue;
    }
    EXPECT_TRUE(d.job >= 1 && d.job <= 40) << "started a job that was not waiting";
    EXPECT_TRUE(started.insert(d.job).second) << "started twice";
    int gpus = 0;
    for (const Allocation& a : d.placement) gpus += std::popcount(a.gpus);
    QueuedJob job;
    job.total_gpus = gpus;
    // The gang is whole: as many GPUs as the job asked (a power of two here).
    EXPECT_EQ(std::popcount(static_cast<unsigned>(gpus)), 1);
    for (const Allocation& a : d.placement) {
      // Allocate aborts on any overlap, so this checks the decisions fit together.
      after.Allocate(a.node, SliceSpec(job, std::popcount(a.gpus)), a.gpus);
    }
  }
}

TEST_P(QueuePolicyTest, SameInputsSameDecisions) {
  auto run = [&] {
    Scheduler s(*policy_, *placement_, true);
    Fill(s);
    core::ClusterSnapshot c = cluster_;
    std::vector<RunningJob> running = Running(c);
    core::Rng rng(1);
    std::string log;
    for (const Decision& d : s.Schedule(c, running, 1000, rng)) {
      log += std::to_string(static_cast<int>(d.kind));
      log += ':';
      log += std::to_string(d.job);
      log += ';';
    }
    return log;
  };
  EXPECT_EQ(run(), run());
}

TEST_P(QueuePolicyTest, LoneJobOnAnEmptyClusterStarts) {
  Scheduler s(*policy_, *placement_, true);
  QueuedJob j;
  j.id = 1;
  j.total_gpus = 4;
  j.estimate_s = 10;
  s.Enqueue(j);
  core::Rng rng(1);
  const auto decisions = s.Schedule(cluster_, {}, 0, rng);
  ASSERT_EQ(decisions.size(), 1U);
  EXPECT_EQ(decisions[0].kind, Decision::Kind::kStart);
}

std::vector<std::string> AllQueuePolicies() {
  std::vector<std::string> names;
  for (const auto& info : QueuePolicies()) names.emplace_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllQueuePolicies, QueuePolicyTest, ::testing::ValuesIn(AllQueuePolicies()),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace gpufleet::sched
