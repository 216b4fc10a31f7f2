#include "core/cluster.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "testing/builders.h"

namespace gpufleet::core {
namespace {

using test::Job;
using test::Node;
using test::SmallCluster;

// Recomputes the derived fields of `s` from its per-GPU free milli.
void ExpectDerivedFieldsConsistent(const NodeState& s) {
  int32_t total = 0, max = 0;
  int full = 0;
  for (int g = 0; g < s.num_gpus; ++g) {
    EXPECT_GE(s.gpu_free[g], 0);
    EXPECT_LE(s.gpu_free[g], kGpuMilli);
    total += s.gpu_free[g];
    max = std::max(max, s.gpu_free[g]);
    full += s.gpu_free[g] == kGpuMilli;
  }
  EXPECT_EQ(s.gpu_free_total, total);
  EXPECT_EQ(s.gpu_free_max, max);
  EXPECT_EQ(s.full_free_gpus, full);
}

TEST(ClusterSnapshotTest, StartsWithEverythingFree) {
  ClusterSnapshot c = SmallCluster({Node("a").Cpu(8000).Memory(4096).Gpus(4, "T4"), Node("cpu")});
  ASSERT_EQ(c.size(), 2);
  const NodeState& a = c.state(0);
  EXPECT_EQ(a.cpu_free, 8000);
  EXPECT_EQ(a.memory_free, 4096);
  EXPECT_EQ(a.num_gpus, 4);
  EXPECT_EQ(a.full_free_gpus, 4);
  EXPECT_EQ(a.gpu_free_total, 4000);
  EXPECT_EQ(a.gpu_free_max, 1000);
  EXPECT_EQ(a.model, test::Model("T4"));
  EXPECT_EQ(a.job_classes, 0u);
  EXPECT_NE(a.version, 0u);  // 0 means "no cached score" to the placer
  EXPECT_EQ(c.state(1).gpu_free_max, 0);
  EXPECT_EQ(c.state(1).full_free_gpus, 0);
  EXPECT_EQ(c.total_gpus(), 4);
  EXPECT_EQ(c.total_gpu_milli(), 4000);
  EXPECT_EQ(c.used_gpu_milli(), 0);
}

TEST(ClusterSnapshotTest, SharingJobTakesPartOfOneGpu) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(2)});
  const uint32_t v0 = c.state(0).version;
  c.Allocate(0, Job().Cpu(3000).Memory(100).Share(300), 0b10);
  const NodeState& s = c.state(0);
  EXPECT_EQ(s.cpu_free, 32000 - 3000);
  EXPECT_EQ(s.memory_free, 131072 - 100);
  EXPECT_EQ(s.gpu_free[0], 1000);
  EXPECT_EQ(s.gpu_free[1], 700);
  EXPECT_EQ(s.gpu_free_total, 1700);
  EXPECT_EQ(s.gpu_free_max, 1000);
  EXPECT_EQ(s.full_free_gpus, 1);
  EXPECT_EQ(s.job_classes, 1u);  // bit 0: GPU sharing
  EXPECT_NE(s.version, v0);
  EXPECT_EQ(c.used_gpu_milli(), 300);
  ExpectDerivedFieldsConsistent(s);
}

TEST(ClusterSnapshotTest, WholeGpuJobsSetTheirCountBit) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(8)});
  c.Allocate(0, Job().Gpus(2), 0b11);
  EXPECT_EQ(c.state(0).job_classes, 1u << 2);
  c.Allocate(0, Job().Gpus(1), 0b100);
  EXPECT_EQ(c.state(0).job_classes, (1u << 2) | (1u << 1));
  EXPECT_EQ(c.state(0).full_free_gpus, 5);
  EXPECT_EQ(c.state(0).gpu_free_max, 1000);
  EXPECT_EQ(c.used_gpu_milli(), 3000);
  ExpectDerivedFieldsConsistent(c.state(0));
}

TEST(ClusterSnapshotTest, GpuFreeMaxDropsWhenNoGpuIsWhole) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(2)});
  c.Allocate(0, Job().Share(400), 0b01);
  c.Allocate(0, Job().Share(100), 0b10);
  EXPECT_EQ(c.state(0).gpu_free_max, 900);
  EXPECT_EQ(c.state(0).full_free_gpus, 0);
  ExpectDerivedFieldsConsistent(c.state(0));
}

TEST(ClusterSnapshotTest, CpuOnlyJobTakesNoGpuAndNoClass) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(2)});
  const uint32_t v0 = c.state(0).version;
  c.Allocate(0, Job().Cpu(5000).Memory(7), 0);
  EXPECT_EQ(c.state(0).cpu_free, 27000);
  EXPECT_EQ(c.state(0).gpu_free_total, 2000);
  EXPECT_EQ(c.state(0).job_classes, 0u);
  EXPECT_EQ(c.used_gpu_milli(), 0);
  EXPECT_NE(c.state(0).version, v0);  // CPU changed, so scores may change
}

