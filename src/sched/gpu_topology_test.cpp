#include "sched/gpu_topology.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "sched/placer.h"
#include "sched/policy_registry.h"
#include "testing/builders.h"
#include "testing/gpu_topologies.h"

namespace gpufleet::sched {
namespace {

using core::GpuMask;

using test::Gpus;
constexpr GpuMask kAll8 = 0xFF;

struct Case {
  std::string name;
  GpuMask free;
  int count;
  GpuMask want;
};

void RunCases(const core::GpuLinks& links, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(PickConnectedGpus(links, c.free, c.count), c.want) << c.name;
  }
}

TEST(GpuTopologyTest, Dgx1V100HybridCubeMesh) {
  RunCases(
      test::Dgx1V100Links(),
      {
          // Both quads are fully NVLinked and alike: the lower one.
          {"idle, 4 GPUs: a fully linked quad", kAll8, 4, Gpus({0, 1, 2, 3})},
          // A double-linked pair inside one quad, under one PCIe switch; never 0-4 or 1-5,
          // which would break both quads.
          {"idle, 2 GPUs: a double link in one quad", kAll8, 2, Gpus({2, 3})},
          // A triangle with two double links (5 NVLinks).
          {"idle, 3 GPUs: the best triangle", kAll8, 3, Gpus({0, 2, 3})},
          // GPU 0 is busy: take the pair from the broken quad, keep {4,5,6,7} whole.
          {"0 busy, 2 GPUs: keeps the whole quad", kAll8 & ~Gpus({0}), 2, Gpus({2, 3})},
          {"0 busy, 3 GPUs: the rest of the broken quad", kAll8 & ~Gpus({0}), 3, Gpus({1, 2, 3})},
          {"0 busy, 4 GPUs: the whole quad", kAll8 & ~Gpus({0}), 4, Gpus({4, 5, 6, 7})},
          // 4 and 7 busy: the pair left in the upper quad (5,6 double linked) is taken
          // rather than breaking {0,1,2,3}.
          {"4,7 busy, 2 GPUs: the broken quad's pair", kAll8 & ~Gpus({4, 7}), 2, Gpus({5, 6})},
          // Only GPUs without a common NVLink are free in one quad: NVLinked pairs first.
          {"0,3,5,6 busy, 2 GPUs: an NVLinked pair", Gpus({1, 2, 4, 7}), 2, Gpus({1, 2})},
      });
}

TEST(GpuTopologyTest, PcieServerWithTwoSockets) {
  RunCases(test::PcieTwoSocketLinks(),
           {
               {"idle, 2 GPUs: one switch", kAll8, 2, Gpus({0, 1})},
               {"idle, 4 GPUs: one socket", kAll8, 4, Gpus({0, 1, 2, 3})},
               // The lowest-index pick would take {1,2}: two switches.
               {"0 busy, 2 GPUs: a whole switch", kAll8 & ~Gpus({0}), 2, Gpus({2, 3})},
               // {1,2,3} and any three of socket 1 are alike; {1,2,3} keeps socket 1 whole.
               {"0 busy, 3 GPUs: the broken socket", kAll8 & ~Gpus({0}), 3, Gpus({1, 2, 3})},
               {"0,2 busy, 2 GPUs: a whole switch", kAll8 & ~Gpus({0, 2}), 2, Gpus({4, 5})},
               // Two GPUs left on socket 0, three on socket 1: stay in one socket.
               {"0,1,2,7 busy... 3 GPUs: one socket", Gpus({3, 4, 5, 6}), 3, Gpus({4, 5, 6})},
               // Nothing in one socket: across sockets, still switch pairs where possible.
               {"3 GPUs over two sockets", Gpus({0, 1, 4}), 3, Gpus({0, 1, 4})},
           });
}

TEST(GpuTopologyTest, NvSwitchAllSetsAreEquallyLinked) {
  const core::GpuLinks links = test::HgxA100NvSwitchLinks();
  // Every 4-set is fully NVLinked with the same bandwidth.
  for (GpuMask m = 0; m <= kAll8; ++m) {
    if (std::popcount(m) != 4) continue;
    const SetConnection c = ConnectionOf(links, m);
    EXPECT_EQ(c.min_class, 6);
    EXPECT_EQ(c.nvlinks, 6 * 12);
  }
  RunCases(links, {
                      // Links tie; what stays free ties too; PCIe locality decides.
                      {"idle, 2 GPUs", kAll8, 2, Gpus({0, 1})},
                      {"idle, 4 GPUs: one socket", kAll8, 4, Gpus({0, 1, 2, 3})},
                      {"0 busy, 2 GPUs: a PCIe pair", kAll8 & ~Gpus({0}), 2, Gpus({2, 3})},
                      {"0,1,4,5 busy, 4 GPUs", Gpus({2, 3, 6, 7}), 4, Gpus({2, 3, 6, 7})},
                      {"0 busy, 3 GPUs: one socket", kAll8 & ~Gpus({0}), 3, Gpus({1, 2, 3})},
                  });
}

// Big NVSwitch nodes: with every set alike, the lookahead is skipped past its budget (32 GPUs)
// or runs (16 GPUs); either way the answer is the lowest set of one PCIe-alike node.
TEST(GpuTopologyTest, LargeNodesStayWithinTheLookaheadBudget) {
  for (int n : {16, 32}) {
    std::vector<std::vector<int>> nv(n, std::vector<int>(n, 18));
    std::vector<std::vector<int>> pcie(n, std::vector<int>(n, 0));
    for (int a = 0; a < n; ++a) {
      nv[a][a] = 0;
      pcie[a][a] = core::kMaxPcieClass;
    }
    const core::GpuLinks links = core::MakeGpuLinks(nv, pcie, n).value();
    const GpuMask all = n == 32 ? ~GpuMask{0} : (GpuMask{1} << n) - 1;
    EXPECT_EQ(PickConnectedGpus(links, all, 4), Gpus({0, 1, 2, 3})) << n;
    EXPECT_EQ(PickConnectedGpus(links, all & ~Gpus({0}), 2), Gpus({1, 2})) << n;
  }
}

TEST(GpuTopologyTest, ConnectionKeysOnDgx1) {
  const core::GpuLinks links = test::Dgx1V100Links();
  const SetConnection quad = ConnectionOf(links, Gpus({0, 1, 2, 3}));
  EXPECT_EQ(quad.min_class, 6);
  EXPECT_EQ(quad.nvlinks, 9);
  const SetConnection cross = ConnectionOf(links, Gpus({0, 1, 4, 5}));
  EXPECT_EQ(cross.min_class, static_cast<int>(core::PcieClass::kCrossSocket));
  EXPECT_EQ(cross.nvlinks, 1 + 2 + 2 + 1);
}

TEST(GpuTopologyTest, WholeFreeGpusSkipsSharedGpus) {
  core::NodeState s;
  s.num_gpus = 4;
  s.gpu_free = {1000, 500, 0, 1000};
  EXPECT_EQ(WholeFreeGpus(s), Gpus({0, 3}));
}

// Placement reads the links; nodes without links are placed exactly as before.
TEST(GpuTopologyTest, PlacerUsesLinksOnlyWhereANodeHasThem) {
  core::ClusterSnapshot c(test::Replicate(test::Node().Gpus(8), 2));
  ASSERT_TRUE(c.SetGpuLinks(1, test::PcieTwoSocketLinks()).ok());
  const auto policy = MakePlacementPolicy("bestfit");
  ASSERT_NE(policy, nullptr);
  core::Rng rng(1);
  // GPU 0 busy on both nodes.
  c.Allocate(0, test::Job().Gpus(1), Gpus({0}));
  c.Allocate(1, test::Job().Gpus(1), Gpus({0}));
  Placer placer(c, *policy, {});
  const std::optional<Placement> p = placer.Choose(test::Job().Gpus(2), rng);
  ASSERT_TRUE(p.has_value());
  const GpuMask want = p->node == 1 ? Gpus({2, 3}) : Gpus({1, 2});
  EXPECT_EQ(p->gpus, want);
  // Node 0 (no links): the policy's own pick, as before.
  core::NodeState s0 = c.state(0);
  EXPECT_EQ(DefaultGpuPick(s0, test::Job().Gpus(2)), Gpus({1, 2}));
  // A 1-GPU job is never steered by links.
  core::ClusterSnapshot one(test::Replicate(test::Node().Gpus(8), 1));
  ASSERT_TRUE(one.SetGpuLinks(0, test::PcieTwoSocketLinks()).ok());
  Placer single(one, *policy, {});
  EXPECT_EQ(single.Choose(test::Job().Gpus(1), rng)->gpus, Gpus({0}));
  EXPECT_EQ(single.Choose(test::Job().Gpus(2), rng)->gpus, Gpus({0, 1}));
}

TEST(GpuTopologyTest, SetGpuLinksChecksTheGpuCount) {
  core::ClusterSnapshot c(test::Replicate(test::Node().Gpus(4), 1));
  const core::Result<bool> r = c.SetGpuLinks(0, test::PcieTwoSocketLinks());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failure().field, "gpu_links");
  EXPECT_EQ(c.gpu_links(0), nullptr);
  // A copy shares the table; an empty table removes it.
  core::ClusterSnapshot eight(test::Replicate(test::Node().Gpus(8), 2));
  ASSERT_TRUE(eight.SetGpuLinks(1, test::Dgx1V100Links()).ok());
  const core::ClusterSnapshot copy = eight;
  ASSERT_NE(copy.gpu_links(1), nullptr);
  EXPECT_EQ(*copy.gpu_links(1), test::Dgx1V100Links());
  EXPECT_EQ(copy.gpu_links(0), nullptr);
  ASSERT_TRUE(eight.SetGpuLinks(1, core::GpuLinks{}).ok());
  EXPECT_EQ(eight.gpu_links(1), nullptr);
}

