#include "sim/ordered_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

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

// The rows `x` breaks, by name ("" when it is a point of the program).
std::string BrokenRows(const LinearProgram& lp, const std::vector<double>& x) {
  std::string broken;
  for (size_t j = 0; j < x.size(); ++j) {
    if (x[j] < -1e-9 || x[j] > lp.column_upper[j] + 1e-9) broken += lp.column_names[j] + " ";
    if (lp.integer[j] && std::abs(x[j] - std::round(x[j])) > 1e-9) {
      broken += lp.column_names[j] + "(not whole) ";
    }
  }
  for (const auto& row : lp.rows) {
    double sum = 0;
    for (const auto& [column, coefficient] : row.terms) sum += coefficient * x[column];
    if (sum > row.upper + 1e-9) broken += row.name + " ";
  }
  return broken;
}

double Objective(const LinearProgram& lp, const std::vector<double>& x) {
  return std::inner_product(x.begin(), x.end(), lp.objective.begin(), 0.0);
}

TEST(OrderedSubsampleTest, DrawsNodesAndPodsThatFitUpToTheDemandLimit) {
  const OpenbWorkload w = GenerateSyntheticOpenb(core::GpuCatalog::Builtin(), 60, 1.0, 11);
  core::Rng rng(3);
  const OrderedInstance instance = OrderedSubsample(w, 5, 1.3, rng);
  ASSERT_EQ(instance.workload.nodes.size(), 5u);
  int64_t capacity = 0, demand = 0;
  for (const auto& n : instance.workload.nodes) capacity += int64_t{n.num_gpus} * core::kGpuMilli;
  ASSERT_FALSE(instance.workload.pods.empty());
  for (const auto& pod : instance.workload.pods) demand += pod.job.GpuDemandMilli();
  EXPECT_LE(static_cast<double>(demand), 1.3 * static_cast<double>(capacity));
  ASSERT_EQ(instance.order.pods.size(), instance.workload.pods.size());
  for (size_t i = 0; i < instance.order.pods.size(); ++i) EXPECT_EQ(instance.order.pods[i], i);
  EXPECT_EQ(instance.order.node_rank.size(), 5u);
}

// The rule that makes this bound tighter than the order-free one: a pod that fits when it
// arrives is placed. One GPU; a half-GPU pod arrives before a whole-GPU pod. Leaving the first
// out would allocate the whole GPU, but only placing it (0.5 GPU) is allowed.
TEST(OrderedPlacementProgramTest, APodThatFitsWhenItArrivesCannotBeLeftOut) {
  const OpenbWorkload w =
      MakeWorkload({Node("a").Cpu(8000).Gpus(1, "T4")},
                   {Job("half").Cpu(1000).Share(500), Job("whole").Cpu(1000).Gpus(1)});
  const OrderedPlacementProgram program = BuildOrderedPlacementProgram(w);
  const LinearProgram& lp = program.lp;
  ASSERT_GE(program.place[0][0], 0);
  ASSERT_GE(program.place[1][0], 0);
  ASSERT_EQ(program.gpu[1][0].size(), 1u);

  std::vector<double> skip_first(lp.objective.size(), 0.0);
  skip_first[program.place[1][0]] = 1;
  skip_first[program.gpu[1][0][0]] = 1;
  EXPECT_DOUBLE_EQ(Objective(lp, skip_first), 1.0);
  EXPECT_NE(BrokenRows(lp, skip_first).find("p0.n0.must"), std::string::npos)
      << BrokenRows(lp, skip_first);

  std::vector<double> place_first(lp.objective.size(), 0.0);
  place_first[program.place[0][0]] = 1;
  place_first[program.gpu[0][0][0]] = 1;
  place_first[program.short_gpu[1][0]] = 1;  // the whole-GPU pod finds its GPU in use
  place_first[program.blocked[1][0][0]] = 1;
  EXPECT_EQ(BrokenRows(lp, place_first), "");
  EXPECT_DOUBLE_EQ(Objective(lp, place_first), 0.5);

  // Claiming the GPU blocked when it is free breaks its own row.
  std::vector<double> fake = skip_first;
  fake[program.short_gpu[1][0]] = 1;
  fake[program.blocked[1][0][0]] = 1;
  EXPECT_NE(BrokenRows(lp, fake).find("p1.n0.g0.blocked"), std::string::npos)
      << BrokenRows(lp, fake);
}

