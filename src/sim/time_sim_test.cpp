#include "sim/time_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "sched/policy_registry.h"
#include "sched/queue_policy.h"
#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

ClusterSpec Cluster(int nodes, int gpus) {
  ClusterSpec spec;
  spec.name = "test";
  for (int i = 0; i < nodes; ++i) {
    std::string name = "n";
    name += std::to_string(i);
    spec.nodes.push_back(test::Node(name).Gpus(gpus, "V100M32"));
  }
  return spec;
}

TimeSimResult Simulate(const std::vector<TraceJob>& jobs, const ClusterSpec& cluster,
                       const std::string& policy, bool log = false,
                       const TimeSimConfig& config = TimeSimConfig{}) {
  auto queue = sched::MakeQueuePolicy(policy);
  auto placement = sched::MakePlacementPolicy("bestfit");
  auto r = RunTimeSim(jobs, cluster, *queue, *placement, config, log);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
  return std::move(r).value();
}

TEST(TimeSimTest, FifoAndSjfOnAKnownCase) {
  // One 8-GPU node: a long 8-GPU job and a short 1-GPU job arrive together.
  const std::vector<TraceJob> jobs = {{0, 0, 100, 8, "a"}, {1, 0, 10, 1, "b"}};
  const auto fifo = Simulate(jobs, Cluster(1, 8), "fifo");
  EXPECT_EQ(fifo.jobs[0].finish_s, 100);
  EXPECT_EQ(fifo.jobs[1].start_s, 100);
  EXPECT_EQ(fifo.jobs[1].finish_s, 110);
  EXPECT_DOUBLE_EQ(Summarize(fifo).avg_jct_s, 105);
  // SJF runs the short job first; the long one waits for all 8 GPUs.
  const auto sjf = Simulate(jobs, Cluster(1, 8), "sjf-oracle");
  EXPECT_EQ(sjf.jobs[1].finish_s, 10);
  EXPECT_EQ(sjf.jobs[0].start_s, 10);
  EXPECT_EQ(sjf.jobs[0].finish_s, 110);
  EXPECT_DOUBLE_EQ(Summarize(sjf).avg_jct_s, 60);
}

TEST(TimeSimTest, AnElasticJobGrowsIntoIdleGpusAndRunsFasterThere) {
  // One 8-GPU node. A rigid 4-GPU job runs 0..1000; an elastic job (its trace run: 10,000 s on 2
  // GPUs; 1..8 GPUs) starts beside it on the 4 free GPUs, and grows to 8 when they free up.
  std::vector<TraceJob> jobs = {{0, 0, 1000, 4, "a"}, {1, 0, 10000, 2, "b"}};
  jobs[1].min_gpus = 1;
  jobs[1].max_gpus = 8;
  TimeSimConfig config;
  config.elastic_grow_after_s = 600;  // it has run 1000 s when the GPUs free up
  const auto r = Simulate(jobs, Cluster(1, 8), "fifo", true, config);
  EXPECT_EQ(r.grows, 1);
  EXPECT_EQ(r.shrinks, 0);
  EXPECT_NE(r.decision_log.find("1000,grow,1,0:255"), std::string::npos) << r.decision_log;
  // With the default delay (an hour) it waits until 3600 to grow.
  const auto later = Simulate(jobs, Cluster(1, 8), "fifo", true);
  EXPECT_NE(later.decision_log.find("3600,grow,1,0:255"), std::string::npos) << later.decision_log;
  const double at4 = ElasticSpeedup(4, config.elastic_efficiency) /
                     ElasticSpeedup(2, config.elastic_efficiency);
  const double at8 = ElasticSpeedup(8, config.elastic_efficiency) /
                     ElasticSpeedup(2, config.elastic_efficiency);
  const double left = 10000 - 1000 * at4 + config.preemption_overhead_s;
  EXPECT_NEAR(static_cast<double>(r.jobs[1].finish_s), 1000 + std::ceil(left / at8), 1);
  // Busy GPU-seconds follow the GPUs it really held: 4 x 1000 (rigid) + 4 x 1000 + 8 x the rest.
  EXPECT_NEAR(r.busy_gpu_s, 4000 + 4000 + 8.0 * static_cast<double>(r.jobs[1].finish_s - 1000),
              1e-6);
}

