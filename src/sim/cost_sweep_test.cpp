#include "sim/cost_sweep.h"

#include <gtest/gtest.h>

namespace gpufleet::sim {
namespace {

TEST(CostSweepTest, StaticClusterPaysEveryNodeOverTheMakespan) {
  TimeSimResult r;
  r.jobs = {{1, 0, 0, 7200, 8, 7200, "a"}};
  r.makespan_s = 7200;
  r.busy_gpu_s = 8 * 7200;
  const CostPoint p = StaticCostPoint("static-4", 4, 8, 10.0, r, 0.1);
  EXPECT_DOUBLE_EQ(p.cost_usd, 4 * 10.0 * 2);
  EXPECT_DOUBLE_EQ(p.gpu_h_bought, 4 * 8 * 2);
  EXPECT_DOUBLE_EQ(p.gpu_h_used, 16);
}

TEST(CostSweepTest, FleetPointTakesWhatTheFleetBought) {
  TimeSimResult r;
  r.jobs = {{1, 0, 100, 1100, 8, 1000, "a"}};
  r.makespan_s = 1100;
  r.busy_gpu_s = 8000;
  r.fleet.enabled = true;
  r.fleet.cost_usd = 12.5;
  r.fleet.gpu_s_bought = 8 * 3600;
  r.fleet.peak_nodes = 1;
  const CostPoint p = FleetCostPoint("fleet", r, 0.1);
  EXPECT_DOUBLE_EQ(p.cost_usd, 12.5);
  EXPECT_DOUBLE_EQ(p.gpu_h_bought, 8);
  const std::string table = CostTable({p});
  EXPECT_NE(table.find("| fleet | 1 | 12 |"), std::string::npos) << table;
  const std::string svg = CostPlot({StaticCostPoint("static-4", 4, 8, 10.0, r, 0.1), p}, "t");
  EXPECT_NE(svg.find("<circle"), std::string::npos);
  EXPECT_NE(svg.find(">4</text>"), std::string::npos);  // the static point's size label
  EXPECT_NE(CostCsv({p}).find("fleet,1,1,12.50,"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::sim
