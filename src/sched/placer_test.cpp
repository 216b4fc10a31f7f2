#include "sched/placer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/policy_registry.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using core::ClusterSnapshot;
using core::JobSpec;
using test::Job;
using test::Node;

// A policy that scores every node alike, so only the tie-break decides.
class ConstantPolicy final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "constant"; }
  double Score(const core::NodeState&, const JobSpec&, core::Rng&) const override { return 1; }
  core::GpuMask PickGpus(const core::NodeState& node, const JobSpec& job,
                         core::Rng&) const override {
    return DefaultGpuPick(node, job);
  }
};

TEST(PlacerTest, EqualScoresGoToTheSmallestRank) {
  ClusterSnapshot c(test::Replicate(Node().Gpus(2), 4));
  ConstantPolicy policy;
  core::Rng rng(0);
  EXPECT_EQ(Placer(c, policy, {}).Choose(Job(), rng)->node, 0);  // no ranks: index order
  const std::vector<uint32_t> rank = {2, 3, 0, 1};
  Placer placer(c, policy, rank);
  EXPECT_EQ(placer.Choose(Job(), rng)->node, 2);
  // A node that does not fit is passed over, even with the best rank.
  c.Allocate(2, Job().Gpus(2), 0b11);
  EXPECT_EQ(placer.Choose(Job().Gpus(1), rng)->node, 3);
}

TEST(PlacerTest, HigherScoreBeatsBetterRank) {
  ClusterSnapshot c({Node("big").Gpus(8), Node("small").Gpus(2)});
  auto bestfit = MakePlacementPolicy("bestfit");
  core::Rng rng(0);
  const std::vector<uint32_t> big_first = {0, 1};
  auto placed = Placer(c, *bestfit, big_first).Choose(Job().Gpus(1), rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->node, 1);
  EXPECT_EQ(placed->score, 81);
}

TEST(PlacerTest, ReportsNothingWhenNoNodeFits) {
  ClusterSnapshot c({Node().Gpus(1)});
  ConstantPolicy policy;
  core::Rng rng(0);
  Placer placer(c, policy, {});
  EXPECT_FALSE(placer.Choose(Job().Gpus(2), rng).has_value());
  ClusterSnapshot empty;
  EXPECT_FALSE(Placer(empty, policy, {}).Choose(Job(), rng).has_value());
}

// Random shapes of jobs, drawn from a small set so that the cache sees repeats.
JobSpec RandomJob(core::Rng& rng) {
  static const std::vector<JobSpec> shapes = {
      Job().Cpu(0).Memory(0),
      Job().Cpu(2000),
      Job().Cpu(1000).Share(100),
      Job().Cpu(1000).Share(250),
      Job().Cpu(4000).Share(500),
      Job().Cpu(1000).Share(800).Models("T4"),
      Job().Cpu(8000).Gpus(1),
      Job().Cpu(8000).Gpus(2),
      Job().Cpu(16000).Gpus(4),
      Job().Cpu(2000).Gpus(1).Models("V100M16|V100M32"),
      Job().Cpu(32000).Memory(200000).Gpus(8),
  };
  return shapes[rng.Below(shapes.size())];
}

std::vector<core::NodeSpec> CacheTestNodes() {
  std::vector<core::NodeSpec> nodes;
  for (int i = 0; i < 6; ++i) {
    nodes.push_back(Node("g2-" + std::to_string(i)).Cpu(96000).Memory(393216).Gpus(8, "G2"));
    nodes.push_back(Node("t4-" + std::to_string(i)).Cpu(32000).Memory(65536).Gpus(2, "T4"));
    nodes.push_back(Node("v100-" + std::to_string(i)).Cpu(48000).Memory(131072).Gpus(4, "V100M32"));
  }
  nodes.push_back(Node("cpu").Cpu(64000));
  return nodes;
}