// Records what the simulator asks a queue policy: the jobs whose next class change it wants (their
// sizes), and, when preemptive, the service each running job is ranked by. Every class is 0, so
// it never preempts.
class Recording final : public sched::QueuePolicy {
 public:
  explicit Recording(bool preemptive) : preemptive_(preemptive) {}
  std::string_view Name() const override { return "recording"; }
  double Key(const sched::QueuedJob& job) const override {
    return static_cast<double>(job.submit_s);
  }
  sched::Backfill backfill() const override { return sched::Backfill::kGreedy; }
  bool Preemptive() const override { return preemptive_; }
  int PriorityClassAt(const sched::QueuedJob& job, double attained_gpu_s) const override {
    seen_service[job.id].push_back(attained_gpu_s);
    return 0;
  }
  double NextClassChange(const sched::QueuedJob& job, double /*attained_gpu_s*/) const override {
    asked_total_gpus.push_back(job.total_gpus);
    return HUGE_VAL;
  }
  mutable std::vector<int> asked_total_gpus;
  mutable std::map<sched::JobId, std::vector<double>> seen_service;

 private:
  bool preemptive_;
};

// An elastic job running below its most is asked about as the job it is (its most GPUs), as the
// policy ranks it. Before, the simulator passed the GPUs it ran on, so gittins read its class
// change from another size's table while ranking it by its own.
TEST(TimeSimTest, AnElasticJobsClassChangeIsAskedForTheJobNotTheGpusItRunsOn) {
  // One 8-GPU node: a rigid 3-GPU job, and an elastic one (1..8) that starts on the other 5.
  std::vector<TraceJob> jobs = {{0, 0, 1000, 3, "a"}, {1, 0, 10000, 2, "b"}};
  jobs[1].min_gpus = 1;
  jobs[1].max_gpus = 8;
  TimeSimConfig config;
  config.elastic_grow_after_s = 600;
  Recording queue(/*preemptive=*/false);
  auto placement = sched::MakePlacementPolicy("bestfit");
  auto r = RunTimeSim(jobs, Cluster(1, 8), queue, *placement, config, true);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_NE(r.value().decision_log.find("0,start,1,0:"), std::string::npos)
      << r.value().decision_log;
  EXPECT_EQ(r.value().grows, 1) << "it ran below its most, then grew";
  for (int gpus : queue.asked_total_gpus) EXPECT_TRUE(gpus == 3 || gpus == 8) << gpus;
  EXPECT_EQ(std::count(queue.asked_total_gpus.begin(), queue.asked_total_gpus.end(), 8), 2);
}

// A resized elastic job keeps the service it had: before, its restart kept the QueuedJob of its
// start, so after a grow the scheduler ranked it as if it had run only since the grow.
TEST(TimeSimTest, AResizedElasticJobIsRankedByAllTheServiceItHasHad) {
  // One 8-GPU node: a rigid 4-GPU job runs 0..1000; an elastic one (1..8) runs on the other 4
  // and grows to 8 at 1000; a 1-GPU job arriving at 2000 makes a pass that ranks it.
  std::vector<TraceJob> jobs = {{0, 0, 1000, 4, "a"}, {1, 0, 100000, 2, "b"}, {2, 2000, 10, 1, "c"}};
  jobs[1].min_gpus = 1;
  jobs[1].max_gpus = 8;
  TimeSimConfig config;
  config.elastic_grow_after_s = 600;
  Recording queue(/*preemptive=*/true);
  auto placement = sched::MakePlacementPolicy("bestfit");
  auto r = RunTimeSim(jobs, Cluster(1, 8), queue, *placement, config, true);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_NE(r.value().decision_log.find("1000,grow,1,0:255"), std::string::npos)
      << r.value().decision_log;
  const std::vector<double>& seen = queue.seen_service[1];
  // 4 GPUs x 1000 s, then 8 x 1000 s: 12,000 GPU-seconds at 2000 (before the fix: 8,000).
  EXPECT_NE(std::find(seen.begin(), seen.end(), 12000.0), seen.end());
  EXPECT_EQ(std::find(seen.begin(), seen.end(), 8000.0), seen.end());
}

