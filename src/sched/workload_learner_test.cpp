#include "sched/workload_learner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/builders.h"

namespace gpufleet::sched {
namespace {

using test::Job;

TEST(WorkloadLearnerTest, LearnsTheProfileOfWhatItObserved) {
  WorkloadLearner learner;
  EXPECT_FALSE(learner.Refresh()) << "nothing observed: nothing to build";
  for (int i = 0; i < 3; ++i) learner.Observe(Job("a").Cpu(4000).Gpus(1), "");
  learner.Observe(Job("b").Cpu(1000).Share(500).Models("T4"), "T4");
  ASSERT_TRUE(learner.Refresh());
  const WorkloadProfile& p = learner.profile();
  ASSERT_EQ(p.types().size(), 2u);
  EXPECT_EQ(p.total_count(), 4);
  EXPECT_EQ(p.types()[0].count, 3);
  EXPECT_EQ(p.types()[0].num_gpu, 1);
  EXPECT_EQ(p.types()[1].gpu_milli, 500);
  EXPECT_EQ(p.types()[1].spec_label, "T4");
  EXPECT_FALSE(learner.Refresh()) << "nothing new since the last build";
}

TEST(WorkloadLearnerTest, RebuildsAfterAnEighthMoreJobs) {
  WorkloadLearner learner;
  for (int i = 0; i < 80; ++i) learner.Observe(Job("a").Gpus(1), "");
  ASSERT_TRUE(learner.Refresh());
  for (int i = 0; i < 9; ++i) learner.Observe(Job("b").Gpus(2), "");
  EXPECT_FALSE(learner.Refresh()) << "9 new of 80: not yet";
  learner.Observe(Job("b").Gpus(2), "");
  EXPECT_TRUE(learner.Refresh()) << "10 new of 80";
  EXPECT_EQ(learner.profile().total_count(), 90);
}

TEST(WorkloadLearnerTest, ForgetsJobsOlderThanItsWindow) {
  WorkloadLearner learner(4);
  for (int i = 0; i < 4; ++i) learner.Observe(Job("old").Gpus(8), "");
  for (int i = 0; i < 4; ++i) learner.Observe(Job("new").Share(250), "");
  ASSERT_TRUE(learner.Refresh());
  ASSERT_EQ(learner.profile().types().size(), 1u);
  EXPECT_EQ(learner.profile().types()[0].gpu_milli, 250);
  EXPECT_EQ(learner.observed(), 8u);
}

}  // namespace
}  // namespace gpufleet::sched