TEST(GpuTopologyTest, MakeGpuLinksRejectsBadMatrices) {
  using M = std::vector<std::vector<int>>;
  const M pcie = {{5, 4}, {4, 5}};
  EXPECT_TRUE(core::MakeGpuLinks({{0, 2}, {2, 0}}, pcie, 2).ok());
  EXPECT_TRUE(core::MakeGpuLinks({}, {}, 8).ok());
  const auto expect_error = [&](const M& nv, const M& pc, int n, const std::string& want) {
    const core::Result<core::GpuLinks> r = core::MakeGpuLinks(nv, pc, n);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.error().find(want), std::string::npos) << r.error();
  };
  expect_error({{0, 2}, {2, 0}}, pcie, 3, "nvlinks: expected 3 rows");
  expect_error({{0, 2}, {2}}, pcie, 2, "nvlinks[1]: expected 2 columns");
  expect_error({{0, 2}, {1, 0}}, pcie, 2, "nvlinks[0][1] and nvlinks[1][0] differ");
  expect_error({{0, -1}, {-1, 0}}, pcie, 2, "nvlinks[0][1]: -1 is not in 0..64");
  expect_error({{1, 0}, {0, 0}}, pcie, 2, "nvlinks[0][0]");
  expect_error({{0, 0}, {0, 0}}, {{5, 6}, {6, 5}}, 2, "pcie[0][1]: 6 is not in 0..5");
  expect_error({{0, 0}, {0, 0}}, {{4, 4}, {4, 5}}, 2, "pcie[0][0]");
  expect_error({{0, 0}, {0, 0}}, {}, 2, "pcie: expected 2 rows");
}

}  // namespace
}  // namespace gpufleet::sched