TEST(TimeSimTest, AnElasticJobShrinksBeforeAnyoneIsPreempted) {
  // Tiresias, one 8-GPU node: an elastic job (2..8) runs alone on all 8; a rigid 4-GPU job
  // arriving at 100 outranks it, and takes 4 GPUs it gives back: nobody is preempted.
  std::vector<TraceJob> jobs = {{0, 0, 5000, 4, "a"}, {1, 100, 500, 4, "b"}};
  jobs[0].min_gpus = 2;
  jobs[0].max_gpus = 8;
  const auto r = Simulate(jobs, Cluster(1, 8), "tiresias", true);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_EQ(r.shrinks, 1);
  EXPECT_EQ(r.jobs[1].start_s, 100);
  EXPECT_EQ(r.jobs[1].finish_s, 600);
  EXPECT_NE(r.decision_log.find("100,shrink,0,"), std::string::npos) << r.decision_log;
  // And it grows back once the GPUs are idle again (the grow delay after its shrink).
  EXPECT_EQ(r.grows, 1);
}

TEST(TimeSimTest, MakeElasticChoosesTheSameJobsForTheSameSeed) {
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 1000; ++i) jobs.push_back({i, i, 100, 1 + i % 8, "a"});
  std::vector<TraceJob> again = jobs;
  const int64_t made = MakeElastic(&jobs, 0.5, 0.5, 2.0, 16, 7);
  EXPECT_EQ(MakeElastic(&again, 0.5, 0.5, 2.0, 16, 7), made);
  EXPECT_GT(made, 400);
  EXPECT_LT(made, 600);
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].max_gpus, again[i].max_gpus);
    if (jobs[i].max_gpus == 0) continue;
    EXPECT_LE(jobs[i].min_gpus, jobs[i].num_gpus);
    EXPECT_GE(jobs[i].max_gpus, jobs[i].num_gpus);
    EXPECT_LE(jobs[i].max_gpus, 16);
    EXPECT_LT(jobs[i].min_gpus, jobs[i].max_gpus);
  }
  EXPECT_EQ(MakeElastic(&jobs, 0, 0.5, 2.0, 16, 7), 0);
  for (const TraceJob& j : jobs) EXPECT_EQ(j.max_gpus, 0);
}

TEST(TimeSimTest, SpreadJobsRunSlower) {
  // Two 4-GPU nodes with 3 GPUs busy on each until t=100; a 2-GPU job arriving at 1 must spread.
  const std::vector<TraceJob> jobs = {{0, 0, 100, 3, "a"}, {1, 0, 100, 3, "a"}, {2, 1, 60, 2, "b"}};
  const auto r = Simulate(jobs, Cluster(2, 4), "fifo");
  EXPECT_EQ(r.jobs[2].start_s, 1);
  EXPECT_EQ(r.jobs[2].finish_s, 1 + 90);  // 60 s at 1/1.5 speed
}

TEST(TimeSimTest, SummaryAndUtilization) {
  const std::vector<TraceJob> jobs = {{0, 0, 50, 4, "a"}, {1, 0, 100, 4, "a"}};
  const auto r = Simulate(jobs, Cluster(1, 8), "fifo");
  const JctSummary s = Summarize(r);
  EXPECT_EQ(s.finished, 2);
  EXPECT_EQ(s.unfinished, 0);
  EXPECT_EQ(r.makespan_s, 100);
  EXPECT_DOUBLE_EQ(s.utilization, (4.0 * 50 + 4.0 * 100) / (8.0 * 100));
  EXPECT_DOUBLE_EQ(s.p50_jct_s, 75);  // linear between 50 and 100
  EXPECT_DOUBLE_EQ(s.avg_queue_s, 0);
}

