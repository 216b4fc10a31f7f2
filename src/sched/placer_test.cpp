#include "sched/placer.h"

#include <gtest/gtest.h>

#include <optional>
#include <span>
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

// The jobs a test's run has placed, so that some can leave again.
class PlacedJobs {
 public:
  void Add(int node, const JobSpec& job, core::GpuMask gpus) { jobs_.push_back({node, job, gpus}); }
  // One time in `one_in` (when any job is placed), releases a random one; true when one left.
  bool MaybeRelease(ClusterSnapshot& cluster, core::Rng& rng, uint64_t one_in) {
    if (jobs_.empty() || rng.Below(one_in) != 0) return false;
    const size_t k = rng.Below(jobs_.size());
    cluster.Release(jobs_[k].node, jobs_[k].job, jobs_[k].gpus);
    jobs_[k] = jobs_.back();
    jobs_.pop_back();
    return true;
  }

 private:
  struct Placed {
    int node;
    JobSpec job;
    core::GpuMask gpus;
  };
  std::vector<Placed> jobs_;
};

// Whether two placers made the same choice: both none, or the same node, GPUs and score.
::testing::AssertionResult SameChoice(const std::optional<Placement>& a,
                                      const std::optional<Placement>& b) {
  if (a.has_value() != b.has_value()) {
    return ::testing::AssertionFailure() << (a ? "only the first" : "only the second") << " placed";
  }
  if (a && (a->node != b->node || a->gpus != b->gpus || a->score != b->score)) {
    return ::testing::AssertionFailure()
           << "node " << a->node << " vs " << b->node << ", gpus " << a->gpus << " vs " << b->gpus
           << ", score " << a->score << " vs " << b->score;
  }
  return ::testing::AssertionSuccess();
}

// A random permutation of 0..n-1, for tie-break ranks.
std::vector<uint32_t> ShuffledRanks(size_t n, uint64_t seed) {
  std::vector<uint32_t> r(n);
  core::Rng rng(seed);
  for (uint32_t i = 0; i < r.size(); ++i) r[i] = i;
  for (size_t i = r.size() - 1; i > 0; --i) std::swap(r[i], r[rng.Below(i + 1)]);
  return r;
}

// The cache must be invisible: a long run of choices, allocations and releases gives the same
// decisions as a Placer made afresh (empty cache) for every choice.
TEST(PlacerTest, CachedScoresMatchAFreshPlacerEveryTime) {
  const std::vector<uint32_t> rank = ShuffledRanks(19, 5);
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
    PlacedJobs running;
    int64_t fresh_scores = 0;
    for (int step = 0; step < 1500; ++step) {
      if (running.MaybeRelease(cluster, rng, 4)) continue;  // a job leaves
      const JobSpec job = RandomJob(rng);
      Placer fresh(cluster, *policy, rank);
      auto a = cached.Choose(job, rng_cached);
      auto b = fresh.Choose(job, rng_fresh);
      fresh_scores += fresh.scores_computed();
      ASSERT_TRUE(SameChoice(a, b)) << "step " << step;
      if (!a) continue;
      cluster.Allocate(a->node, job, a->gpus);
      running.Add(a->node, job, a->gpus);
    }
    EXPECT_LT(cached.scores_computed(), fresh_scores / 2) << "the cache should save work";
  }
}

// The highest score over every node that fits, the smaller rank among equals: what `Choose`
// must return, computed the obvious way.
std::optional<Placement> BruteForceChoice(const ClusterSnapshot& cluster,
                                          const PlacementPolicy& policy, const JobSpec& job,
                                          std::span<const uint32_t> rank, core::Rng& rng) {
  std::optional<Placement> best;
  for (int node = 0; node < cluster.size(); ++node) {
    if (!cluster.state(node).Fits(job)) continue;
    const double score = policy.Score(cluster.state(node), job, rng);
    if (!best || score > best->score || (score == best->score && rank[node] < rank[best->node])) {
      best = Placement{node, 0, score};
    }
  }
  if (best) best->gpus = policy.PickGpus(cluster.state(best->node), job, rng);
  return best;
}

// The incremental ranking against that scan, on a cluster big enough that each shape's ranking
// holds thousands of nodes per shape, with a rare shape that sees many changes between its
// choices, and a Placer made over a snapshot that had already changed (its journal not empty).
// Declares whole scores 0..100 (so it is ranked in buckets) but now and then scores a node
// with a fraction or beyond 100, which turns that shape's buckets into a heap mid-run.
class MostlyWholePolicy final : public PlacementPolicy {
 public:
  std::string_view Name() const override { return "mostly-whole"; }
  int ScoreLevels() const override { return 101; }
  double Score(const core::NodeState& node, const JobSpec& job, core::Rng&) const override {
    const int64_t cores = node.cpu_free / 1000;
    const double whole = static_cast<double>((cores + node.gpu_free_total / 100) % 101);
    if (job.cpu_milli > 2000 && cores % 13 == 0) return whole + 0.5;
    if (job.cpu_milli > 2000 && cores % 17 == 0) return 250;
    return whole;
  }
};

