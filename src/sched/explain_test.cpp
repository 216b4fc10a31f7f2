#include "sched/explain.h"

#include <gtest/gtest.h>


#include "sched/policy_registry.h"
#include "sched/schedule.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using test::Node;

// Whether `text` holds `part`, saying both when not.
::testing::AssertionResult Holds(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' lacks '" << part << "'";
}

QueuedJob Job(JobId id, int gpus, int priority = 0, std::string queue = "") {
  QueuedJob j;
  j.id = id;
  j.total_gpus = gpus;
  j.submit_s = id;
  j.priority = priority;
  j.queue = std::move(queue);
  return j;
}

// A running job on the lowest free GPUs of each node in `nodes`, `per_node` GPUs on each.
ExplainRunning Running(core::ClusterSnapshot& c, JobId id, std::vector<int> nodes, int per_node,
                       double limit_s, double estimate_s = std::nan(""), std::string queue = "") {
  ExplainRunning r;
  r.run.job = Job(id, per_node * static_cast<int>(nodes.size()), 0, std::move(queue));
  if (nodes.size() > 1) r.run.job.nodes = static_cast<int>(nodes.size());
  r.run.started_s = 0;
  r.time_limit_s = limit_s;
  r.estimate_s = estimate_s;
  for (int n : nodes) {
    const core::GpuMask all = ~core::GpuMask{0} >> (32 - c.state(n).num_gpus);
    core::GpuMask used = 0;
    for (int g = 0; g < c.state(n).num_gpus; ++g) {
      if (c.state(n).gpu_free[g] < core::kGpuMilli) used |= 1u << g;
    }
    core::GpuMask mask = 0;
    for (int g = 0, taken = 0; g < c.state(n).num_gpus && taken < per_node; ++g) {
      if (((all & ~used) >> g) & 1u) {
        mask |= 1u << g;
        ++taken;
      }
    }
    r.run.placement.push_back({n, mask});
    c.Allocate(n, SliceSpec(r.run.job, per_node), mask);
  }
  return r;
}

// Runs the real Scheduler over the same inputs, then explains: as the controller does.
class ExplainTest : public ::testing::Test {
 protected:
  std::vector<Explanation> Explain(std::string_view policy_name, const core::ClusterSnapshot& c,
                                   const std::vector<QueuedJob>& jobs,
                                   const std::vector<ExplainRunning>& running, int64_t now = 0,
                                   std::map<std::string, double> weights = {}) {
    policy_ = MakeQueuePolicy(policy_name);
    Scheduler s(*policy_, *placement_, false);
    if (!weights.empty()) s.SetQueueWeights(weights);
    for (const QueuedJob& j : jobs) s.Enqueue(j);
    std::vector<RunningJob> runs;
    for (const ExplainRunning& r : running) runs.push_back(r.run);
    core::Rng rng(1);
    const std::vector<Decision> decisions = s.Schedule(c, runs, now, rng);
    waiting_ = s.Waiting();
    ExplainInput in;
    in.waiting = waiting_;
    in.cluster = &c;
    in.running = running;
    in.decisions = decisions;
    in.queue_policy = policy_.get();
    in.placement_policy = placement_.get();
    in.queue_weights = &s.queue_weights();
    in.now_s = now;
    return ExplainQueue(in, rng);
  }
  std::unique_ptr<PlacementPolicy> placement_ = MakePlacementPolicy("bestfit");
  std::unique_ptr<QueuePolicy> policy_;
  std::vector<QueuedJob> waiting_;
};

TEST_F(ExplainTest, AJobThatDoesNotFitNamesTheRunningJobWhoseTimeLimitFreesIt) {
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<ExplainRunning> running = {Running(c, 812, {0}, 6, /*limit_s=*/2400)};
  auto e = Explain("priority", c, {Job(1, 4)}, running);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, WaitKind::kNoFitNow);
  EXPECT_EQ(e[0].reason,
            "needs 4 GPUs on one node: no node has 4 free now (at most 2); would fit after job "
            "812 ends (time limit in 40 min)");
  EXPECT_EQ(e[0].fits_after_job, 812);
  EXPECT_EQ(e[0].fits_after_s, 2400);
  EXPECT_EQ(e[0].fits_after_basis, EndBasis::kTimeLimit);
}

