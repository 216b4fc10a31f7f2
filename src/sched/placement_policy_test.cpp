#include "sched/placement_policy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "sched/placer.h"
#include "sched/policy_registry.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using core::ClusterSnapshot;
using core::JobSpec;
using core::NodeState;
using test::Job;
using test::Node;

// A mixed cluster: nodes of different models and sizes, one without GPUs.
std::vector<core::NodeSpec> MixedNodes() {
  return {
      Node("t4").Cpu(8000).Memory(32768).Gpus(2, "T4"),
      Node("g2").Cpu(96000).Memory(393216).Gpus(8, "G2"),
      Node("v100").Cpu(32000).Memory(131072).Gpus(4, "V100M16"),
      Node("cpu").Cpu(64000).Memory(262144),
      Node("p100").Cpu(16000).Memory(16384).Gpus(2, "P100"),
  };
}

// The shapes the suite places, roughly the openb mix.
std::vector<JobSpec> JobMix() {
  return {
      Job("cpu-only").Cpu(4000).Memory(8192),
      Job("share-100").Cpu(1000).Share(100),
      Job("share-250").Cpu(2000).Share(250),
      Job("share-500").Cpu(4000).Share(500),
      Job("share-700-v100").Cpu(2000).Share(700).Models("V100M16|V100M32"),
      Job("gpu-1").Cpu(6000).Gpus(1),
      Job("gpu-2").Cpu(8000).Memory(20000).Gpus(2),
      Job("gpu-4").Cpu(16000).Gpus(4),
      Job("gpu-8").Cpu(32000).Gpus(8),
      Job("t4-1").Cpu(2000).Gpus(1).Models("T4"),
  };
}

WorkloadProfile MixProfile() {
  const std::vector<JobSpec> jobs = JobMix();
  return WorkloadProfile::Build(jobs, {}, 1.0);
}

// Checks a GPU selection against the contract of `PickGpus`.
void ExpectValidPick(const NodeState& node, const JobSpec& job, core::GpuMask mask) {
  if (!job.UsesGpu()) {
    EXPECT_EQ(mask, 0u) << job.name;
    return;
  }
  EXPECT_EQ(std::popcount(mask), job.num_gpu) << job.name;
  EXPECT_EQ(mask >> node.num_gpus, 0u) << job.name << " takes a GPU the node lacks";
  for (int g = 0; g < node.num_gpus; ++g) {
    if ((mask >> g) & 1u) {
      EXPECT_GE(node.gpu_free[g], job.gpu_milli) << job.name << " GPU " << g;
    }
  }
}

std::vector<std::string> RegisteredPolicyNames() {
  std::vector<std::string> names;
  for (const auto& info : PlacementPolicies()) names.emplace_back(info.name);
  return names;
}

const PlacementPolicyInfo& InfoOf(const std::string& name) {
  for (const auto& info : PlacementPolicies()) {
    if (info.name == name) return info;
  }
  ADD_FAILURE() << "no policy " << name;
  return PlacementPolicies().front();
}

// The shared suite: every registered policy, new ones included, goes through the same cases.
class PlacementPolicyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    policy_ = MakePlacementPolicy(GetParam());
    ASSERT_NE(policy_, nullptr);
    EXPECT_EQ(policy_->Name(), GetParam());
    profile_ = MixProfile();
    policy_->Prepare(profile_);
  }

  // Places jobs from the mix in a seeded pseudo-random order until `count` jobs have arrived,
  // checking every decision; returns (node, gpus) for each, node -1 when it failed.
  std::vector<std::pair<int, core::GpuMask>> PlaceMany(ClusterSnapshot& cluster,
                                                       uint64_t order_seed, uint64_t policy_seed,
                                                       int count) {
    const std::vector<JobSpec> mix = JobMix();
    core::Rng order(order_seed), rng(policy_seed);
    Placer placer(cluster, *policy_, {});
    std::vector<std::pair<int, core::GpuMask>> out;
    for (int i = 0; i < count; ++i) {
      const JobSpec& job = mix[order.Below(mix.size())];
      bool fits_somewhere = false;
      for (const NodeState& s : cluster.states()) fits_somewhere |= s.Fits(job);
      auto placed = placer.Choose(job, rng);
      EXPECT_EQ(placed.has_value(), fits_somewhere) << job.name << " at event " << i;
      if (!placed) {
        out.emplace_back(-1, 0);
        continue;
      }
      const NodeState& s = cluster.state(placed->node);
      EXPECT_TRUE(s.Fits(job)) << job.name << " placed on " << cluster.spec(placed->node).name;
      ExpectValidPick(s, job, placed->gpus);
      cluster.Allocate(placed->node, job, placed->gpus);  // aborts on any violated invariant
      out.emplace_back(placed->node, placed->gpus);
    }
    return out;
  }

  std::unique_ptr<PlacementPolicy> policy_;
  WorkloadProfile profile_;
};

