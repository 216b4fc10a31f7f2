#include "sim/placement_bound.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "core/gpu_catalog.h"
#include "core/rng.h"
#include "sched/policy_registry.h"
#include "sim/openb_test_workload.h"
#include "sim/synthetic_openb.h"
#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

using test::Job;
using test::Node;

TEST(DualFeasibleTest, CountsItemsOverHalfAsWholeAndDropsSmallOnes) {
  EXPECT_DOUBLE_EQ(DualFeasible(1, 0.6), 1.0);
  EXPECT_DOUBLE_EQ(DualFeasible(1, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(DualFeasible(1, 0.4), 0.0);
  EXPECT_DOUBLE_EQ(DualFeasible(2, 0.4), 0.5);  // floor(1.2) / 2
  EXPECT_DOUBLE_EQ(DualFeasible(2, 0.3), 0.0);
  EXPECT_DOUBLE_EQ(DualFeasible(2, 1.0 / 3), 1.0 / 3);
  EXPECT_DOUBLE_EQ(DualFeasible(3, 1.0), 1.0);
}

TEST(DualFeasibleTest, ItemsThatFitABinStillFitAfterTheFunction) {
  // Every split of a bin into pieces of whole hundredths: their u_k sum stays within 1.
  for (int k = 1; k <= 3; ++k) {
    for (int a = 0; a <= 100; ++a) {
      for (int b = 0; a + b <= 100; b += 3) {
        const int c = 100 - a - b;
        const double sum =
            DualFeasible(k, a / 100.0) + DualFeasible(k, b / 100.0) + DualFeasible(k, c / 100.0);
        EXPECT_LE(sum, 1.0 + 1e-12) << "k=" << k << " " << a << "+" << b << "+" << c;
      }
    }
  }
}

TEST(PlacementBoundTest, GroupsNodesAndPodsAndLeavesOutCpuOnlyPodsAndMisfits) {
  const OpenbWorkload w =
      MakeWorkload({Node("a").Cpu(8000).Gpus(2, "T4"), Node("b").Cpu(8000).Gpus(2, "T4"),
                    Node("c").Cpu(32000).Gpus(4, "G2")},
                   {Job("share").Cpu(1000).Share(500), Job("four").Cpu(4000).Gpus(4),
                    Job("t4only").Cpu(1000).Gpus(1).Models("T4"), Job("cpu").Cpu(1000)});
  const std::vector<int> pods = {0, 0, 1, 2, 3};
  const PlacementBoundModel model = BuildPlacementBound(w, pods);
  EXPECT_EQ(model.node_classes, 2);
  EXPECT_EQ(model.pod_types, 3);  // the CPU-only pod is left out
  EXPECT_DOUBLE_EQ(model.capacity_gpus, 8);
  EXPECT_EQ(model.arrived_gpu_milli, 500 + 500 + 4000 + 1000);
  // "share" fits both classes, "four" only the 4-GPU node, "t4only" only the T4 nodes.
  ASSERT_EQ(model.lp.objective.size(), 4u);
  EXPECT_EQ(model.ColumnOf(w.nodes[0], w.pods[1].job), -1);
  EXPECT_EQ(model.ColumnOf(w.nodes[2], w.pods[2].job), -1);
  EXPECT_EQ(model.ColumnOf(w.nodes[0], w.pods[3].job), -1);
  const int share_on_t4 = model.ColumnOf(w.nodes[1], w.pods[0].job);
  ASSERT_GE(share_on_t4, 0);
  EXPECT_DOUBLE_EQ(model.lp.objective[share_on_t4], 0.5);
  EXPECT_DOUBLE_EQ(model.lp.column_upper[share_on_t4], 2);  // two arrived
}

// Every real placement is a feasible point of the program: this is what makes its optimum an upper
// bound. Places a synthetic openb-like workload with several policies and checks every row.
TEST(PlacementBoundTest, EveryPoliciesPlacementSatisfiesTheProgram) {
  const OpenbWorkload w = GenerateSyntheticOpenb(core::GpuCatalog::Builtin(), 60, 1.0, 11);
  const PlacementOrder order = GenerateOrder(w, 5, 1.3);
  const std::vector<int> arrived = PodsArrivedBy(w, order, 130);
  ASSERT_FALSE(arrived.empty());
  const PlacementBoundModel model = BuildPlacementBound(w, arrived);
  const sched::WorkloadProfile profile = ProfileOf(w);
  for (const char* name : {"fgd", "fgd-balance", "bestfit", "gpupacking"}) {
    auto policy = sched::MakePlacementPolicy(name);
    ASSERT_NE(policy, nullptr);
    PreparePlacementPolicy(*policy, profile, w);
    core::Rng rng(1);
    const PlacementRun run = RunPlacement(w, order, *policy, profile, rng);
    std::vector<double> x(model.lp.objective.size(), 0.0);
    int64_t placed_milli = 0;
    for (size_t i = 0; i < arrived.size(); ++i) {
      if (run.node[i] < 0) continue;
      const core::JobSpec& job = w.pods[arrived[i]].job;
      if (!job.UsesGpu()) continue;
      const int column = model.ColumnOf(w.nodes[run.node[i]], job);
      ASSERT_GE(column, 0) << name << ": pod " << i << " placed where the program has no column";
      x[column] += 1;
      placed_milli += job.GpuDemandMilli();
    }
    ASSERT_GT(placed_milli, 0);
    for (size_t j = 0; j < x.size(); ++j) EXPECT_LE(x[j], model.lp.column_upper[j]);
    for (const auto& row : model.lp.rows) {
      double sum = 0;
      for (const auto& [column, coefficient] : row.terms) sum += coefficient * x[column];
      EXPECT_LE(sum, row.upper + 1e-9) << name << ": row " << row.name;
    }
    const double objective =
        std::inner_product(x.begin(), x.end(), model.lp.objective.begin(), 0.0);
    EXPECT_NEAR(objective, static_cast<double>(placed_milli) / core::kGpuMilli, 1e-9);
  }
}

TEST(PlacementBoundTest, ArrivedPodsStopAtTheEndOfTheBucket) {
  // One 10-GPU cluster; each pod asks one GPU, so pod i brings demand to 10*(i+1)%.
  std::vector<core::JobSpec> jobs;
  for (int i = 0; i < 20; ++i) jobs.push_back(Job("p" + std::to_string(i)).Cpu(100).Gpus(1));
  const OpenbWorkload w =
      MakeWorkload({Node("n").Cpu(64000).Gpus(8), Node("m").Cpu(64000).Gpus(2)}, std::move(jobs));
  PlacementOrder order;
  for (int i = 0; i < 13; ++i) order.pods.push_back(i);
  EXPECT_EQ(PodsArrivedBy(w, order, 130).size(), 13u);
  EXPECT_EQ(PodsArrivedBy(w, order, 50).size(), 5u);
  // No event falls in 55%: the curves then use its neighbours, so pods up to 56% count.
  EXPECT_EQ(PodsArrivedBy(w, order, 55).size(), 5u);
}

}  // namespace
}  // namespace gpufleet::sim