TEST(TimeSimTest, FairnessAndHourlyUtilization) {
  // VC a runs first (slowdown 1); VC b waits an hour behind it (slowdown 2).
  const std::vector<TraceJob> jobs = {{0, 0, 3600, 8, "a"}, {1, 0, 3600, 8, "b"}};
  const auto r = Simulate(jobs, Cluster(1, 8), "fifo");
  const JctSummary s = Summarize(r);
  ASSERT_EQ(s.vc_slowdown.size(), 2u);
  EXPECT_DOUBLE_EQ(s.vc_slowdown[0].second, 1.0);
  EXPECT_DOUBLE_EQ(s.vc_slowdown[1].second, 2.0);
  EXPECT_DOUBLE_EQ(s.jain_index, 9.0 / 10.0);  // (1 + 2)^2 / (2 * (1 + 4))
  const auto hours = HourlyUtilization(r);
  ASSERT_EQ(hours.size(), 2u);
  EXPECT_DOUBLE_EQ(hours[0], 1.0);
  EXPECT_DOUBLE_EQ(hours[1], 1.0);
}

TEST(TimeSimTest, LasLetsAShortJobOvertakeALongOne) {
  // A long 8-GPU job has run 5,000 s (40,000 GPU-s: the lowest class) when a short one arrives.
  const std::vector<TraceJob> jobs = {{0, 0, 10000, 8, "a"}, {1, 5000, 100, 8, "b"}};
  const auto las = Simulate(jobs, Cluster(1, 8), "tiresias", true);
  EXPECT_EQ(las.jobs[1].start_s, 5000);
  EXPECT_EQ(las.jobs[1].finish_s, 5100);
  // The long job keeps its progress and pays the 60 s restart overhead.
  EXPECT_EQ(las.jobs[0].finish_s, 5100 + 5000 + 60);
  EXPECT_EQ(las.preemptions, 1);
  EXPECT_NE(las.decision_log.find("5000,preempt,0,"), std::string::npos) << las.decision_log;
  const auto fifo = Simulate(jobs, Cluster(1, 8), "fifo");
  EXPECT_EQ(fifo.jobs[1].finish_s, 10100);
  EXPECT_EQ(fifo.preemptions, 0);
}

TEST(TimeSimTest, LasPreemptsNobodyWhenThatWouldNotBeEnough) {
  // 16 GPUs. At t=9000, job 0 (4 GPUs since t=0: 36,000 GPU-s, the lowest class) and job 1
  // (4 GPUs since t=8990: the top class) run, and a 16-GPU job arrives in the top class. Stopping
  // job 0 alone frees only 12 GPUs, so nobody is preempted then. At t=9890 job 1 drops a class
  // (3,600 GPU-s); now both are below the waiting job, both are preempted, and it starts.
  const std::vector<TraceJob> jobs = {
      {0, 0, 20000, 4, "a"}, {1, 8990, 20000, 4, "a"}, {2, 9000, 100, 16, "b"}};
  const auto r = Simulate(jobs, Cluster(2, 8), "tiresias", true);
  EXPECT_EQ(r.decision_log.find("9000,preempt"), std::string::npos) << r.decision_log;
  EXPECT_EQ(r.jobs[2].start_s, 9890);
  EXPECT_EQ(r.preemptions, 2);
}

TEST(TimeSimTest, LasStarvationGuardPromotesALongWaitingJob) {
  // Job 0 runs 5,000 s (40,000 GPU-s: bottom class) and is preempted by job 1 at t=5000. Job 1
  // sinks to the bottom class too (at t=9500), so job 0 cannot take the GPUs back, until it has
  // waited 10x its 5,000 s of running: at t=55000 it is promoted to the top class and preempts
  // job 1.
  const std::vector<TraceJob> jobs = {{0, 0, 100000, 8, "a"}, {1, 5000, 100000, 8, "b"}};
  const auto r = Simulate(jobs, Cluster(1, 8), "tiresias", true);
  EXPECT_NE(r.decision_log.find("5000,preempt,0,"), std::string::npos) << r.decision_log;
  EXPECT_NE(r.decision_log.find("55000,preempt,1,"), std::string::npos) << r.decision_log;
  EXPECT_NE(r.decision_log.find("55000,start,0,"), std::string::npos) << r.decision_log;
}