TEST_F(ExplainTest, TheEarliestExpectedEndThatMakesRoomIsNamedWithItsBasis) {
  core::ClusterSnapshot c({Node().Gpus(8), Node().Gpus(8), Node().Gpus(4)});
  std::vector<ExplainRunning> running = {
      Running(c, 10, {2}, 4, /*limit_s=*/60),                  // ends first, but frees only 4
      Running(c, 11, {0}, 8, /*limit_s=*/7200),                // the limit: 2 h
      Running(c, 12, {1}, 8, /*limit_s=*/7200, /*est=*/600)};  // expected in 10 min
  auto e = Explain("priority", c, {Job(1, 8)}, running, /*now=*/0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].fits_after_job, 12);
  EXPECT_EQ(e[0].fits_after_basis, EndBasis::kEstimate);
  EXPECT_TRUE(Holds(e[0].reason, "would fit after job 12 ends (expected in 10 min)"));
  // For a reader who may not see the estimate (another user's job): the rest stays.
  const std::string& hidden = e[0].reason_end_hidden;
  EXPECT_TRUE(Holds(hidden, "would fit after job 12 ends (when: not shown)")) << hidden;
  EXPECT_FALSE(Holds(hidden, "10 min")) << hidden;
}

// The reason without the end is built, not edited out of the reason: before, a search for
// " (expected in " found it inside a queue's name, cut the text there, and left the real time.
TEST_F(ExplainTest, AQueueNamedLikeTheHiddenPhraseCannotBringTheEndBack) {
  core::ClusterSnapshot c({Node().Gpus(8)});
  const std::string queue = "x (expected in ";
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 4, 7200, 600, queue),
                                         Running(c, 101, {0}, 4, 7200, std::nan(""), queue)};
  auto e = Explain("fairshare", c, {Job(1, 4, 0, queue)}, running, 0, {{queue, 1}, {"b", 1}});
  ASSERT_EQ(e.size(), 1u);
  ASSERT_EQ(e[0].kind, WaitKind::kOverFairShare);
  EXPECT_TRUE(Holds(e[0].reason, "after job 100 ends (expected in 10 min)")) << e[0].reason;
  EXPECT_TRUE(Holds(e[0].reason_end_hidden, "after job 100 ends (when: not shown)"))
      << e[0].reason_end_hidden;
  EXPECT_FALSE(Holds(e[0].reason_end_hidden, "10 min")) << e[0].reason_end_hidden;
}

TEST_F(ExplainTest, UnknownEndsAreSaidSoAndLongWaitsInHours) {
  core::ClusterSnapshot c({Node().Gpus(8), Node().Gpus(8)});
  std::vector<ExplainRunning> running = {Running(c, 20, {0}, 8, std::nan("")),
                                         Running(c, 21, {1}, 8, /*limit_s=*/3 * 3600 + 600)};
  auto e = Explain("priority", c, {Job(1, 8), Job(2, 24)}, running);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_TRUE(Holds(e[0].reason, "after job 21 ends (time limit in 3 h 10 min)"));
  // Only with both gone: 20, of unknown end, is last in the order of ends.
  EXPECT_EQ(e[1].kind, WaitKind::kNeverFits) << "24 GPUs on 16";
  EXPECT_TRUE(Holds(e[1].reason, "gpus: asks for 24 GPUs; the cluster has 16"));
}

