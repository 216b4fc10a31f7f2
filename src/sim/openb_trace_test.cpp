#include "sim/openb_trace.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "testing/builders.h"

namespace gpufleet::sim {
namespace {

using test::TempFile;

const core::GpuCatalog& Catalog() { return core::GpuCatalog::Builtin(); }

constexpr const char* kNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "n0,96000,393216,8,G2\n"
    "n1,32000,131072,2,T4\n"
    "n2,64000,262144,0,\n";

constexpr const char* kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

std::string Pods(const std::string& rows) { return kPodHeader + rows; }

constexpr const char* kGoodPods =
    "p0,1000,2048,1,500,,LS,Running,10,20,11\n"
    "p1,8000,1024,2,1000,G2,LS,Running,12,,13\n"
    "p2,4000,0,0,0,,BE,Running,14,15,14\n"
    "p3,2000,0,1,1000,T4|G2,LS,Running,16,17,16\n";

// Expects `error` to hold every one of `parts`.
void ExpectMentions(const std::string& error, std::initializer_list<std::string> parts) {
  for (const auto& part : parts) EXPECT_NE(error.find(part), std::string::npos) << error;
}

std::string NodesError(const std::string& text) {
  TempFile f("nodes.csv", text);
  auto r = ReadOpenbNodes(f.path(), Catalog());
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error();
}

std::string PodsError(const std::string& text) {
  TempFile f("pods.csv", text);
  auto r = ReadOpenbPods(f.path(), Catalog());
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error();
}

TEST(OpenbTraceTest, ReadsNodesAndPods) {
  TempFile nodes("nodes.csv", kNodes), pods("pods.csv", Pods(kGoodPods));
  auto w = ReadOpenbWorkload(nodes.path(), pods.path(), Catalog());
  ASSERT_TRUE(w.ok()) << w.error();
  const OpenbWorkload& work = w.value();
  ASSERT_EQ(work.nodes.size(), 3u);
  EXPECT_EQ(work.nodes[1].name, "n1");
  EXPECT_EQ(work.nodes[1].num_gpus, 2);
  EXPECT_EQ(work.nodes[1].model, test::Model("T4"));
  EXPECT_EQ(work.nodes[2].num_gpus, 0);
  ASSERT_EQ(work.pods.size(), 4u);
  const OpenbPod& p0 = work.pods[0];
  EXPECT_EQ(p0.job.name, "p0");
  EXPECT_TRUE(p0.job.SharesGpu());
  EXPECT_EQ(p0.job.gpu_milli, 500);
  EXPECT_TRUE(p0.job.gpu_models.IsAll());
  EXPECT_EQ(p0.line, 2);
  EXPECT_EQ(p0.creation_time, 10);
  EXPECT_EQ(p0.deletion_time, 20);
  EXPECT_EQ(work.pods[1].deletion_time, -1);  // empty: still running
  EXPECT_EQ(work.pods[1].job.num_gpu, 2);
  EXPECT_EQ(work.pods[2].job.UsesGpu(), false);
  EXPECT_EQ(work.pods[3].spec_label, "T4|G2");
  EXPECT_EQ(work.pods[3].job.gpu_models, test::Models("G2|T4"));
  EXPECT_EQ(work.pods_path, pods.path());
}

TEST(OpenbTraceTest, GpuMilliOfAGpuLessPodIsIgnored) {
  TempFile f("pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,0,0,300\n");
  auto pods = ReadOpenbPods(f.path(), Catalog());
  ASSERT_TRUE(pods.ok()) << pods.error();
  EXPECT_EQ(pods.value()[0].job.gpu_milli, 0);
  EXPECT_EQ(pods.value()[0].creation_time, -1);  // no time columns
}

// Bad input: every error names the file, the line and the column.

TEST(OpenbTraceBadInputTest, MissingColumn) {
  const std::string e = NodesError("sn,cpu_milli,memory_mib,gpu\nn0,1,1,1\n");
  ExpectMentions(e, {"nodes.csv:1:", "missing column 'model'"});
  const std::string p = PodsError("name,cpu_milli,num_gpu,gpu_milli\np,1,0,0\n");
  ExpectMentions(p, {"pods.csv:1:", "missing column 'memory_mib'"});
}

TEST(OpenbTraceBadInputTest, NonNumericField) {
  const std::string e =
      PodsError(Pods("p0,1000,2048,1,500,,LS,Running,10,20,11\n"
                     "p1,lots,1024,2,1000,,LS,Running,12,,13\n"));
  ExpectMentions(e, {"pods.csv:3: column 'cpu_milli' (2): expected an integer, found 'lots'"});
  const std::string n = NodesError("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8.5,G2\n");
  ExpectMentions(n, {"nodes.csv:2: column 'gpu' (4)", "'8.5'"});
}

TEST(OpenbTraceBadInputTest, NegativeValue) {
  const std::string e = PodsError(Pods("p0,1000,-2048,1,500,,LS,Running,10,20,11\n"));
  ExpectMentions(e, {"pods.csv:2: column 'memory_mib' (3): must not be negative, found -2048"});
  const std::string n = NodesError("sn,cpu_milli,memory_mib,gpu,model\nn0,-1,393216,8,G2\n");
  ExpectMentions(n, {"nodes.csv:2: column 'cpu_milli' (2): must not be negative"});
}

TEST(OpenbTraceBadInputTest, UnknownModelInNodeList) {
  const std::string e =
      NodesError("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8,G2\nn1,1,1,2,V100\n");
  ExpectMentions(e, {"nodes.csv:3: column 'model' (5): unknown GPU model 'V100'"});
}

TEST(OpenbTraceBadInputTest, UnknownModelInGpuSpec) {
  const std::string e = PodsError(Pods("p0,1000,2048,1,500,T4|K40,LS,Running,10,20,11\n"));
  ExpectMentions(e, {"pods.csv:2: column 'gpu_spec' (6)", "unknown GPU model 'K40'"});
}

TEST(OpenbTraceBadInputTest, MoreGpusThanAnyNode) {
  TempFile nodes("nodes.csv", kNodes);
  TempFile pods("pods.csv",
                Pods(std::string(kGoodPods) + "big,1000,0,3,1000,T4,LS,Running,1,2,1\n"));
  auto w = ReadOpenbWorkload(nodes.path(), pods.path(), Catalog());
  ASSERT_FALSE(w.ok());
  ExpectMentions(w.error(), {pods.path() + ":6: column 'num_gpu'", "'big' asks for 3 GPUs",
                             "of its GPU models has more than 2"});
}

TEST(OpenbTraceBadInputTest, MoreGpusThanAnyNodeNamesTheRightColumn) {
  // Columns in another order: the message must point at num_gpu where it really is.
  TempFile nodes("nodes.csv", kNodes);
  TempFile pods("pods.csv", "num_gpu,name,cpu_milli,memory_mib,gpu_milli\n9,big,1000,0,1000\n");
  auto w = ReadOpenbWorkload(nodes.path(), pods.path(), Catalog());
  ASSERT_FALSE(w.ok());
  // It is the first column here; the message must not claim the openb position (4).
  ExpectMentions(w.error(), {pods.path() + ":2: column 'num_gpu': pod 'big' asks for 9 GPUs",
                             "has more than 8"});
}

TEST(OpenbTraceBadInputTest, InconsistentGpuRequest) {
  ExpectMentions(PodsError(Pods("p,1,1,1,1001,,LS,Running,1,2,1\n")),
                 {"pods.csv:2: column 'gpu_milli' (5)", "at most 1000"});
  ExpectMentions(PodsError(Pods("p,1,1,2,500,,LS,Running,1,2,1\n")),
                 {"pods.csv:2: column 'gpu_milli' (5)", "whole GPUs"});
  ExpectMentions(PodsError(Pods("p,1,1,1,0,,LS,Running,1,2,1\n")),
                 {"pods.csv:2: column 'gpu_milli' (5)", "must be positive"});
  ExpectMentions(PodsError(Pods("p,1,1," + std::to_string(core::kMaxGpusPerNode + 1) +
                                ",1000,,LS,Running,1,2,1\n")),
                 {"pods.csv:2: column 'num_gpu' (4)"});
}

TEST(OpenbTraceBadInputTest, DuplicateNames) {
  ExpectMentions(PodsError(Pods("p,1,1,0,0,,LS,Running,1,2,1\np,1,1,0,0,,LS,Running,1,2,1\n")),
                 {"pods.csv:3: column 'name' (1): duplicate pod name 'p'"});
  ExpectMentions(NodesError("sn,cpu_milli,memory_mib,gpu,model\nn,1,1,1,T4\nn,1,1,1,T4\n"),
                 {"nodes.csv:3: column 'sn' (1): duplicate node name 'n'"});
}

TEST(OpenbTraceTest, ParsesTextAsTheFileReadersDo) {
  auto nodes = ParseOpenbNodes(kNodes, "nodes.csv", Catalog());
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  ASSERT_EQ(nodes.value().size(), 3u);
  EXPECT_EQ(nodes.value()[0].num_gpus, 8);
  auto pods = ParseOpenbPods(Pods(kGoodPods), "pods.csv", Catalog());
  ASSERT_TRUE(pods.ok()) << pods.error();
  ASSERT_EQ(pods.value().size(), 4u);
  EXPECT_EQ(pods.value()[1].line, 3);
  EXPECT_EQ(pods.value()[0].deletion_time, 20);
  auto bad = ParseOpenbPods(Pods("p,1,1,1,1001,,LS,Running,1,2,1\n"), "mem.csv", Catalog());
  ASSERT_FALSE(bad.ok());
  ExpectMentions(bad.error(), {"mem.csv:2: column 'gpu_milli'"});
  EXPECT_FALSE(ParseOpenbNodes("", "empty.csv", Catalog()).ok());
}

// Order files.

class OrderFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TempFile nodes("nodes.csv", kNodes), pods("pods.csv", Pods(kGoodPods));
    auto w = ReadOpenbWorkload(nodes.path(), pods.path(), Catalog());
    ASSERT_TRUE(w.ok()) << w.error();
    workload_ = std::move(w).value();
  }
  std::string Error(const std::string& text) {
    TempFile order("order.txt", text);
    auto r = ReadOrderFile(order.path(), workload_);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.error();
  }
  OpenbWorkload workload_;
};

