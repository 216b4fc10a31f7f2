#include "sched/workload_profile.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster.h"
#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using core::JobSpec;
using test::Job;
using test::Node;

// `count` copies of `job`.
void Add(std::vector<JobSpec>& jobs, std::vector<std::string>& labels, const JobSpec& job,
         int count, const std::string& label = "") {
  for (int i = 0; i < count; ++i) {
    jobs.push_back(job);
    labels.push_back(label);
  }
}

TEST(WorkloadProfileTest, CountsTypesIgnoringMemoryAndName) {
  std::vector<JobSpec> jobs;
  std::vector<std::string> labels;
  Add(jobs, labels, Job("a").Cpu(1000).Memory(1).Share(500), 3);
  Add(jobs, labels, Job("b").Cpu(1000).Memory(999).Share(500), 2);  // same type as "a"
  Add(jobs, labels, Job("c").Cpu(1000).Share(500).Models("T4"), 1, "T4");
  Add(jobs, labels, Job("d").Cpu(2000), 4);
  const WorkloadProfile p = WorkloadProfile::Build(jobs, labels, 1.0);
  ASSERT_EQ(p.types().size(), 3u);
  EXPECT_EQ(p.total_count(), 10);
  EXPECT_EQ(p.types()[0].count, 5);
  EXPECT_EQ(p.types()[0].gpu_milli, 500);
  EXPECT_EQ(p.types()[0].num_gpu, 1);
  EXPECT_EQ(p.types()[1].count, 4);
  EXPECT_EQ(p.types()[1].num_gpu, 0);
  EXPECT_EQ(p.types()[1].gpu_milli, 0);
  EXPECT_EQ(p.types()[2].count, 1);
  EXPECT_EQ(p.types()[2].spec_label, "T4");
  EXPECT_EQ(p.types()[2].models, test::Models("T4"));
}

TEST(WorkloadProfileTest, KeepsTheShortestPrefixCovering95Percent) {
  std::vector<JobSpec> jobs;
  std::vector<std::string> labels;
  Add(jobs, labels, Job().Cpu(1000), 50);
  Add(jobs, labels, Job().Cpu(2000), 30);
  Add(jobs, labels, Job().Cpu(3000), 14);
  Add(jobs, labels, Job().Cpu(4000), 1);  // 95 of 100 reached here
  Add(jobs, labels, Job().Cpu(5000), 1);
  Add(jobs, labels, Job().Cpu(6000), 1);
  Add(jobs, labels, Job().Cpu(7000), 1);
  Add(jobs, labels, Job().Cpu(8000), 1);
  Add(jobs, labels, Job().Cpu(9000), 1);
  const WorkloadProfile p = WorkloadProfile::Build(jobs, labels);
  ASSERT_EQ(p.types().size(), 4u);
  EXPECT_EQ(p.total_count(), 95);
  // The fourth type is the highest key among the singletons (ties: key, highest first).
  EXPECT_EQ(p.types()[3].cpu_milli, 9000);

  jobs.pop_back();  // 99 jobs: 94.05 needed, and 94 do not cover it
  labels.pop_back();
  EXPECT_EQ(WorkloadProfile::Build(jobs, labels).types().size(), 4u);
  EXPECT_EQ(WorkloadProfile::Build(jobs, labels, 0.94).types().size(), 3u);  // 93.06 <= 94
}

TEST(WorkloadProfileTest, TiesAreOrderedByKeyHighestFirst) {
  std::vector<JobSpec> jobs;
  std::vector<std::string> labels;
  Add(jobs, labels, Job().Cpu(1000).Share(200), 2);
  Add(jobs, labels, Job().Cpu(1000).Share(300), 2);  // higher milli
  Add(jobs, labels, Job().Cpu(2000).Share(100), 2);  // higher cpu wins first
  Add(jobs, labels, Job().Cpu(1000).Gpus(1), 2);     // milli 1000, k 1
  Add(jobs, labels, Job().Cpu(1000).Share(300).Models("T4"), 2, "T4");
  Add(jobs, labels, Job().Cpu(1000).Share(300).Models("P100"), 2, "P100");
  const WorkloadProfile p = WorkloadProfile::Build(jobs, labels, 1.0);
  ASSERT_EQ(p.types().size(), 6u);
  auto key = [&](int i) {
    const JobType& t = p.types()[i];
    return std::to_string(t.cpu_milli) + "/" + std::to_string(t.gpu_milli) + "/" +
           std::to_string(t.num_gpu) + "/" + t.spec_label;
  };
  EXPECT_EQ(key(0), "2000/100/1/");
  EXPECT_EQ(key(1), "1000/1000/1/");
  EXPECT_EQ(key(2), "1000/300/1/T4");
  EXPECT_EQ(key(3), "1000/300/1/P100");
  EXPECT_EQ(key(4), "1000/300/1/");
  EXPECT_EQ(key(5), "1000/200/1/");
}

TEST(WorkloadProfileTest, CpuOnlyTypeCountsAllFreeGpu) {
  const std::vector<JobSpec> jobs = {Job().Cpu(1000)};
  const WorkloadProfile p = WorkloadProfile::Build(jobs, {}, 1.0);
  core::ClusterSnapshot c({Node().Gpus(4)});
  EXPECT_EQ(p.WeightedFragmentation(c.state(0)), 4000);
  c.Allocate(0, Job().Share(300), 0b1);
  EXPECT_EQ(p.WeightedFragmentation(c.state(0)), 3700);
}

TEST(WorkloadProfileTest, ModelMismatchCountsAllFreeGpu) {
  const std::vector<JobSpec> jobs = {Job().Cpu(0).Share(100).Models("V100M16|V100M32")};
  const std::vector<std::string> labels = {"V100M16|V100M32"};
  const WorkloadProfile p = WorkloadProfile::Build(jobs, labels, 1.0);
  core::ClusterSnapshot c({Node().Gpus(2, "T4"), Node().Gpus(2, "V100M32")});
  EXPECT_EQ(p.WeightedFragmentation(c.state(0)), 2000);
  EXPECT_EQ(p.WeightedFragmentation(c.state(1)), 0);
}

TEST(WorkloadProfileTest, PartialFitCountsGpusWithTooLittleFree) {
  // Weights 3 (sharing 500) and 1 (two whole GPUs).
  std::vector<JobSpec> jobs(3, Job().Cpu(4000).Share(500));
  jobs.push_back(Job().Cpu(0).Gpus(2));
  const WorkloadProfile p = WorkloadProfile::Build(jobs, {}, 1.0);
  ASSERT_EQ(p.total_count(), 4);
  const int32_t gpus[4] = {1000, 400, 700, 100};
  // Sharing 500: GPUs 1 and 3 are too small: 500. Two whole GPUs: only one is whole, so the
  // type cannot fit at all: 2200.
  EXPECT_EQ(p.WeightedFragmentation(test::Model("G2"), 8000, gpus, 4), 3 * 500 + 1 * 2200);
  // Without CPU for the sharing type, it cannot fit either: all 2200.
  EXPECT_EQ(p.WeightedFragmentation(test::Model("G2"), 3999, gpus, 4), 3 * 2200 + 1 * 2200);
  const int32_t two_whole[3] = {1000, 1000, 300};
  EXPECT_EQ(p.WeightedFragmentation(test::Model("G2"), 8000, two_whole, 3), 3 * 300 + 1 * 300);
  EXPECT_EQ(p.WeightedFragmentation(test::Model("G2"), 8000, gpus, 0), 0);  // no GPUs, no fragment
}

}  // namespace
}  // namespace gpufleet::sched