// The cache must be invisible: a long run of choices, allocations and releases gives the same
// decisions as a Placer made afresh (empty cache) for every choice.
TEST(PlacerTest, CachedScoresMatchAFreshPlacerEveryTime) {
  const std::vector<uint32_t> rank = [] {
    std::vector<uint32_t> r(19);
    core::Rng rng(5);
    for (uint32_t i = 0; i < r.size(); ++i) r[i] = i;
    for (size_t i = r.size() - 1; i > 0; --i) std::swap(r[i], r[rng.Below(i + 1)]);
    return r;
  }();
  for (const auto& info : PlacementPolicies()) {
    auto policy = info.make();
    if (!policy->ScoreIsPure()) continue;  // nothing is cached for it
    std::vector<JobSpec> sample;
    core::Rng sample_rng(9);
    for (int i = 0; i < 200; ++i) sample.push_back(RandomJob(sample_rng));
    policy->Prepare(WorkloadProfile::Build(sample, {}));
    SCOPED_TRACE(std::string(info.name));

    ClusterSnapshot cluster(CacheTestNodes());
    Placer cached(cluster, *policy, rank);
    core::Rng rng(77), rng_cached(1), rng_fresh(1);
    struct Running {
      int node;
      JobSpec job;
      core::GpuMask gpus;
    };
    std::vector<Running> running;
    int64_t fresh_scores = 0;
    for (int step = 0; step < 1500; ++step) {
      if (!running.empty() && rng.Below(4) == 0) {  // a job leaves
        const size_t k = rng.Below(running.size());
        cluster.Release(running[k].node, running[k].job, running[k].gpus);
        running[k] = running.back();
        running.pop_back();
        continue;
      }
      const JobSpec job = RandomJob(rng);
      Placer fresh(cluster, *policy, rank);
      auto a = cached.Choose(job, rng_cached);
      auto b = fresh.Choose(job, rng_fresh);
      fresh_scores += fresh.scores_computed();
      ASSERT_EQ(a.has_value(), b.has_value()) << "step " << step;
      if (!a) continue;
      ASSERT_EQ(a->node, b->node) << "step " << step;
      ASSERT_EQ(a->gpus, b->gpus) << "step " << step;
      ASSERT_EQ(a->score, b->score) << "step " << step;
      cluster.Allocate(a->node, job, a->gpus);
      running.push_back({a->node, job, a->gpus});
    }
    EXPECT_LT(cached.scores_computed(), fresh_scores / 2) << "the cache should save work";
  }
}

using PlacerDeathTest = ::testing::Test;

TEST_F(PlacerDeathTest, RankMustBeAPermutation) {
  ClusterSnapshot c(test::Replicate(Node(), 3));
  ConstantPolicy policy;
  const std::vector<uint32_t> duplicate = {0, 0, 1}, out_of_range = {0, 1, 3}, short_rank = {0, 1};
  EXPECT_DEATH(Placer(c, policy, duplicate), "invariant violated");
  EXPECT_DEATH(Placer(c, policy, out_of_range), "invariant violated");
  EXPECT_DEATH(Placer(c, policy, short_rank), "invariant violated");
}

TEST(DefaultGpuPickTest, SharingTakesTheTightestGpuOthersTheLowest) {
  ClusterSnapshot c({Node().Gpus(4)});
  c.Allocate(0, Job().Share(200), 0b0010);  // free [1000, 800, 1000, 1000]
  c.Allocate(0, Job().Share(500), 0b0100);  // free [1000, 800, 500, 1000]
  c.Allocate(0, Job().Share(500), 0b1000);  // free [1000, 800, 500, 500]
  const core::NodeState& s = c.state(0);
  EXPECT_EQ(DefaultGpuPick(s, Job().Share(500)), 0b0100u);  // tightest; lowest of the tie
  EXPECT_EQ(DefaultGpuPick(s, Job().Share(600)), 0b0010u);
  EXPECT_EQ(DefaultGpuPick(s, Job().Gpus(1)), 0b0001u);
  EXPECT_EQ(DefaultGpuPick(s, Job()), 0u);
  EXPECT_EQ(LowestIndexGpus(s, 2, 500), 0b0011u);
  EXPECT_EQ(LowestIndexGpus(s, 4, 500), 0b1111u);
}

}  // namespace
}  // namespace gpufleet::sched