TEST_F(OrderFileTest, ReadsPodsClonesAndRanks) {
  TempFile order("order.txt",
                 "# comment\npod p2\npod p0\npod p0-tuned-1\r\npod p3-tuned-12\n"
                 "node 2 n0\nnode 0 n1\nnode 1 n2\n");
  auto r = ReadOrderFile(order.path(), workload_);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().pods, (std::vector<int>{2, 0, 0, 3}));
  EXPECT_EQ(r.value().node_rank, (std::vector<uint32_t>{2, 0, 1}));
}

TEST_F(OrderFileTest, WithoutNodeLinesNodesKeepFileOrder) {
  TempFile order("order.txt", "pod p1\n");
  auto r = ReadOrderFile(order.path(), workload_);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().node_rank, (std::vector<uint32_t>{0, 1, 2}));
}

TEST_F(OrderFileTest, UnknownPod) {
  ExpectMentions(Error("pod p0\n\npod nobody-tuned-3\n"),
                 {"order.txt:3: column 2: unknown pod 'nobody-tuned-3'", workload_.pods_path});
}

TEST_F(OrderFileTest, UnknownNode) {
  ExpectMentions(Error("pod p0\nnode 0 n0\nnode 1 n9\n"),
                 {"order.txt:3: column 3: unknown node 'n9'"});
}

