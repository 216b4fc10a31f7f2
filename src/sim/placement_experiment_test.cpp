#include "sim/placement_experiment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>

#include "sched/policy_registry.h"
#include "sim/openb_test_workload.h"
#include "sim/published_results.h"
#include "sim/synthetic_openb.h"
#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

using test::Job;
using test::Node;

// Two G2 nodes: "a" with 8 cores and 2 GPUs, "b" with 32 cores and 4 GPUs (6 GPUs in all).
OpenbWorkload TinyWorkload() {
  return MakeWorkload({Node("a").Cpu(8000).Gpus(2), Node("b").Cpu(32000).Gpus(4)},
                      {Job("share").Cpu(1000).Share(500), Job("two").Cpu(2000).Gpus(2),
                       Job("four").Cpu(4000).Gpus(4), Job("cpu").Cpu(1000)});
}

int64_t Demand(const OpenbWorkload& w, const std::vector<int>& pods) {
  int64_t d = 0;
  for (int p : pods) d += w.pods[p].job.GpuDemandMilli();
  return d;
}

TEST(GenerateOrderTest, DeterministicPerSeed) {
  const OpenbWorkload w = GenerateSyntheticOpenb(core::GpuCatalog::Builtin(), 60, 0.8, 3);
  const PlacementOrder a = GenerateOrder(w, 42, 1.3), b = GenerateOrder(w, 42, 1.3);
  const PlacementOrder c = GenerateOrder(w, 43, 1.3);
  EXPECT_EQ(a.pods, b.pods);
  EXPECT_EQ(a.node_rank, b.node_rank);
  EXPECT_NE(a.pods, c.pods);
  EXPECT_NE(a.node_rank, c.node_rank);
  EXPECT_EQ(a.source, "seed 42");
}

TEST(GenerateOrderTest, ShufflesThenClonesUpToTheTuneLimit) {
  const OpenbWorkload w = GenerateSyntheticOpenb(core::GpuCatalog::Builtin(), 60, 0.8, 3);
  const int n = static_cast<int>(w.pods.size());
  int64_t capacity = 0;
  for (const auto& node : w.nodes) capacity += node.num_gpus * 1000;
  for (uint64_t seed : {1, 2, 3}) {
    const PlacementOrder o = GenerateOrder(w, seed, 1.3);
    ASSERT_GT(static_cast<int>(o.pods.size()), n);
    // The originals first, each exactly once.
    std::vector<int> head(o.pods.begin(), o.pods.begin() + n);
    EXPECT_FALSE(std::is_sorted(head.begin(), head.end()));
    std::sort(head.begin(), head.end());
    for (int i = 0; i < n; ++i) ASSERT_EQ(head[i], i);
    // Each clone passed the stop test: demand before it plus its per-GPU milli within the limit.
    const double limit = 1.3 * static_cast<double>(capacity);
    int64_t demand = Demand(w, head);
    for (size_t i = n; i < o.pods.size(); ++i) {
      const core::JobSpec& clone = w.pods[o.pods[i]].job;
      EXPECT_LE(static_cast<double>(demand + clone.gpu_milli), limit) << "clone " << i;
      demand += clone.GpuDemandMilli();
    }
    // It stopped at a pod that failed the test, so the demand is within one GPU of the limit.
    EXPECT_GT(static_cast<double>(Demand(w, o.pods) + 1000), limit);
    std::vector<uint32_t> rank = o.node_rank;
    std::sort(rank.begin(), rank.end());
    for (size_t i = 0; i < rank.size(); ++i) ASSERT_EQ(rank[i], i);
  }
  // Already past the limit: no clones.
  EXPECT_EQ(static_cast<int>(GenerateOrder(w, 1, 0.5).pods.size()), n);
}

TEST(RunPlacementTest, TinyWorkloadWithBestFit) {
  const OpenbWorkload w = TinyWorkload();
  PlacementOrder order;
  order.pods = {0, 1, 2, 3, 2};
  order.node_rank = {0, 1};
  const sched::WorkloadProfile profile = ProfileOf(w);
  ASSERT_EQ(profile.total_count(), 4);
  auto policy = sched::MakePlacementPolicy("bestfit");
  policy->Prepare(profile);
  core::Rng rng(1);
  const PlacementRun run = RunPlacement(w, order, *policy, profile, rng);
  // share -> "a" (score 87 vs 66), its GPU 0; "two" fits only "b"; "four" finds no 4 free GPUs;
  // "cpu" -> "a" (88 vs 76); "four" fails again.
  EXPECT_EQ(run.node, (std::vector<int32_t>{0, 1, -1, 0, -1}));
  EXPECT_EQ(run.gpus, (std::vector<uint32_t>{0b01, 0b0011, 0, 0, 0}));
  EXPECT_EQ(run.failed, 2);
  EXPECT_EQ(run.capacity_milli, 6000);
  EXPECT_EQ(run.arrived_milli, (std::vector<int64_t>{500, 2500, 6500, 6500, 10500}));
  EXPECT_EQ(run.used_milli, (std::vector<int64_t>{500, 2500, 2500, 2500, 2500}));
  // Fragmentation with the four pod types at weight 1/4 each, hand-computed:
  // after "share": a = (0 + 1500 + 1500 + 1500) / 4, b = 4000 / 4; ratio 100 * 2125 / 5500.
  // after "two": b = (0 + 0 + 2000 + 2000) / 4; ratio 100 * 2125 / 3500.
  EXPECT_EQ(run.frag_ratio, (std::vector<double>{38.64, 60.71, 60.71, 60.71, 60.71}));
}