TEST(TimeSimTest, ReplicatingTraceAndClusterKeepsEachCopyAlike) {
  std::vector<TraceJob> jobs = {{0, 0, 100, 8, "a"}, {1, 0, 10, 1, "b"}};
  ClusterSpec cluster = Cluster(1, 8);
  ReplicateTrace(3, &jobs, &cluster);
  ASSERT_EQ(jobs.size(), 6u);
  EXPECT_EQ(cluster.nodes.size(), 3u);
  EXPECT_EQ(jobs[5].id, 1 * 3 + 2);
  const auto r = Simulate(jobs, cluster, "fifo");
  // Each copy behaves like the original on its own node: JCTs 100 and 110, three times over.
  EXPECT_DOUBLE_EQ(Summarize(r).avg_jct_s, 105);
}

TEST(TimeSimTest, TooLargeJobsAreRejectedNotSimulatedForever) {
  auto queue = sched::MakeQueuePolicy("fifo");
  auto placement = sched::MakePlacementPolicy("bestfit");
  auto r = RunTimeSim({{7, 0, 10, 17, "a"}}, Cluster(2, 8), *queue, *placement, {}, false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("job 7 on cluster"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("gpus: asks for 17 GPUs; the cluster has 16"), std::string::npos)
      << r.error();
  auto unsorted = RunTimeSim({{0, 10, 10, 1, "a"}, {1, 5, 10, 1, "a"}}, Cluster(1, 8), *queue,
                             *placement, {}, false);
  EXPECT_FALSE(unsorted.ok());
}

TEST(TimeSimTest, SameInputSameDecisionLog) {
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 300; ++i) {
    jobs.push_back({i, i * 7, 50 + (i * 37) % 400, 1 + i % 8, i % 3 == 0 ? "vc-a" : "vc-b"});
  }
  for (const auto& info : sched::QueuePolicies()) {
    const std::string policy(info.name);
    const auto a = Simulate(jobs, Cluster(4, 8), policy, true);
    const auto b = Simulate(jobs, Cluster(4, 8), policy, true);
    EXPECT_FALSE(a.decision_log.empty());
    EXPECT_EQ(a.decision_log, b.decision_log) << policy;
    EXPECT_EQ(Summarize(a).finished, 300) << policy;
  }
}

TEST(TimeSimTest, FairShareReclaimsForAnIdleVcThatWakesUp) {
  // VC a fills 8 GPUs with long jobs; VC b (equal weight) then arrives: it must get its 4 GPUs
  // back at once by preemption, not after a's jobs finish.
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({i, 0, 100000, 1, "a"});
  for (int i = 8; i < 12; ++i) jobs.push_back({i, 1000, 100, 1, "b"});
  TimeSimConfig config;
  config.queue_weights = {{"a", 1}, {"b", 1}};
  auto queue = sched::MakeQueuePolicy("fairshare");
  auto placement = sched::MakePlacementPolicy("bestfit");
  auto r = RunTimeSim(jobs, Cluster(1, 8), *queue, *placement, config, true);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().preemptions, 4);
  for (int i = 8; i < 12; ++i) {
    EXPECT_EQ(r.value().jobs[static_cast<size_t>(i)].start_s, 1000) << "job " << i;
  }
}

TEST(TimeSimTest, GpuTimeSharesAreTheDefaultWeights) {
  const auto shares = GpuTimeShares({{0, 0, 100, 3, "a"}, {1, 0, 100, 1, "b"}});
  EXPECT_DOUBLE_EQ(shares.at("a"), 0.75);
  EXPECT_DOUBLE_EQ(shares.at("b"), 0.25);
}

}  // namespace
}  // namespace gpufleet::sim
