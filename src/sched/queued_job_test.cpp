#include "sched/queued_job.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cluster.h"
#include "core/gpu_catalog.h"

namespace gpufleet::sched {
namespace {

core::NodeSpec Node(const char* model, int gpus, int64_t cpu_milli = 64000,
                    int64_t memory_mib = 512 * 1024) {
  core::NodeSpec n;
  n.name = model;
  n.num_gpus = gpus;
  n.model = core::GpuCatalog::Builtin().Find(model).value();
  n.cpu_milli = cpu_milli;
  n.memory_mib = memory_mib;
  return n;
}

JobAsk Ask(int total_gpus, int nodes = 0) {
  JobAsk ask;
  ask.id = 7;
  ask.total_gpus = total_gpus;
  ask.nodes = nodes;
  ask.queue = "team";
  return ask;
}

TEST(BuildQueuedJob, GivesEachKindOfPolicyItsEstimateBoundedByTheTimeLimit) {
  JobRunTime known;
  known.predicted_s = 1000;
  known.true_s = 400;
  EXPECT_TRUE(std::isnan(BuildQueuedJob(Ask(2), Estimates::kNone, known).estimate_s));
  EXPECT_DOUBLE_EQ(BuildQueuedJob(Ask(2), Estimates::kPredicted, known).estimate_s, 1000);
  EXPECT_DOUBLE_EQ(BuildQueuedJob(Ask(2), Estimates::kOracle, known).estimate_s, 400);
  JobAsk limited = Ask(2);
  limited.time_limit_s = 600;
  EXPECT_DOUBLE_EQ(BuildQueuedJob(limited, Estimates::kNone, known).estimate_s, 600);
  EXPECT_DOUBLE_EQ(BuildQueuedJob(limited, Estimates::kPredicted, known).estimate_s, 600);
  // After 300 s on 2 GPUs in an earlier run, 700 s of the prediction are left.
  known.attained_gpu_s = 600;
  known.waiting_since_s = 50;
  const QueuedJob q = BuildQueuedJob(Ask(2), Estimates::kPredicted, known);
  EXPECT_DOUBLE_EQ(q.estimate_s, 700);
  EXPECT_DOUBLE_EQ(q.attained_gpu_s, 600);
  EXPECT_EQ(q.waiting_since_s, 50);
  EXPECT_EQ(q.queue, "team");
  EXPECT_EQ(q.nodes, 0);
  EXPECT_EQ(BuildQueuedJob(Ask(8, 2), Estimates::kNone, {}).nodes, 2);
  EXPECT_EQ(BuildQueuedJob(Ask(4, 1), Estimates::kNone, {}).nodes, 0);  // one node: "as few"
}

// Found by a review: nodes the fleet may grow by were counted pooled over autoscaler groups, so a
// gang that only two groups together could hold was accepted, though the autoscaler buys a gang
// in one group; its reservation then held the queue behind it for good.
TEST(NeverFits, GrowthCountsOneAutoscalerGroupAtATime) {
  auto q = [](JobAsk ask) { return BuildQueuedJob(ask, Estimates::kNone, {}); };
  auto grown = [](const char* group, int count) {
    std::vector<core::NodeSpec> nodes(static_cast<size_t>(count), Node("V100M32", 8));
    for (core::NodeSpec& n : nodes) n.name = group;
    return nodes;
  };
  std::vector<core::NodeSpec> growth = grown("v100-a", 2);
  for (const core::NodeSpec& n : grown("v100-b", 2)) growth.push_back(n);
  const std::vector<core::NodeSpec> existing = {Node("V100M32", 8)};
  const std::vector<core::NodeSpec> none;
  EXPECT_FALSE(NeverFits(q(Ask(16, 2)), none, growth, false, "")) << "one group holds it";
  auto pooled = NeverFits(q(Ask(24, 3)), none, growth, false, "");
  ASSERT_TRUE(pooled) << "only both groups together hold it";
  EXPECT_EQ(pooled->field, "nodes");
  EXPECT_FALSE(NeverFits(q(Ask(24, 3)), existing, growth, false, ""))
      << "a node the cluster has, and one group's two";
  EXPECT_FALSE(NeverFits(q(Ask(24, 3)), none, grown("v100-a", 3), false, ""));
  // The cluster snapshot's form agrees.
  core::ClusterSnapshot empty;
  EXPECT_TRUE(NeverFits(q(Ask(24, 3)), empty, growth, false));
  EXPECT_FALSE(NeverFits(q(Ask(16, 2)), empty, growth, false));
}

TEST(NeverFits, NamesTheFieldThatCanNeverBeMet) {
  const std::vector<core::NodeSpec> nodes = {Node("A100-80GB", 4), Node("V100M32", 8), Node("V100M32", 8)};
  auto q = [](JobAsk ask) { return BuildQueuedJob(ask, Estimates::kNone, {}); };
  EXPECT_FALSE(NeverFits(q(Ask(8)), nodes, false));
  EXPECT_FALSE(NeverFits(q(Ask(16, 2)), nodes, false));

  auto too_big = NeverFits(q(Ask(9)), nodes, false);
  ASSERT_TRUE(too_big);
  EXPECT_EQ(too_big->field, "gpus");
  EXPECT_EQ(too_big->code, core::ErrorCode::kInfeasible);
  EXPECT_NE(too_big->message.find("gpus: asks 9 GPUs per node; the largest node has 8"),
            std::string::npos)
      << too_big->message;
  // Spread over nodes (replay), 9 GPUs fit; 21 do not.
  EXPECT_FALSE(NeverFits(q(Ask(9)), nodes, true));
  auto spread = NeverFits(q(Ask(21)), nodes, true);
  ASSERT_TRUE(spread);
  EXPECT_NE(spread->message.find("asks for 21 GPUs; the cluster has 20"), std::string::npos);
  // Found by a review: spread, each node gives only the GPUs its CPU covers (as PlaceGang takes
  // them), and a job short of CPU on every node was judged to fit, then waited for good at the
  // head of a strict queue.
  JobAsk cpu_spread = Ask(16);
  cpu_spread.cpu_milli_per_gpu = 20000;  // nodes of 64 CPUs give 3 such GPUs each: 9
  auto short_spread = NeverFits(q(cpu_spread), nodes, true);
  ASSERT_TRUE(short_spread);
  EXPECT_EQ(short_spread->field, "cpu");
  EXPECT_NE(short_spread->message.find("can give that to 9 GPUs, not 16"), std::string::npos)
      << short_spread->message;
  cpu_spread.total_gpus = 9;
  EXPECT_FALSE(NeverFits(q(cpu_spread), nodes, true));

  // 8 A100s: the cluster has nodes of 8, but not of that model.
  JobAsk a100 = Ask(8);
  a100.gpu_models = core::GpuCatalog::Builtin().ParseSpec("A100-80GB").value();
  auto model_small = NeverFits(q(a100), nodes, false, "A100-80GB");
  ASSERT_TRUE(model_small);
  EXPECT_EQ(model_small->field, "gpus");
  EXPECT_NE(model_small->message.find("the largest node with A100-80GB GPUs has 4"), std::string::npos)
      << model_small->message;
  JobAsk h100 = Ask(1);
  h100.gpu_models = core::GpuCatalog::Builtin().ParseSpec("H100-80GB").value();
  auto absent = NeverFits(q(h100), nodes, false, "H100");
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->field, "gpu_type");
  EXPECT_NE(absent->message.find("no node has H100 GPUs (nodes have: A100-80GB, V100M32)"),
            std::string::npos)
      << absent->message;

  auto three = NeverFits(q(Ask(24, 3)), nodes, false);
  ASSERT_TRUE(three);
  EXPECT_EQ(three->field, "nodes");

  JobAsk hungry = Ask(2);
  hungry.cpu_milli_per_gpu = 40000;  // 80 CPUs for 2 GPUs; nodes have 64
  auto cpu = NeverFits(q(hungry), nodes, false);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->field, "cpu");
  JobAsk big_memory = Ask(1);
  big_memory.memory_mib_per_gpu = 1024 * 1024;
  auto memory = NeverFits(q(big_memory), nodes, false);
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->field, "memory");

  JobAsk share = Ask(1);
  share.gpu_milli = 250;
  EXPECT_FALSE(NeverFits(q(share), nodes, false));
  EXPECT_FALSE(NeverFits(q(Ask(1)), std::vector<core::NodeSpec>{Node("V100M32", 1)}, false));
}

}  // namespace
}  // namespace gpufleet::sched