TEST(ClusterSnapshotTest, ReleaseRestoresEverythingButTheVersion) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(4), Node("other").Gpus(4)});
  const NodeState before = c.state(0);
  const uint32_t other_version = c.state(1).version;
  const JobSpec job = Job().Cpu(2000).Memory(512).Gpus(2);
  c.Allocate(0, job, 0b0110);
  const uint32_t allocated_version = c.state(0).version;
  c.Release(0, job, 0b0110);
  const NodeState& after = c.state(0);
  EXPECT_EQ(after.cpu_free, before.cpu_free);
  EXPECT_EQ(after.memory_free, before.memory_free);
  EXPECT_EQ(after.gpu_free, before.gpu_free);
  EXPECT_EQ(after.gpu_free_total, before.gpu_free_total);
  EXPECT_EQ(after.full_free_gpus, before.full_free_gpus);
  EXPECT_EQ(after.job_classes, 0u);
  EXPECT_EQ(c.used_gpu_milli(), 0);
  // A version must never come back: the placer would take a stale score for a fresh one.
  EXPECT_NE(after.version, before.version);
  EXPECT_NE(after.version, allocated_version);
  EXPECT_EQ(c.state(1).version, other_version);
}

TEST(ClusterSnapshotTest, ClassBitStaysUntilTheLastJobOfTheClassLeaves) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(2)});
  const JobSpec a = Job("a").Share(200), b = Job("b").Share(500), whole = Job("w").Gpus(1);
  c.Allocate(0, a, 0b01);
  c.Allocate(0, b, 0b01);
  c.Allocate(0, whole, 0b10);
  EXPECT_EQ(c.state(0).job_classes, 0b11u);
  c.Release(0, a, 0b01);
  EXPECT_EQ(c.state(0).job_classes, 0b11u);
  c.Release(0, b, 0b01);
  EXPECT_EQ(c.state(0).job_classes, 0b10u);
  c.Release(0, whole, 0b10);
  EXPECT_EQ(c.state(0).job_classes, 0u);
}

TEST(ClusterSnapshotTest, EveryChangeBumpsTheVersion) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(2)});
  uint32_t last = c.state(0).version;
  const JobSpec job = Job().Share(100);
  for (int i = 0; i < 5; ++i) {
    c.Allocate(0, job, 0b01);
    EXPECT_NE(c.state(0).version, last);
    last = c.state(0).version;
  }
  for (int i = 0; i < 5; ++i) {
    c.Release(0, job, 0b01);
    EXPECT_NE(c.state(0).version, last);
    last = c.state(0).version;
  }
}

TEST(NodeStateTest, FitsChecksEveryResource) {
  ClusterSnapshot c = SmallCluster({Node().Cpu(4000).Memory(4096).Gpus(2, "T4")});
  const NodeState& s = c.state(0);
  EXPECT_TRUE(s.Fits(Job().Cpu(4000).Memory(4096).Gpus(2)));
  EXPECT_FALSE(s.Fits(Job().Cpu(4001)));
  EXPECT_FALSE(s.Fits(Job().Memory(4097)));
  EXPECT_FALSE(s.Fits(Job().Gpus(3)));
  EXPECT_TRUE(s.Fits(Job().Share(1000).Models("T4|P100")));
  EXPECT_FALSE(s.Fits(Job().Share(10).Models("V100M16|V100M32")));
  // A CPU-only job ignores the model constraint: it takes no GPU.
  EXPECT_TRUE(s.Fits(Job().Models("V100M16")));

  c.Allocate(0, Job().Share(600), 0b01);
  c.Allocate(0, Job().Share(500), 0b10);
  EXPECT_TRUE(c.state(0).Fits(Job().Share(500)));
  EXPECT_FALSE(c.state(0).Fits(Job().Share(501)));
  EXPECT_FALSE(c.state(0).Fits(Job().Gpus(1)));
}

TEST(JobClassBitTest, DistinguishesSharingFromWholeGpuCounts) {
  EXPECT_EQ(JobClassBit(Job()), 0u);
  EXPECT_EQ(JobClassBit(Job().Share(999)), 1u);
  EXPECT_EQ(JobClassBit(Job().Gpus(1)), 2u);
  EXPECT_EQ(JobClassBit(Job().Gpus(8)), 1u << 8);
}

TEST(ValidateTest, JobErrorsNameTheField) {
  EXPECT_TRUE(ValidateJobSpec(Job().Gpus(2)).ok());
  EXPECT_TRUE(ValidateJobSpec(Job().Share(1)).ok());
  auto check = [](JobSpec job, const std::string& field) {
    auto r = ValidateJobSpec(job);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.error().find(field), std::string::npos) << r.error();
  };
  check(Job().Cpu(-1), "cpu_milli");
  check(Job().Memory(-1), "memory_mib");
  check(Job().Gpus(kMaxGpusPerNode + 1), "num_gpu");
  check(Job().Share(1001), "gpu_milli");
  JobSpec split = Job().Gpus(2);
  split.gpu_milli = 500;
  check(split, "gpu_milli");
  JobSpec zero = Job().Gpus(1);
  zero.gpu_milli = 0;
  check(zero, "gpu_milli");
  JobSpec gang = Job();
  gang.gang_nodes = 0;
  check(gang, "gang_nodes");
}