TEST_F(ExplainTest, StrictOrderBlocksAJobThatFitsBehindOneThatDoesNot) {
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 6, 600)};
  auto e = Explain("fifo", c, {Job(1, 4), Job(2, 1)}, running);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].position, 1);
  EXPECT_EQ(e[0].kind, WaitKind::kNoFitNow);
  EXPECT_EQ(e[1].position, 2);
  EXPECT_EQ(e[1].kind, WaitKind::kBlockedByOrder);
  EXPECT_EQ(e[1].reason,
            "fits now, but the fifo policy starts jobs in strict order and job 1 ahead of it "
            "cannot start yet");
}

TEST_F(ExplainTest, AJobThatCanNeverFitBlocksNoOrder) {
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 6, 600)};
  auto e = Explain("fifo", c, {Job(1, 16), Job(2, 1), Job(3, 4), Job(4, 1)}, running);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].kind, WaitKind::kNeverFits);
  EXPECT_TRUE(Holds(e[0].reason, "it holds no other job back"));
  EXPECT_EQ(e[1].kind, WaitKind::kStarting) << e[1].reason;
  EXPECT_EQ(e[2].kind, WaitKind::kNoFitNow) << e[2].reason;
  EXPECT_EQ(e[3].kind, WaitKind::kBlockedByOrder) << e[3].reason;
  EXPECT_TRUE(Holds(e[3].reason, "job 3 ahead of it cannot start yet"));
}

TEST_F(ExplainTest, EasyBackfillSaysAJobThatFitsWouldDelayTheReservation) {
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 6, 100)};
  std::vector<QueuedJob> jobs = {Job(1, 8), Job(2, 2)};
  running[0].run.job.estimate_s = 100;  // what EASY reserves by
  jobs[1].estimate_s = 500;             // ends after the reservation: may not backfill
  auto e = Explain("backfill", c, jobs, running);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].kind, WaitKind::kBlockedByOrder);
  EXPECT_TRUE(Holds(e[1].reason, "could delay job 1, which holds the backfill reservation"));
}

TEST_F(ExplainTest, PositionsFollowThePolicyOrderAndCountHigherPriorityAhead) {
  core::ClusterSnapshot c({Node().Gpus(4)});
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 4, 600)};
  auto e =
      Explain("priority", c, {Job(1, 4, 0), Job(2, 4, 5), Job(3, 4, 9), Job(4, 2, 0)}, running);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].id, 3);
  EXPECT_EQ(e[1].id, 2);
  EXPECT_EQ(e[2].id, 1);
  EXPECT_EQ(e[3].id, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(e[i].position, i + 1);
  EXPECT_EQ(e[0].higher_priority_ahead, 0);
  EXPECT_EQ(e[2].higher_priority_ahead, 2);
  EXPECT_TRUE(Holds(e[2].reason, "; behind 2 jobs of higher priority"));
  EXPECT_EQ(e[3].higher_priority_ahead, 2) << "job 1 has the same priority";
}

TEST_F(ExplainTest, AJobTheSchedulerStartsIsStarting) {
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 4, 600)};
  auto e = Explain("priority", c, {Job(1, 8), Job(2, 2), Job(3, 2)}, running);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].kind, WaitKind::kNoFitNow);
  EXPECT_EQ(e[1].kind, WaitKind::kStarting);
  EXPECT_EQ(e[1].reason, "starting now");
  EXPECT_EQ(e[2].kind, WaitKind::kStarting);
}

TEST_F(ExplainTest, AGangCountsTheNodesWithRoom) {
  core::ClusterSnapshot c({Node().Gpus(4), Node().Gpus(4), Node().Gpus(4)});
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 4, 1200),
                                         Running(c, 101, {1}, 2, 600)};
  QueuedJob gang = Job(1, 8);
  gang.nodes = 2;
  auto e = Explain("priority", c, {gang}, running);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, WaitKind::kGangWaitingNodes);
  EXPECT_EQ(e[0].reason,
            "needs 2 nodes with 4 GPUs free each, all at once: 1 node has that free now; would "
            "fit after job 101 ends (time limit in 10 min)");
}