TEST_P(PlacementPolicyTest, PicksValidGpusOnEveryFeasibleNode) {
  ClusterSnapshot cluster(MixedNodes());
  core::Rng rng(1);
  // Walk the cluster through many states and check PickGpus and Score on every feasible node.
  PlaceMany(cluster, 7, 7, 15);
  for (int round = 0; round < 3; ++round) {
    for (const JobSpec& job : JobMix()) {
      for (int n = 0; n < cluster.size(); ++n) {
        const NodeState& s = cluster.state(n);
        if (!s.Fits(job)) continue;
        EXPECT_TRUE(std::isfinite(policy_->Score(s, job, rng))) << job.name;
        ExpectValidPick(s, job, policy_->PickGpus(s, job, rng));
      }
    }
    PlaceMany(cluster, 100 + round, 100 + round, 10);
  }
}

TEST_P(PlacementPolicyTest, RespectsModelConstraint) {
  ClusterSnapshot cluster(MixedNodes());
  core::Rng rng(3);
  Placer placer(cluster, *policy_, {});
  const JobSpec v100 = Job("v100-only").Cpu(1000).Gpus(1).Models("V100M16");
  for (int i = 0; i < 4; ++i) {
    auto placed = placer.Choose(v100, rng);
    ASSERT_TRUE(placed.has_value()) << i;
    EXPECT_EQ(cluster.spec(placed->node).name, "v100");
    cluster.Allocate(placed->node, v100, placed->gpus);
  }
  EXPECT_FALSE(placer.Choose(v100, rng).has_value()) << "the only V100 node is full";
}

TEST_P(PlacementPolicyTest, JobThatFitsNowhereIsNotPlaced) {
  ClusterSnapshot cluster(MixedNodes());
  core::Rng rng(4);
  Placer placer(cluster, *policy_, {});
  EXPECT_FALSE(placer.Choose(Job("too-many-cores").Cpu(96001), rng));
  EXPECT_FALSE(placer.Choose(Job("too-much-memory").Memory(393217), rng));
  EXPECT_FALSE(placer.Choose(Job("nine-gpus").Gpus(9), rng));
  EXPECT_FALSE(placer.Choose(Job("absent-model").Share(100).Models("A10"), rng));
  // 4 GPUs exist only on V100 and G2 nodes, and the V100 node has too little CPU.
  EXPECT_FALSE(placer.Choose(Job("v100-4").Cpu(40000).Gpus(4).Models("V100M16"), rng));
  // Memory is the binding constraint on the P100 node.
  EXPECT_FALSE(placer.Choose(Job().Memory(16385).Gpus(1).Models("P100"), rng));
}

TEST_P(PlacementPolicyTest, CpuOnlyJobTakesNoGpu) {
  ClusterSnapshot cluster(MixedNodes());
  core::Rng rng(5);
  Placer placer(cluster, *policy_, {});
  const JobSpec cpu = Job("cpu").Cpu(6000).Memory(1000);
  for (int i = 0; i < 30; ++i) {
    auto placed = placer.Choose(cpu, rng);
    if (!placed) break;
    EXPECT_EQ(placed->gpus, 0u);
    cluster.Allocate(placed->node, cpu, placed->gpus);
  }
  EXPECT_EQ(cluster.used_gpu_milli(), 0);
}