TEST(ValidateTest, NodeErrors) {
  EXPECT_TRUE(ValidateNodeSpec(Node().Gpus(kMaxGpusPerNode)).ok());
  EXPECT_FALSE(ValidateNodeSpec(Node().Gpus(kMaxGpusPerNode + 1)).ok());
  EXPECT_FALSE(ValidateNodeSpec(Node().Cpu(-1)).ok());
  EXPECT_FALSE(ValidateNodeSpec(Node().Memory(-5)).ok());
}

// Invariant violations abort: the snapshot must never hold impossible state.
using ClusterSnapshotDeathTest = ::testing::Test;

TEST_F(ClusterSnapshotDeathTest, InvalidNodeAborts) {
  EXPECT_DEATH(SmallCluster({Node().Gpus(kMaxGpusPerNode + 1)}), "invariant violated");
}

TEST_F(ClusterSnapshotDeathTest, OverAllocationAborts) {
  EXPECT_DEATH(
      {
        ClusterSnapshot c = SmallCluster({Node().Cpu(1000).Gpus(2)});
        c.Allocate(0, Job().Cpu(1001), 0);
      },
      "invariant violated");
  EXPECT_DEATH(
      {
        ClusterSnapshot c = SmallCluster({Node().Memory(10).Gpus(2)});
        c.Allocate(0, Job().Memory(11), 0);
      },
      "invariant violated");
  EXPECT_DEATH(
      {
        ClusterSnapshot c = SmallCluster({Node().Gpus(2)});
        c.Allocate(0, Job().Share(600), 0b01);
        c.Allocate(0, Job().Share(600), 0b01);  // GPU 0 has only 400 left
      },
      "invariant violated");
}

TEST_F(ClusterSnapshotDeathTest, WrongGpuMaskAborts) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(2, "T4")});
  EXPECT_DEATH(c.Allocate(0, Job().Gpus(2), 0b01), "invariant violated");   // too few
  EXPECT_DEATH(c.Allocate(0, Job().Gpus(1), 0b100), "invariant violated");  // no GPU 2
  EXPECT_DEATH(c.Allocate(0, Job(), 0b01), "invariant violated");           // CPU-only
  EXPECT_DEATH(c.Allocate(0, Job().Gpus(1).Models("A10"), 0b01), "invariant violated");
  EXPECT_DEATH(c.Allocate(1, Job(), 0), "invariant violated");  // no node 1
}

TEST_F(ClusterSnapshotDeathTest, ReleasingWhatWasNotAllocatedAborts) {
  ClusterSnapshot c = SmallCluster({Node().Gpus(2)});
  EXPECT_DEATH(c.Release(0, Job().Cpu(1), 0), "invariant violated");
  EXPECT_DEATH(c.Release(0, Job().Cpu(0).Memory(0).Share(1), 0b01), "invariant violated");
  c.Allocate(0, Job("whole").Cpu(2000).Gpus(1), 0b01);
  // GPU 0 has room to take back 300 and CPU is in use, but no sharing job was ever allocated.
  EXPECT_DEATH(c.Release(0, Job("share").Share(300), 0b01), "invariant violated");
  // Same job, different GPU: GPU 1 is whole already.
  EXPECT_DEATH(c.Release(0, Job("whole").Cpu(2000).Gpus(1), 0b10), "invariant violated");
}

// `free_whole_gpus` is what a pass reads instead of summing every node: it must equal that sum
// after any mix of shares and whole GPUs taken and given back, in copies too.
TEST(ClusterSnapshotTest, FreeWholeGpusIsTheSumOverNodesThroughEveryChange) {
  ClusterSnapshot c = SmallCluster({Node("a").Gpus(4), Node("b").Gpus(8), Node("cpu")});
  auto summed = [](const ClusterSnapshot& cluster) {
    int64_t n = 0;
    for (const NodeState& s : cluster.states()) n += s.full_free_gpus;
    return n;
  };
  EXPECT_EQ(c.free_whole_gpus(), 12);
  c.Allocate(0, Job().Share(300), 0b0001);
  EXPECT_EQ(c.free_whole_gpus(), 11);
  c.Allocate(0, Job().Share(500), 0b0001);  // the same GPU: no whole one lost
  EXPECT_EQ(c.free_whole_gpus(), 11);
  c.Allocate(1, Job().Gpus(3), 0b0111);
  EXPECT_EQ(c.free_whole_gpus(), 8);
  ClusterSnapshot copy = c;
  copy.Release(1, Job().Gpus(3), 0b0111);
  EXPECT_EQ(copy.free_whole_gpus(), 11);
  EXPECT_EQ(copy.free_whole_gpus(), summed(copy));
  c.Release(0, Job().Share(300), 0b0001);
  EXPECT_EQ(c.free_whole_gpus(), 8);  // 500 of GPU 0 still taken
  c.Release(0, Job().Share(500), 0b0001);
  EXPECT_EQ(c.free_whole_gpus(), 9);
  EXPECT_EQ(c.free_whole_gpus(), summed(c));
  copy = c;
  EXPECT_EQ(copy.free_whole_gpus(), 9);
}

}  // namespace
}  // namespace gpufleet::core