TEST_F(ExplainTest, FairShareTellsAQueueOverItsShareFromOneThatReclaims) {
  core::ClusterSnapshot c({Node().Gpus(8)});
  std::vector<ExplainRunning> running = {Running(c, 100, {0}, 4, 600, std::nan(""), "a"),
                                         Running(c, 101, {0}, 4, 1200, std::nan(""), "a")};
  auto e = Explain("fairshare", c, {Job(1, 4, 0, "a"), Job(2, 4, 0, "b")}, running, 0,
                   {{"a", 1}, {"b", 1}});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].kind, WaitKind::kOverFairShare);
  EXPECT_EQ(e[0].reason,
            "queue 'a' would go over its fair share (it holds 4 GPUs of its 4-GPU share and this "
            "job asks 4): it may only borrow idle GPUs, and none fit: needs 4 GPUs on one node: "
            "no node has 4 free now; would fit after job 100 ends (time limit in 10 min)");
  EXPECT_EQ(e[0].fits_after_job, 100);
  EXPECT_EQ(e[1].kind, WaitKind::kStarting) << "b is owed its share: it reclaims it";
  EXPECT_EQ(e[1].reason, "starting now, once the running job(s) it preempts have stopped: job 101");
}

TEST_F(ExplainTest, NamesOfKindsAndBasesAreStable) {
  EXPECT_EQ(WaitKindName(WaitKind::kNoFitNow), "no_fit_now");
  EXPECT_EQ(WaitKindName(WaitKind::kBlockedByOrder), "blocked_by_order");
  EXPECT_EQ(WaitKindName(WaitKind::kOverFairShare), "over_fair_share");
  EXPECT_EQ(WaitKindName(WaitKind::kNeverFits), "never_fits");
  EXPECT_EQ(WaitKindName(WaitKind::kGangWaitingNodes), "gang_waiting_nodes");
  EXPECT_EQ(WaitKindName(WaitKind::kStarting), "starting");
  EXPECT_EQ(WaitKindName(WaitKind::kFitsNow), "fits_now");
  EXPECT_EQ(EndBasisName(EndBasis::kTimeLimit), "time_limit");
  EXPECT_EQ(EndBasisName(EndBasis::kEstimate), "estimate");
}

// Bounded cost: 10,000 waiting jobs of many shapes over 1,000 full nodes. Prints the time (the
// wall clock is read only to report it; the bound is loose so that sanitizer builds pass).
// The fleet-scale case of bench/explain_bench.cpp (which times it), checked for what it says.
TEST_F(ExplainTest, TenThousandJobsOverAThousandNodesAreAllExplained) {
  std::vector<core::NodeSpec> nodes = test::Replicate(Node().Gpus(8), 1000);
  core::ClusterSnapshot c(nodes);
  std::vector<ExplainRunning> running;
  JobId id = 100000;
  for (int n = 0; n < 1000; ++n) {
    // Single-GPU and 4-GPU jobs, ending at spread-out times over a day.
    running.push_back(Running(c, id++, {n}, 4, 600.0 + (n * 37) % 86400));
    for (int g = 0; g < 4; ++g)
      running.push_back(Running(c, id++, {n}, 1, 300.0 + (n * 91 + g) % 86400));
  }
  std::vector<QueuedJob> jobs;
  const int sizes[] = {1, 2, 4, 8, 16};
  for (JobId j = 1; j <= 10000; ++j) {
    QueuedJob q = Job(j, sizes[j % 5], static_cast<int>(j % 7));
    if (q.total_gpus == 16) q.nodes = 2;
    q.cpu_milli_per_gpu = 500 * (j % 40);  // 200 distinct shapes
    jobs.push_back(q);
  }
  auto e = Explain("priority", c, jobs, running);
  ASSERT_EQ(e.size(), 10000u);
  int with_fits_after = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(e[i].position, static_cast<int>(i) + 1);
    with_fits_after += e[i].fits_after_job.has_value();
  }
  EXPECT_GT(with_fits_after, 0);
}

}  // namespace
}  // namespace gpufleet::sched