TEST_P(PlacementPolicyTest, FillingTheClusterKeepsInvariants) {
  ClusterSnapshot cluster(MixedNodes());
  const auto decisions = PlaceMany(cluster, 11, 12, 400);
  int failed = 0;
  int64_t used = 0;
  for (const auto& [node, gpus] : decisions) failed += node < 0;
  for (const NodeState& s : cluster.states()) {
    EXPECT_GE(s.cpu_free, 0);
    EXPECT_GE(s.memory_free, 0);
    int32_t total = 0;
    int full = 0;
    for (int g = 0; g < s.num_gpus; ++g) {
      EXPECT_GE(s.gpu_free[g], 0);
      total += s.gpu_free[g];
      full += s.gpu_free[g] == core::kGpuMilli;
    }
    EXPECT_EQ(s.gpu_free_total, total);
    EXPECT_EQ(s.full_free_gpus, full);
    used += s.num_gpus * core::kGpuMilli - total;
  }
  EXPECT_EQ(cluster.used_gpu_milli(), used);
  EXPECT_GT(failed, 0) << "400 jobs should overflow this cluster";
  EXPECT_GT(used, cluster.total_gpu_milli() / 2) << "every policy should use half the GPUs";
}

TEST_P(PlacementPolicyTest, SameSeedSamePlacement) {
  ClusterSnapshot a(MixedNodes()), b(MixedNodes());
  EXPECT_EQ(PlaceMany(a, 21, 22, 120), PlaceMany(b, 21, 22, 120));
}

TEST_P(PlacementPolicyTest, DeterministicPoliciesIgnoreTheRng) {
  if (!InfoOf(GetParam()).deterministic) GTEST_SKIP() << GetParam() << " is randomized";
  EXPECT_TRUE(policy_->ScoreIsPure());
  ClusterSnapshot a(MixedNodes()), b(MixedNodes());
  EXPECT_EQ(PlaceMany(a, 31, 1, 120), PlaceMany(b, 31, 999, 120));
}

TEST_P(PlacementPolicyTest, PureScoresRepeat) {
  if (!policy_->ScoreIsPure()) GTEST_SKIP() << GetParam() << " draws randomness in Score";
  ClusterSnapshot cluster(MixedNodes());
  PlaceMany(cluster, 41, 41, 20);
  core::Rng r1(1), r2(2);
  for (const JobSpec& job : JobMix()) {
    for (const NodeState& s : cluster.states()) {
      if (s.Fits(job)) {
        EXPECT_EQ(policy_->Score(s, job, r1), policy_->Score(s, job, r2)) << job.name;
      }
    }
  }
}