TEST_F(OrderFileTest, MalformedLine) {
  ExpectMentions(Error("pod p0\npods p1\n"), {"order.txt:2: column 1: expected 'pod NAME'"});
  ExpectMentions(Error("pod p0\nnode 1\n"), {"order.txt:2:", "expected 'node RANK NAME'"});
  ExpectMentions(Error("pod p0\nnode x n0\n"), {"order.txt:2: column 2: node rank", "found 'x'"});
  ExpectMentions(Error("pod p0\nnode 3 n0\n"),
                 {"order.txt:2: column 2: node rank must be an integer in 0..2"});
}

TEST_F(OrderFileTest, RanksMustBeAPermutation) {
  ExpectMentions(Error("pod p0\nnode 0 n0\nnode 0 n1\nnode 1 n2\n"), {"order.txt:3:", "duplicate"});
  ExpectMentions(Error("pod p0\nnode 0 n0\nnode 1 n1\n"), {"order.txt", "node 'n2' has no rank"});
}

TEST_F(OrderFileTest, ParsesAStream) {
  std::istringstream in("pod p3\nnode 0 n2\nnode 1 n1\nnode 2 n0\n");
  auto r = ParseOrderFile(in, "stream", workload_);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().pods, (std::vector<int>{3}));
  EXPECT_EQ(r.value().node_rank, (std::vector<uint32_t>{2, 1, 0}));
  EXPECT_EQ(r.value().source, "stream");
}

TEST_F(OrderFileTest, NoPodsOrNoFile) {
  ExpectMentions(Error("# nothing\n"), {"order.txt: no 'pod' lines"});
  auto r = ReadOrderFile("/nonexistent/order.txt", workload_);
  ASSERT_FALSE(r.ok());
  ExpectMentions(r.error(), {"/nonexistent/order.txt: cannot open"});
}

}  // namespace
}  // namespace gpufleet::sim