// The incremental ranking against a plain scan of every node, on a large cluster, for every
// deterministic policy: best fit and the others ranked in buckets (whole scores 0..100), fgd-
// balance in a heap, and a policy whose buckets turn into heaps mid-run.
void ExpectScanDecisions(const PlacementPolicy& policy) {
  std::vector<core::NodeSpec> nodes;
  for (int i = 0; i < 40; ++i) {
    for (const core::NodeSpec& n : CacheTestNodes()) nodes.push_back(n);
  }
  const std::vector<uint32_t> rank = ShuffledRanks(nodes.size(), 3);
  ClusterSnapshot cluster(nodes);
  cluster.Allocate(3, Job().Cpu(1000).Gpus(2), 0b11);  // history before the Placer
  Placer cached(cluster, policy, rank);
  core::Rng rng(11), rng_cached(2), rng_fresh(2);
  PlacedJobs running;
  const JobSpec rare = Job().Cpu(32000).Memory(200000).Gpus(8);
  for (int step = 0; step < 6000; ++step) {
    if (running.MaybeRelease(cluster, rng, 3)) continue;
    const JobSpec job = step % 500 == 0 ? rare : RandomJob(rng);
    auto a = cached.Choose(job, rng_cached);
    auto b = BruteForceChoice(cluster, policy, job, rank, rng_fresh);
    ASSERT_TRUE(SameChoice(a, b)) << "step " << step;
    if (!a) continue;
    cluster.Allocate(a->node, job, a->gpus);
    running.Add(a->node, job, a->gpus);
  }
}

TEST(PlacerTest, IncrementalRankingMatchesABruteForceScanOnALargeCluster) {
  for (const auto& info : PlacementPolicies()) {
    auto policy = info.make();
    if (!policy->ScoreIsPure()) continue;
    SCOPED_TRACE(std::string(info.name));
    std::vector<JobSpec> sample;
    core::Rng sample_rng(9);
    for (int i = 0; i < 200; ++i) sample.push_back(RandomJob(sample_rng));
    policy->Prepare(WorkloadProfile::Build(sample, {}));
    ExpectScanDecisions(*policy);
  }
  SCOPED_TRACE("mostly-whole");
  ExpectScanDecisions(MostlyWholePolicy());
}

TEST(PlacerTest, LooksAgainOnlyAtNodesChangedSinceTheShapeLastLookedEachOnce) {
  ClusterSnapshot c(test::Replicate(Node().Gpus(8), 6));
  auto bestfit = MakePlacementPolicy("bestfit");
  core::Rng rng(0);
  Placer placer(c, *bestfit, {});
  const JobSpec one = Job().Gpus(1);
  const JobSpec two = Job().Gpus(2);
  ASSERT_TRUE(placer.Choose(one, rng));
  ASSERT_TRUE(placer.Choose(two, rng));
  EXPECT_EQ(placer.nodes_reranked(), 0);  // a new shape's first look is not a re-rank
  // Three changes on node 1 and one on node 4 since either shape looked.
  c.Allocate(1, one, 0b1);
  c.Allocate(1, one, 0b10);
  c.Allocate(1, two, 0b1100);
  c.Allocate(4, one, 0b1);
  ASSERT_TRUE(placer.Choose(one, rng));
  EXPECT_EQ(placer.nodes_reranked(), 2);  // nodes 1 and 4, once each
  ASSERT_TRUE(placer.Choose(one, rng));
  EXPECT_EQ(placer.nodes_reranked(), 2);  // nothing changed since
  c.Release(4, one, 0b1);
  ASSERT_TRUE(placer.Choose(two, rng));
  EXPECT_EQ(placer.nodes_reranked(), 4);  // shape two last looked before all five changes
  ASSERT_TRUE(placer.Choose(one, rng));
  EXPECT_EQ(placer.nodes_reranked(), 5);  // shape one: node 4 only
}

TEST(ScoreMemoTest, FindsWhatWasInsertedThroughGrowthAndCollisions) {
  ScoreMemo memo;
  EXPECT_EQ(memo.Find(7), nullptr);
  // Keys that differ only in their high half (shape ids) must not pile into one probe chain.
  for (uint64_t shape = 0; shape < 300; ++shape) {
    for (uint64_t state = 0; state < 50; ++state) {
      memo.Insert(shape << 32 | state, static_cast<double>(shape * 1000 + state));
    }
  }
  EXPECT_EQ(memo.size(), 15000u);
  for (uint64_t shape = 0; shape < 300; ++shape) {
    for (uint64_t state = 0; state < 50; ++state) {
      const double* found = memo.Find(shape << 32 | state);
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(*found, static_cast<double>(shape * 1000 + state));
    }
  }
  EXPECT_EQ(memo.Find(uint64_t{300} << 32), nullptr);
  memo.Clear();
  EXPECT_EQ(memo.size(), 0u);
  EXPECT_EQ(memo.Find(0), nullptr);
  memo.Insert(0, -1.5);
  ASSERT_NE(memo.Find(0), nullptr);
  EXPECT_EQ(*memo.Find(0), -1.5);
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
