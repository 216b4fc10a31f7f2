// The time simulation on an autoscaled fleet (`sim/sim_fleet.h`), on small hand-computable traces.
#include "sim/sim_fleet.h"

#include <gtest/gtest.h>

#include "sched/policy_registry.h"
#include "sched/queue_policy.h"

namespace gpufleet::sim {
namespace {

// One group of 8-GPU V100 nodes at $8 per node-hour, booting in 100 s.
scale::AutoscaleConfig Fleet(int min = 0, int max = 4) {
  scale::NodeGroup g;
  g.name = "v100";
  g.model = *core::GpuCatalog::Builtin().Find("V100M32");
  g.model_name = "V100M32";
  g.gpus = 8;
  g.cpu_milli = 64000;
  g.memory_mib = 512 * 1024;
  g.price_per_hour = 8;
  g.min = min;
  g.max = max;
  g.boot_s = 100;
  scale::AutoscaleConfig c;
  c.groups.push_back(g);
  c.policy.scan_interval_s = 10;
  c.policy.scale_down_unneeded_s = 300;
  return c;
}

TimeSimResult Replay(const std::vector<TraceJob>& jobs, const scale::AutoscaleConfig& fleet,
                     double interruptions = 0, uint64_t seed = 1,
                     const std::string& policy = "fifo") {
  auto queue = sched::MakeQueuePolicy(policy);
  auto placement = sched::MakePlacementPolicy("bestfit");
  TimeSimConfig config;
  config.seed = seed;
  config.autoscale.config = &fleet;
  config.autoscale.spot_interruptions_per_node_hour = interruptions;
  config.autoscale.checkpoint_interval_s = 600;
  auto r = RunTimeSim(jobs, ClusterSpec{}, *queue, *placement, config, /*log_decisions=*/true);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
  return std::move(r).value();
}

TEST(SimFleetTest, EmptyFleetBuysANodeAndTheJobStartsAfterTheBoot) {
  const auto r = Replay({{1, 0, 1000, 8, "a"}}, Fleet());
  EXPECT_EQ(r.fleet.nodes_created, 1);
  EXPECT_EQ(r.jobs[0].start_s, 100);  // created at 0, booted at 100
  EXPECT_EQ(r.jobs[0].finish_s, 1100);
  EXPECT_DOUBLE_EQ(Summarize(r).avg_queue_s, 100);
}

TEST(SimFleetTest, GangJobGetsAllItsNodesAtOnce) {
  const auto r = Replay({{1, 0, 500, 24, "a"}}, Fleet());
  EXPECT_EQ(r.fleet.nodes_created, 3);
  EXPECT_EQ(r.fleet.planner_calls, 1);
  EXPECT_EQ(r.jobs[0].start_s, 100);
  ASSERT_FALSE(r.fleet.nodes_over_time.empty());
  EXPECT_EQ(r.fleet.nodes_over_time.front(), (std::pair<int64_t, int>{0, 3}));
}

TEST(SimFleetTest, IdleNodeIsRetiredAfterItsUnneededTimeAndCostIsLifetimesTimesPrice) {
  // Job 1 runs 100..1100 on node A; A is idle from 1100 and retired at 1100 + 300 = 1400. Job 2
  // arrives at 5000, buys node B, runs 5100..6100, and the replay ends there.
  const auto r = Replay({{1, 0, 1000, 8, "a"}, {2, 5000, 1000, 8, "a"}}, Fleet());
  EXPECT_EQ(r.fleet.nodes_created, 2);
  EXPECT_EQ(r.fleet.nodes_retired, 1);
  EXPECT_EQ(r.jobs[1].start_s, 5100);
  // Lifetimes: A 0..1400, B 5000..6100: 2,500 s x $8/h.
  EXPECT_NEAR(r.fleet.cost_usd, 2500.0 / 3600 * 8, 1e-9);
  EXPECT_DOUBLE_EQ(r.fleet.gpu_s_bought, 2500.0 * 8);
  EXPECT_DOUBLE_EQ(r.busy_gpu_s, 2000.0 * 8);
  EXPECT_NEAR(Summarize(r).utilization, 0.8, 1e-12);
  EXPECT_EQ(r.fleet.planner_calls, 3);  // job 1's arrival, A's retirement, job 2's arrival
}

TEST(SimFleetTest, MinNodesAreReadyAtTheStartAndKept) {
  const auto r = Replay({{1, 0, 1000, 8, "a"}, {2, 5000, 1000, 8, "a"}}, Fleet(/*min=*/1));
  EXPECT_EQ(r.jobs[0].start_s, 0);
  EXPECT_EQ(r.jobs[1].start_s, 5000);
  EXPECT_EQ(r.fleet.nodes_created, 1);
  EXPECT_EQ(r.fleet.nodes_retired, 0);
  EXPECT_NEAR(r.fleet.cost_usd, 6000.0 / 3600 * 8, 1e-9);
}

TEST(SimFleetTest, SpendCapIsNeverExceeded) {
  scale::AutoscaleConfig fleet = Fleet(0, 8);
  fleet.policy.max_spend_per_hour = 16;  // two nodes
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back({i, 0, 1000, 8, "a"});
  const auto r = Replay(jobs, fleet);
  EXPECT_LE(r.fleet.peak_spend_per_hour, 16.0);
  EXPECT_EQ(r.fleet.peak_nodes, 2);
  const JctSummary s = Summarize(r);
  EXPECT_EQ(s.unfinished, 0);
  for (const auto& [t, nodes] : r.fleet.nodes_over_time) EXPECT_LE(nodes, 2) << "at " << t;
}

TEST(SimFleetTest, SpotInterruptionRequeuesTheJobAndCountsLostWork) {
  scale::AutoscaleConfig fleet = Fleet();
  fleet.groups[0].spot_price_per_hour = 2.4;
  // About one interruption per node every 20 minutes against a 3-hour job.
  const auto r = Replay({{1, 0, 3 * 3600, 8, "a"}}, fleet, /*interruptions=*/3.0);
  EXPECT_GT(r.fleet.spot_nodes_created, 0);
  EXPECT_GT(r.fleet.interruptions, 0);
  EXPECT_GT(r.fleet.jobs_interrupted, 0);
  // Each stopped run loses at least the restart overhead (60 s on 8 GPUs).
  EXPECT_GE(r.fleet.gpu_s_lost, 60.0 * 8 * static_cast<double>(r.fleet.jobs_interrupted));
  EXPECT_EQ(Summarize(r).unfinished, 0);
  EXPECT_GT(r.jobs[0].finish_s, 100 + 3 * 3600);
  EXPECT_NE(r.decision_log.find(",interrupt,1,"), std::string::npos);
  // Only spot nodes were bought, and the cost is all spot.
  EXPECT_EQ(r.fleet.spot_nodes_created, r.fleet.nodes_created);
  EXPECT_DOUBLE_EQ(r.fleet.spot_cost_usd, r.fleet.cost_usd);
}

TEST(SimFleetTest, ConsolidationMovesALongJobOffAnUnderUsedNodeAndRetiresIt) {
  // Jobs 1 (7 GPUs, 1,000 s) and 2 (1 GPU, 20,000 s) share node A (created at 0, ready at 100).
  // Job 3 (4 GPUs) arrives at 500 and buys node B (ready at 600; runs 600..20,600). When job 1
  // ends at 1,100, job 2 has run 1,000 s (its expected remaining run, the run time being unknown)
  // against a move cost of 60 s x 1 GPU / 8 GPUs of A's price: A is emptied, job 2 restarts on B
  // at once with 19,000 + 60 s of work left (it kept its progress), and A is paid until 1,160.
  const std::vector<TraceJob> jobs = {
      {1, 0, 1000, 7, "a"}, {2, 0, 20000, 1, "a"}, {3, 500, 20000, 4, "a"}};
  scale::AutoscaleConfig fleet = Fleet();
  const auto plain = Replay(jobs, fleet);
  EXPECT_EQ(plain.fleet.consolidations, 0);
  // Without consolidation, A lives until job 2 ends (20,100) plus its unneeded time (300 s).
  EXPECT_NEAR(plain.fleet.cost_usd, (20400.0 + 20100.0) / 3600 * 8, 1e-9);

  fleet.policy.consolidation = true;
  const auto r = Replay(jobs, fleet);
  EXPECT_EQ(r.fleet.nodes_created, 2);
  EXPECT_EQ(r.fleet.consolidations, 1);
  EXPECT_EQ(r.fleet.nodes_retired, 1);
  EXPECT_EQ(r.fleet.jobs_moved, 1);
  EXPECT_DOUBLE_EQ(r.fleet.gpu_s_lost_moves, 60.0);
  EXPECT_NE(r.decision_log.find("1100,move,2,"), std::string::npos);
  EXPECT_NE(r.decision_log.find("1100,start,2,"), std::string::npos);
  EXPECT_EQ(r.jobs[1].finish_s, 1100 + 19000 + 60);
  EXPECT_EQ(r.jobs[2].finish_s, 20600);
  EXPECT_NEAR(r.fleet.cost_usd, (1160.0 + 20100.0) / 3600 * 8, 1e-9);
  EXPECT_DOUBLE_EQ(r.fleet.gpu_s_bought, (1160.0 + 20100.0) * 8);
}

TEST(SimFleetTest, SameSeedSameReplay) {
  scale::AutoscaleConfig fleet = Fleet(0, 6);
  fleet.groups[0].spot_price_per_hour = 2.4;
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 40; ++i)
    jobs.push_back({i, i * 97, 600 + (i * 7919) % 5000, 1 << (i % 4), "a"});
  const auto a = Replay(jobs, fleet, 1.0, 7, "priority");
  const auto b = Replay(jobs, fleet, 1.0, 7, "priority");
  EXPECT_EQ(a.decision_log, b.decision_log);
  EXPECT_EQ(a.fleet.cost_usd, b.fleet.cost_usd);
  EXPECT_EQ(a.fleet.interruptions, b.fleet.interruptions);
  EXPECT_EQ(Summarize(a).unfinished, 0);
}

TEST(SimFleetTest, JobLargerThanTheFleetCanGrowIsAnError) {
  auto queue = sched::MakeQueuePolicy("fifo");
  auto placement = sched::MakePlacementPolicy("bestfit");
  const scale::AutoscaleConfig fleet = Fleet(0, 2);
  TimeSimConfig config;
  config.autoscale.config = &fleet;
  auto r = RunTimeSim({{1, 0, 10, 24, "a"}}, ClusterSpec{}, *queue, *placement, config, false);
  EXPECT_FALSE(r.ok());
}

TEST(SimFleetTest, WithoutSpreadingAJobOfWholeNodesGetsWholeNodesAndRunsAtFullSpeed) {
  // A 1-GPU job holds 1 GPU of node A when a 16-GPU job arrives: without spreading it does not
  // take A's 7 free GPUs plus a new node (1.5x slower), it waits for 2 new whole nodes.
  auto queue = sched::MakeQueuePolicy("priority");
  auto placement = sched::MakePlacementPolicy("bestfit");
  const scale::AutoscaleConfig fleet = Fleet(/*min=*/1, /*max=*/4);
  TimeSimConfig config;
  config.allow_spread = false;
  config.autoscale.config = &fleet;
  auto r = RunTimeSim({{1, 0, 5000, 1, "a"}, {2, 10, 1000, 16, "a"}}, ClusterSpec{}, *queue,
                      *placement, config, false);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().jobs[1].start_s, 110);    // two nodes bought at 10, booted at 110
  EXPECT_EQ(r.value().jobs[1].finish_s, 1110);  // full speed
  EXPECT_EQ(r.value().fleet.nodes_created, 3);
}

}  // namespace
}  // namespace gpufleet::sim