// A policy's per-state figure, computed once by the placer, gives the very score `Score` gives
// (for a policy with none, the default ScoreWithStateTerm is Score).
TEST_P(PlacementPolicyTest, AScoreFromTheStateTermIsTheScore) {
  if (!policy_->ScoreIsPure()) GTEST_SKIP() << GetParam() << " draws randomness in Score";
  ClusterSnapshot cluster(MixedNodes());
  PlaceMany(cluster, 41, 41, 20);
  core::Rng rng(1);
  int checked = 0;
  for (const JobSpec& job : JobMix()) {
    for (const NodeState& s : cluster.states()) {
      if (!s.Fits(job)) continue;
      const double term = policy_->StateTerm(s);
      EXPECT_EQ(policy_->ScoreWithStateTerm(s, job, rng, term), policy_->Score(s, job, rng))
          << job.name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PlacementPolicyTest,
                         ::testing::ValuesIn(RegisteredPolicyNames()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(PolicyRegistryTest, NamesAreUniqueAndThePublishedSixComeFirst) {
  const auto& all = PlacementPolicies();
  ASSERT_GE(all.size(), 6u);
  const char* published[] = {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd"};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(all[i].name, published[i]);
  std::set<std::string_view> names;
  for (const auto& info : all) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.summary.empty()) << info.name;
    EXPECT_EQ(MakePlacementPolicy(info.name)->Name(), info.name);
    EXPECT_NE(PlacementPolicyNames().find(info.name), std::string::npos);
  }
  EXPECT_FALSE(all[0].deterministic);  // random fit
  EXPECT_EQ(MakePlacementPolicy("no-such-policy"), nullptr);
}

// Known answers for the published policies (fgd-experiment.md, "Scores").

// Prepares `name` on an empty profile (the policies below do not look at it).
std::unique_ptr<PlacementPolicy> Make(const char* name) {
  auto policy = MakePlacementPolicy(name);
  policy->Prepare(WorkloadProfile::Build(std::vector<JobSpec>{Job()}, {}));
  return policy;
}

TEST(BestFitTest, ScoreFormulaAndTightestNode) {
  auto policy = Make("bestfit");
  ClusterSnapshot c({Node("big").Cpu(32000).Gpus(8), Node("small").Cpu(32000).Gpus(2)});
  core::Rng rng(0);
  const JobSpec job = Job().Cpu(1000).Gpus(1);
  // s = 0.5 * 31000/128000 + 0.5 * 7000/8000 = 0.55859375; trunc(100 * (1 - s)) = 44.
  EXPECT_EQ(policy->Score(c.state(0), job, rng), 44);
  // s = 0.5 * 31000/128000 + 0.5 * 1000/8000 = 0.18359375 -> 81.
  EXPECT_EQ(policy->Score(c.state(1), job, rng), 81);
  Placer placer(c, *policy, {});
  EXPECT_EQ(placer.Choose(job, rng)->node, 1);
  EXPECT_EQ(placer.Choose(job, rng)->gpus, 0b01u);  // lowest-index free GPU
}

TEST(DotProductTest, ScoreFormula) {
  auto policy = Make("dotprod");
  ClusterSnapshot c({Node().Cpu(64000).Gpus(4)});
  core::Rng rng(0);
  // d = (64000/128000)(16000/128000) + (4000/8000)(2000/8000) = 0.0625 + 0.125 = 0.1875;
  // trunc(100 * (1 - 0.1875 / 2)) = trunc(90.625) = 90.
  EXPECT_EQ(policy->Score(c.state(0), Job().Cpu(16000).Gpus(2), rng), 90);
  // CPU-only: d = 0.5 * 0.125 = 0.0625 -> trunc(96.875) = 96.
  EXPECT_EQ(policy->Score(c.state(0), Job().Cpu(16000), rng), 96);
}

TEST(GpuPackingTest, PrefersAPartlyUsedGpu) {
  auto policy = Make("gpupacking");
  ClusterSnapshot c({Node("idle").Gpus(8), Node("partly").Gpus(8)});
  c.Allocate(1, Job().Share(500), 0b100);  // GPU 2 of "partly" has 500 free
  core::Rng rng(0);
  const JobSpec share = Job().Share(300);
  EXPECT_EQ(policy->Score(c.state(0), share, rng), 25);  // all 8 free: max(33 - 8, 8)
  // First GPU with room in ascending free order has 500: 100 - floor(50 / 10) = 95.
  EXPECT_EQ(policy->Score(c.state(1), share, rng), 95);
  Placer placer(c, *policy, {});
  auto placed = placer.Choose(share, rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->node, 1);
  EXPECT_EQ(placed->gpus, 0b100u);  // the partly used GPU, not the lowest index
  // Whole GPUs on the partly used node: two fully free GPUs, u = 2 -> max(50 - 2, 33) = 48.
  EXPECT_EQ(policy->Score(c.state(1), Job().Gpus(2), rng), 48);
  EXPECT_EQ(policy->Score(c.state(1), Job(), rng), 0);  // CPU-only
}

TEST(GpuPackingTest, FloorOfTenthsForSeveralPartlyUsedGpus) {
  auto policy = Make("gpupacking");
  ClusterSnapshot c({Node().Gpus(4)});
  c.Allocate(0, Job().Share(450), 0b0001);  // 550 free
  c.Allocate(0, Job().Share(330), 0b0010);  // 670 free
  c.Allocate(0, Job().Share(600), 0b0100);  // 400 free
  core::Rng rng(0);
  // Share 500: GPUs with room in ascending free order: 550, 670, 1000; take 1 -> 550.
  // floor(550 * 100 / 1000) = 55; 100 - floor(55 / 10) = 95.
  EXPECT_EQ(policy->Score(c.state(0), Job().Share(500), rng), 95);
  // Share 100: ascending 400, 550, 670, 1000 -> 400: 100 - 4 = 96.
  EXPECT_EQ(policy->Score(c.state(0), Job().Share(100), rng), 96);
  EXPECT_EQ(policy->PickGpus(c.state(0), Job().Share(100), rng), 0b0100u);
}

TEST(GpuClusteringTest, PrefersANodeWithTheSameJobClass) {
  auto policy = Make("gpuclustering");
  ClusterSnapshot c({Node("empty").Gpus(8), Node("whole").Gpus(8), Node("sharing").Gpus(8),
                     Node("mixed").Gpus(8)});
  c.Allocate(1, Job().Gpus(1), 0b1);
  c.Allocate(2, Job().Share(300), 0b1);
  c.Allocate(3, Job().Share(300), 0b1);
  c.Allocate(3, Job().Gpus(2), 0b110);
  core::Rng rng(0);
  const JobSpec share = Job().Share(200);
  EXPECT_EQ(policy->Score(c.state(0), share, rng), 0 + 25);  // floor(25*0/8000), no GPU pods
  EXPECT_EQ(policy->Score(c.state(1), share, rng), 3 + 0);   // floor(25*1000/8000), other tag
  EXPECT_EQ(policy->Score(c.state(2), share, rng), 0 + 75);  // floor(25*300/8000), same tag only
  EXPECT_EQ(policy->Score(c.state(3), share, rng), 7 + 50);  // floor(25*2300/8000), tag and others
  EXPECT_EQ(policy->Score(c.state(0), Job(), rng), 0);       // CPU-only
  Placer placer(c, *policy, {});
  EXPECT_EQ(placer.Choose(share, rng)->node, 2);
  EXPECT_EQ(placer.Choose(Job().Gpus(1), rng)->node, 1);
}

TEST(FgdTest, SharingPodTakesTheGpuThatFragmentsLeast) {
  // Target workload: 3 whole-GPU pods and 1 CPU-only pod, so F = 0.75 * phi_1gpu + 0.25 * L.
  std::vector<JobSpec> jobs(3, Job().Cpu(0).Gpus(1));
  jobs.push_back(Job().Cpu(0));
  const WorkloadProfile profile = WorkloadProfile::Build(jobs, {}, 1.0);
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(profile);

  ClusterSnapshot c({Node().Gpus(2)});
  c.Allocate(0, Job().Cpu(0).Share(300), 0b10);  // free [1000, 700]
  core::Rng rng(0);
  const JobSpec share = Job().Cpu(0).Share(200);
  // Before: phi = 700 (GPU 0 fits a whole-GPU pod), L = 1700: F = 525 + 425 = 950.
  // GPU 0 -> [800, 700]: no GPU fits, phi = L = 1500, F = 1500, delta -550: trunc(100 s(-0.55))
  // = 36. GPU 1 -> [1000, 500]: phi = 500, L = 1500, F = 750, delta 200: trunc(100 s(0.2)) = 54.
  EXPECT_EQ(fgd->Score(c.state(0), share, rng), 54);
  EXPECT_EQ(fgd->PickGpus(c.state(0), share, rng), 0b10u);
  EXPECT_EQ(std::trunc(100.0 / (1.0 + std::exp(0.55))), 36);  // the losing GPU's score

  // Whole-GPU pod: takes GPU 0 -> [0, 700]: phi = L = 700, F = 700, delta 250 -> 56.
  EXPECT_EQ(fgd->Score(c.state(0), Job().Cpu(0).Gpus(1), rng), 56);
}

TEST(FgdTest, TiesGoToTheLowestGpuAndTheDefaultPickDiffers) {
  // Target workload: sharing pods of 500, so GPUs with under 500 free are fragments.
  const std::vector<JobSpec> jobs(2, Job().Cpu(0).Share(500));
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  ClusterSnapshot c({Node().Gpus(3)});
  c.Allocate(0, Job().Cpu(0).Share(400), 0b010);  // free [1000, 600, 1000]
  core::Rng rng(0);
  const JobSpec share = Job().Cpu(0).Share(200);
  // GPU 0 or 2 -> no fragment (delta 0, score 50); GPU 1 -> 400 left, a fragment (score 40).
  EXPECT_EQ(fgd->Score(c.state(0), share, rng), 50);
  EXPECT_EQ(fgd->PickGpus(c.state(0), share, rng), 0b001u);
  // The published default (best fit GPU) would take GPU 1.
  EXPECT_EQ(DefaultGpuPick(c.state(0), share), 0b010u);
}

TEST(FgdTest, MemoizedFragmentationIsTheMeasureForEveryStateAndGpuOrder) {
  // A workload with CPU-only types, shares, whole and multi-GPU types, and a model-bound type, so
  // that the CPU covered, the GPU model and each GPU's share all change the measure.
  std::vector<JobSpec> jobs;
  const JobSpec types[] = {Job().Cpu(2000),
                           Job().Cpu(8000),
                           Job().Cpu(1000).Share(250),
                           Job().Cpu(4000).Share(500),
                           Job().Cpu(6000).Gpus(1),
                           Job().Cpu(16000).Gpus(2),
                           Job().Cpu(3000).Gpus(4),
                           Job().Cpu(12000).Share(700).Models("T4")};
  for (size_t t = 0; t < std::size(types); ++t) jobs.insert(jobs.end(), t + 1, types[t]);
  const WorkloadProfile profile = WorkloadProfile::Build(jobs, {}, 1.0);
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(profile);

  core::Rng rng(7);
  const int64_t cpus[] = {0, 999, 1000, 2000, 3999, 6000, 8000, 12000, 15999, 16000, 64000};
  const int32_t shares[] = {0, 100, 250, 300, 500, 700, 999, 1000};
  const core::ModelId models[] = {test::Model("T4"), test::Model("G2")};
  for (int i = 0; i < 4000; ++i) {
    core::NodeState node;
    node.model = models[rng.Below(2)];
    // Up to 10 GPUs: nodes of more than 8 are measured without the memo.
    node.num_gpus = static_cast<uint8_t>(rng.Below(11));
    node.cpu_free = cpus[rng.Below(std::size(cpus))];
    for (int g = 0; g < node.num_gpus; ++g) {
      node.gpu_free[g] = shares[rng.Below(std::size(shares))];
    }
    // The same GPUs in another order, and the same node with each other CPU amount: the memo
    // must answer each as the measure does, to the last bit.
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE(testing::Message() << "state " << i << " round " << round);
      EXPECT_EQ(fgd->StateTerm(node),
                profile.PublishedFragmentation(node.model, node.cpu_free, node.gpu_free.data(),
                                               node.num_gpus));
      if (node.num_gpus > 1) {
        std::swap(node.gpu_free[0], node.gpu_free[rng.Below(node.num_gpus)]);
      }
      node.cpu_free = cpus[rng.Below(std::size(cpus))];
    }
  }
}

TEST(FgdBalanceTest, CpuOnlyJobGoesWhereNoGpuWillMissTheCpu) {
  // Workload: whole-GPU pods bringing 8 cores per GPU, so rho = 8 milli-CPU per milli-GPU.
  const std::vector<JobSpec> jobs(4, Job().Cpu(8000).Gpus(1));
  auto policy = MakePlacementPolicy("fgd-balance");
  policy->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  // "gpu-heavy": 32 cores for 4 GPUs (needs 32 cores to use them all): surplus 0 before the job.
  // "cpu-rich": 64 cores for 2 GPUs (needs 16): surplus 48 cores.
  ClusterSnapshot c({Node("gpu-heavy").Cpu(32000).Gpus(4), Node("cpu-rich").Cpu(64000).Gpus(2)});
  Placer placer(c, *policy, {});
  core::Rng rng(0);
  auto placed = placer.Choose(Job().Cpu(4000), rng);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->node, 1);
  EXPECT_DOUBLE_EQ(placed->score, 64000 - 4000 - 8.0 * 2000);
  // FGD itself sees no fragmentation change on either node and takes the first by rank.
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  Placer fgd_placer(c, *fgd, {});
  EXPECT_EQ(fgd_placer.Choose(Job().Cpu(4000), rng)->node, 0);
}

TEST(FgdBalanceTest, WholeGpuJobPrefersTheNodeItLeavesBalanced) {
  const std::vector<JobSpec> jobs(4, Job().Cpu(8000).Gpus(1));
  auto policy = MakePlacementPolicy("fgd-balance");
  policy->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  // Three nodes with the same GPUs: the first has the CPU its GPUs need, the second twice that,
  // the third one job's worth too little.
  ClusterSnapshot c({Node("balanced").Cpu(16000).Gpus(2), Node("cpu-rich").Cpu(32000).Gpus(2),
                     Node("cpu-poor").Cpu(9000).Gpus(2)});
  core::Rng rng(0);
  const JobSpec job = Job().Cpu(8000).Gpus(1);
  // FGD scores the first two alike (same GPU fragmentation change).
  ASSERT_EQ(fgd->Score(c.state(0), job, rng), fgd->Score(c.state(1), job, rng));
  // After the job: "balanced" has 8 cores for 1 GPU (surplus 0), "cpu-rich" 24 cores (16 to
  // spare), "cpu-poor" 1 core (7 short). A shortfall costs four times what spare CPU costs.
  const double fgd_score = fgd->Score(c.state(0), job, rng);
  EXPECT_DOUBLE_EQ(policy->Score(c.state(0), job, rng), fgd_score);
  EXPECT_DOUBLE_EQ(policy->Score(c.state(1), job, rng), fgd_score - 0.25 * 30.0 * 16000 / 128000);
  EXPECT_DOUBLE_EQ(policy->Score(c.state(2), job, rng),
                   fgd->Score(c.state(2), job, rng) - 30.0 * 7000 / 128000);
  // Sharing jobs are placed exactly as FGD places them.
  const JobSpec share = Job().Cpu(2000).Share(300);
  for (int node = 0; node < 2; ++node) {
    EXPECT_DOUBLE_EQ(policy->Score(c.state(node), share, rng),
                     fgd->Score(c.state(node), share, rng));
    EXPECT_EQ(policy->PickGpus(c.state(node), share, rng),
              fgd->PickGpus(c.state(node), share, rng));
  }
}

TEST(FgdBalanceTest, TheGpusAJobLeavesAreJudgedByTheJobsThatCouldStillUseThem) {
  // Workload: 1-GPU jobs bringing 4 cores per GPU and 4-GPU jobs bringing 16 (64 cores each), as
  // many GPUs of each: 10 cores per GPU over all. Three free GPUs will never host a 4-GPU job.
  std::vector<JobSpec> jobs(4, Job().Cpu(4000).Gpus(1));
  jobs.push_back(Job().Cpu(64000).Gpus(4));
  auto policy = MakePlacementPolicy("fgd-balance");
  policy->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  // A 4-GPU node with 16 cores: after a 1-GPU job of 4 cores, 12 cores for 3 free GPUs, just
  // what three 1-GPU jobs need (at the workload's 10 cores per GPU it looked 18 cores short).
  ClusterSnapshot c({Node("small").Cpu(16000).Gpus(4), Node("big").Cpu(200000).Gpus(8)});
  core::Rng rng(0);
  const JobSpec one = Job().Cpu(4000).Gpus(1);
  EXPECT_DOUBLE_EQ(policy->Score(c.state(0), one, rng), fgd->Score(c.state(0), one, rng));
  // After a 4-GPU job on the 8-GPU node its 4 free GPUs may take either kind: 10 cores per GPU.
  // 200 - 64 = 136 cores for them, 96 to spare.
  const JobSpec four = Job().Cpu(64000).Gpus(4);
  EXPECT_DOUBLE_EQ(policy->Score(c.state(1), four, rng),
                   fgd->Score(c.state(1), four, rng) - 0.25 * 30.0 * 96000 / 128000);
}

TEST(FgdBalanceTest, ANodeThatDoesNotReportItsCpuIsScoredAsFgdScoresIt) {
  // A live agent that does not report its CPU gets core::kUnreportedCpuMilli: no balance to keep
  // there, or whole-GPU jobs would be pushed to the emptiest such node.
  const std::vector<JobSpec> jobs(4, Job().Cpu(8000).Gpus(1));
  auto policy = MakePlacementPolicy("fgd-balance");
  policy->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  ClusterSnapshot c({Node("unreported").Cpu(core::kUnreportedCpuMilli).Gpus(8)});
  c.Allocate(0, Job().Cpu(8000).Gpus(2), 0b11);
  core::Rng rng(0);
  const JobSpec job = Job().Cpu(8000).Gpus(2);
  EXPECT_DOUBLE_EQ(policy->Score(c.state(0), job, rng), fgd->Score(c.state(0), job, rng));
}

TEST(FgdBalanceTest, WhereCpuIsScarceItPlacesAsFgd) {
  // Workload: 8 cores per GPU. The cluster's 6 GPUs need 48 cores and it has 40: CPU is scarce.
  const std::vector<JobSpec> jobs(4, Job().Cpu(8000).Gpus(1));
  auto fgd = MakePlacementPolicy("fgd");
  fgd->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  ClusterSnapshot c({Node("a").Cpu(16000).Gpus(4), Node("b").Cpu(24000).Gpus(2)});
  const std::vector<core::NodeSpec> nodes = {c.spec(0), c.spec(1)};
  core::Rng rng(0);
  const JobSpec cpu_only = Job().Cpu(4000);
  const JobSpec whole = Job().Cpu(8000).Gpus(1);
  // Either order of the two calls: every score is FGD's.
  for (bool cluster_first : {true, false}) {
    auto policy = MakePlacementPolicy("fgd-balance");
    if (cluster_first) policy->PrepareCluster(nodes);
    policy->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
    if (!cluster_first) policy->PrepareCluster(nodes);
    for (int node = 0; node < 2; ++node) {
      EXPECT_DOUBLE_EQ(policy->Score(c.state(node), cpu_only, rng),
                       fgd->Score(c.state(node), cpu_only, rng));
      EXPECT_DOUBLE_EQ(policy->Score(c.state(node), whole, rng),
                       fgd->Score(c.state(node), whole, rng));
    }
  }
  // With a third node of 256 cores and 8 GPUs, 14 GPUs need 112 of 296 cores: balance is back on
  // (a CPU-only job is scored by the surplus it leaves).
  auto policy = MakePlacementPolicy("fgd-balance");
  policy->Prepare(WorkloadProfile::Build(jobs, {}, 1.0));
  ClusterSnapshot bigger(
      {Node("a").Cpu(16000).Gpus(4), Node("b").Cpu(24000).Gpus(2), Node("c").Cpu(256000).Gpus(8)});
  policy->PrepareCluster(
      std::vector<core::NodeSpec>{bigger.spec(0), bigger.spec(1), bigger.spec(2)});
  EXPECT_DOUBLE_EQ(policy->Score(bigger.state(1), cpu_only, rng), 24000 - 4000 - 8.0 * 2000);
}

TEST(RandomFitTest, SpreadsOverFeasibleNodesAndGpus) {
  auto policy = Make("random");
  EXPECT_FALSE(policy->ScoreIsPure());
  ClusterSnapshot c(
      {Node("a").Gpus(2), Node("b").Gpus(2), Node("c").Gpus(2), Node("d").Gpus(2, "T4")});
  core::Rng rng(123);
  Placer placer(c, *policy, {});
  std::set<int> nodes;
  std::set<core::GpuMask> gpus;
  for (int i = 0; i < 200; ++i) {
    auto placed = placer.Choose(Job().Share(100).Models("G2"), rng);
    ASSERT_TRUE(placed);
    EXPECT_NE(placed->node, 3);
    nodes.insert(placed->node);
    gpus.insert(placed->gpus);
  }
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(gpus.size(), 2u);  // a sharing pod gets a uniformly random GPU
}

}  // namespace
}  // namespace gpufleet::sched