// The thresholds are exact: a pod that fits with nothing to spare must be placed, one a milli-GPU
// or a milli-CPU larger may be left out. Pod 0 leaves 500 milli of the GPU and 4000 milli-CPU.
TEST(OrderedPlacementProgramTest, APodThatFitsExactlyMustBePlacedAndOneUnitMoreMayBeLeftOut) {
  struct Case {
    const char* what;
    core::JobSpec second;
    bool may_leave_out;
  };
  const Case cases[] = {
      {"500 of the 500 milli-GPU left", Job("b").Cpu(1000).Share(500), false},
      {"501 of the 500 milli-GPU left", Job("b").Cpu(1000).Share(501), true},
      {"4000 of the 4000 milli-CPU left", Job("b").Cpu(4000).Share(100), false},
      {"4001 of the 4000 milli-CPU left", Job("b").Cpu(4001).Share(100), true},
  };
  for (const Case& c : cases) {
    const OpenbWorkload w = MakeWorkload({Node("a").Cpu(8000).Memory(65536).Gpus(1, "T4")},
                                         {Job("a").Cpu(4000).Memory(1024).Share(500), c.second});
    const OrderedPlacementProgram program = BuildOrderedPlacementProgram(w);
    const LinearProgram& lp = program.lp;
    // Pod 0 placed, pod 1 left out, every reason that is true claimed at full strength.
    std::vector<double> x(lp.objective.size(), 0.0);
    x[program.place[0][0]] = 1;
    x[program.gpu[0][0][0]] = 1;
    const bool gpu_short = c.second.gpu_milli > 500;
    const bool cpu_short = c.second.cpu_milli > 4000;
    ASSERT_GE(program.short_gpu[1][0], 0);
    ASSERT_GE(program.short_cpu[1][0], 0);
    x[program.short_gpu[1][0]] = gpu_short ? 1 : 0;
    x[program.blocked[1][0][0]] = std::min(1.0, 500.0 / (1001 - c.second.gpu_milli));
    x[program.short_cpu[1][0]] = cpu_short ? 1 : 0;
    EXPECT_EQ(BrokenRows(lp, x).empty(), c.may_leave_out) << c.what << ": " << BrokenRows(lp, x);
    if (c.may_leave_out) continue;
    // Claiming a shortage that is not there breaks that reason's row.
    std::vector<double> claim_gpu = x;
    claim_gpu[program.short_gpu[1][0]] = 1;
    claim_gpu[program.blocked[1][0][0]] = 1;
    EXPECT_NE(BrokenRows(lp, claim_gpu).find("p1.n0.g0.blocked"), std::string::npos) << c.what;
    std::vector<double> claim_cpu = x;
    claim_cpu[program.short_cpu[1][0]] = 1;
    EXPECT_NE(BrokenRows(lp, claim_cpu).find("p1.n0.short-cpu"), std::string::npos) << c.what;
  }
}

// Every real run is a point of the program (renamed into first-use order), with the objective it
// allocated: this is what makes the program's optimum an upper bound on every policy.
TEST(OrderedPlacementProgramTest, EveryPoliciesRunIsAPointOfTheProgram) {
  const OpenbWorkload w = GenerateSyntheticOpenb(core::GpuCatalog::Builtin(), 60, 1.0, 11);
  int runs_that_dropped = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    core::Rng draw(seed);
    const OrderedInstance instance = OrderedSubsample(w, 4, 1.3, draw);
    const OrderedPlacementProgram program = BuildOrderedPlacementProgram(instance.workload);
    ASSERT_GT(program.binary_columns, 0);
    const sched::WorkloadProfile profile = ProfileOf(instance.workload);
    for (const char* name : {"fgd", "fgd-balance", "bestfit", "gpupacking", "random"}) {
      auto policy = sched::MakePlacementPolicy(name);
      ASSERT_NE(policy, nullptr) << name;
      PreparePlacementPolicy(*policy, profile, instance.workload);
      core::Rng rng(seed);
      const PlacementRun run =
          RunPlacement(instance.workload, instance.order, *policy, profile, rng);
      runs_that_dropped += run.failed > 0 ? 1 : 0;
      const std::vector<double> x = OrderedSolutionOf(program, instance.workload, run);
      EXPECT_EQ(BrokenRows(program.lp, x), "") << name << " seed " << seed;
      EXPECT_NEAR(Objective(program.lp, x),
                  static_cast<double>(run.used_milli.back()) / core::kGpuMilli, 1e-9)
          << name << " seed " << seed;
    }
  }
  EXPECT_GT(runs_that_dropped, 0);  // some runs left pods out, so their reasons were checked too
}

}  // namespace
}  // namespace gpufleet::sim