TEST(SummarizeCurvesTest, BucketsRoundHalfToEvenAndEmptyBucketsTakeNeighbours) {
  PlacementRun run;
  run.capacity_milli = 10000;  // 10 GPUs: bucket = arrived / 100, allocation = used / 100
  run.arrived_milli = {0, 100, 250, 350, 450, 500};  // buckets 0, 1, 2, 4, 4, 5
  run.used_milli = {0, 100, 200, 300, 400, 500};     // allocation 0, 1, 2, 3, 4, 5
  run.frag_ratio = {10, 11, 12, 13, 14, 15};
  run.failed = 1;
  const PlacementCurves c = SummarizeCurves(run, 7);
  ASSERT_EQ(c.allocation.size(), 8u);
  ASSERT_EQ(c.frag_ratio.size(), 8u);
  EXPECT_EQ(c.allocation[0], 0);
  EXPECT_EQ(c.allocation[1], 1);
  EXPECT_EQ(c.allocation[2], 2);  // 2.5 rounds to 2
  EXPECT_EQ(c.allocation[3], 3);  // empty: buckets 2 and 4 together, mean of 2, 3, 4
  EXPECT_EQ(c.frag_ratio[3], 13);
  EXPECT_EQ(c.allocation[4], 3.5);  // 3.5 rounds to 4
  EXPECT_EQ(c.frag_ratio[4], 13.5);
  EXPECT_EQ(c.allocation[5], 5);
  EXPECT_EQ(c.allocation[6], 5);             // empty: bucket 5 only
  EXPECT_TRUE(std::isnan(c.allocation[7]));  // empty, and so are both neighbours
  EXPECT_TRUE(std::isnan(c.frag_ratio[7]));
  EXPECT_EQ(c.failed, 1);
  EXPECT_EQ(c.pods, 6);
}

TEST(SummarizeCurvesTest, RoundsPerEventAndTheMeanTheWayNumpyDoes) {
  PlacementRun run;
  run.capacity_milli = 6212000;  // the openb cluster
  // used / 62120 = 91.97 and 91.98 after per-event rounding; their mean 91.975 rounds up.
  run.used_milli = {5713177, 5713800};
  run.arrived_milli = {6212000, 6212000};
  run.frag_ratio = {1, 2};
  const PlacementCurves c = SummarizeCurves(run, 100);
  EXPECT_EQ(c.allocation[100], 91.98);
  EXPECT_EQ(c.frag_ratio[100], 1.5);  // not rounded
}

TEST(MeanCurvesTest, AveragesAndRoundsAllocation) {
  PlacementCurves a, b;
  a.allocation = {10.0, 91.97};
  b.allocation = {20.0, 91.98};
  a.frag_ratio = {1.0, 2.0};
  b.frag_ratio = {2.0, 4.0};
  a.failed = 1;
  b.failed = 2;
  const PlacementCurves m = MeanCurves({a, b});
  EXPECT_EQ(m.allocation[0], 15.0);
  EXPECT_EQ(m.allocation[1], 91.98);
  EXPECT_DOUBLE_EQ(m.frag_ratio[1], 3.0);
  EXPECT_DOUBLE_EQ(m.failed, 1.5);
}

// The published experiment, seed 42 on the default trace: the curves must match to the digit.
TEST(PublishedCurvesTest, BestFitAndFgdMatchSeed42OnTheDefaultTrace) {
  const auto dir = test::OpenbTracesDir();
  if (!dir) GTEST_SKIP() << test::MissingTracesMessage();
  auto w = ReadOpenbWorkload((*dir / "openb_node_list_gpu_node.csv").string(),
                             (*dir / "openb_pod_list_default.csv").string(),
                             core::GpuCatalog::Builtin());
  ASSERT_TRUE(w.ok()) << w.error();
  auto order =
      ReadOrderFile((*dir / "orders" / "openb_pod_list_default.seed42.txt").string(), w.value());
  ASSERT_TRUE(order.ok()) << order.error();
  auto alloc = ReadPublishedCurves((*dir / "published-allocation.csv").string());
  ASSERT_TRUE(alloc.ok()) << alloc.error();
  auto frag = ReadPublishedCurves((*dir / "published-frag-ratio.csv").string());
  ASSERT_TRUE(frag.ok()) << frag.error();
  auto find = [](const std::vector<PublishedCurve>& curves, const std::string& policy) {
    for (const auto& c : curves) {
      if (c.workload == "openb_pod_list_default" && c.policy == policy && c.seed == 42) return &c;
    }
    return static_cast<const PublishedCurve*>(nullptr);
  };
  const sched::WorkloadProfile profile = ProfileOf(w.value());
  EXPECT_EQ(profile.types().size(), 35u);  // as the experiment description says
  for (const char* name : {"bestfit", "fgd"}) {
    SCOPED_TRACE(name);
    const PublishedCurve* published = find(alloc.value(), name);
    const PublishedCurve* published_frag = find(frag.value(), name);
    ASSERT_NE(published, nullptr);
    ASSERT_NE(published_frag, nullptr);
    ASSERT_EQ(published->values.size(), 131u);
    auto policy = sched::MakePlacementPolicy(name);
    policy->Prepare(profile);
    core::Rng rng(42);
    const PlacementCurves ours =
        SummarizeCurves(RunPlacement(w.value(), order.value(), *policy, profile, rng), 130);
    for (int x = 0; x <= 130; ++x) {
      EXPECT_EQ(ours.allocation[x], published->values[x]) << "allocation at " << x << "%";
      EXPECT_NEAR(ours.frag_ratio[x], published_frag->values[x], 1e-9)
          << "frag ratio at " << x << "%";
    }
  }
}

}  // namespace
}  // namespace gpufleet::sim
