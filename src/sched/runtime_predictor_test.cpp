#include "sched/runtime_predictor.h"

#include <gtest/gtest.h>

namespace gpufleet::sched {
namespace {

JobTraits Job(const std::string& user, const std::string& name, const std::string& command,
              int gpus, const std::string& queue = "default") {
  return JobTraits{user, queue, name, command, gpus};
}

TEST(RuntimePredictorTest, TheMostSpecificClassWithThreeFinishedJobsWins) {
  RuntimePredictor p(3600);
  const JobTraits train = Job("alice", "train", "python train.py --epochs 3", 4);
  EXPECT_STREQ(p.Predict(train).basis, "prior");
  EXPECT_EQ(p.Predict(train).seconds, 3600);
  // Other jobs of the queue: 100 s each.
  for (int i = 0; i < 3; ++i) p.Observe(Job("bob", "eval", "python eval.py", 1), 100);
  EXPECT_STREQ(p.Predict(train).basis, "queue");
  EXPECT_EQ(p.Predict(train).seconds, 100);
  // Two runs of alice's command are not yet enough for its own class.
  p.Observe(train, 1000);
  p.Observe(train, 2000);
  EXPECT_STREQ(p.Predict(train).basis, "queue");
  p.Observe(train, 3000);
  const RuntimePrediction own = p.Predict(train);
  EXPECT_STREQ(own.basis, "user+command+gpus");
  EXPECT_EQ(own.seconds, 2000);
  EXPECT_EQ(own.samples, 3);
  // The same name with another command: by user and name.
  EXPECT_STREQ(p.Predict(Job("alice", "train", "python train.py --epochs 9", 4)).basis,
               "user+name");
  // Another user's job: never alice's classes.
  EXPECT_STREQ(p.Predict(Job("carol", "train", "python train.py --epochs 3", 4)).basis,
               "queue+gpus");
}

TEST(RuntimePredictorTest, WithoutUsersItIsTheSimulatorsQueueAndGpuPredictor) {
  RuntimePredictor p(50);
  EXPECT_EQ(p.Predict("vc1", 2), 50);
  p.Observe("vc1", 2, 10);
  EXPECT_EQ(p.Predict("vc1", 2), 10) << "all jobs, from the first";
  p.Observe("vc1", 2, 20);
  p.Observe("vc1", 2, 30);
  p.Observe("vc2", 8, 1000);
  EXPECT_EQ(p.Predict("vc1", 2), 20);
  EXPECT_EQ(p.Predict("vc1", 4), 20) << "the queue";
  EXPECT_EQ(p.Predict("vc3", 2), 20) << "the GPU count";
  EXPECT_EQ(p.Predict("vc3", 16), 265) << "all jobs";
  EXPECT_EQ(p.observed(), 4);
}

TEST(CommandOf, JoinsArgvAndCutsAHugeOneToTheLimitWithinACharacter) {
  EXPECT_EQ(CommandOf({"python", "train.py", "--lr", "0.1"}), "python train.py --lr 0.1");
  EXPECT_EQ(CommandOf({}), "");
  // Two arguments of 128 KiB each (what a submit allows) make a key of at most 512 bytes.
  const std::string huge(128 * 1024, 'x');
  const std::string cut = CommandOf({"python", huge, huge});
  EXPECT_LE(cut.size(), kMaxCommandBytes);
  EXPECT_GT(cut.size(), kMaxCommandBytes - 8);
  EXPECT_EQ(cut.rfind("python xxx", 0), 0u);
  EXPECT_NE(CommandOf({"python", huge}), CommandOf({"python", huge.substr(0, 500)}));
  // Cut never inside a character: 2-byte characters across the limit.
  std::string two_byte;
  for (int k = 0; k < 400; ++k) two_byte += "\xc3\xa9";
  const std::string cut_utf8 = CommandOf({two_byte});
  EXPECT_LE(cut_utf8.size(), kMaxCommandBytes);
  for (std::size_t k = 0; k + 3 < cut_utf8.size(); k += 2) {
    ASSERT_EQ(static_cast<unsigned char>(cut_utf8[k]), 0xc3u) << k;
  }
  // Exactly the limit is kept whole.
  const std::string exact(kMaxCommandBytes, 'y');
  EXPECT_EQ(CommandOf({exact}), exact);
}

}  // namespace
}  // namespace gpufleet::sched
