#include "controller/node_registry.h"

#include <gtest/gtest.h>

namespace gpufleet::controller {
namespace {

net::Heartbeat Beat(const std::string& node, int gpus, const std::string& address = "") {
  net::Heartbeat b;
  b.node = node;
  b.gpus = gpus;
  b.gpu_model = "G2";
  b.address = address;
  return b;
}

TEST(NodeRegistry, NodesKeepTheirIndexAndTheLocalNameIsMarked) {
  NodeRegistry nodes("local", 100);
  EXPECT_EQ(nodes.IndexOf("a"), 0);
  EXPECT_EQ(nodes.IndexOf("local"), 1);
  EXPECT_EQ(nodes.IndexOf("a"), 0);
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_FALSE(nodes[0].local);
  EXPECT_TRUE(nodes[1].local);
  EXPECT_FALSE(nodes[0].alive) << "named, not heard from";
  EXPECT_FALSE(nodes[0].known);
  EXPECT_NE(nodes[0].epoch, nodes[1].epoch);
  EXPECT_GE(nodes[0].epoch, 100);
}

TEST(NodeRegistry, AHeartbeatRegistersAndOnlyChangesThatMatterAskForANewSnapshot) {
  NodeRegistry nodes("", 1);
  const int a = nodes.IndexOf("a");
  EXPECT_TRUE(nodes.Heard(a, Beat("a", 8, "10.0.0.1"), false, 1000));
  EXPECT_TRUE(nodes[a].alive);
  EXPECT_TRUE(nodes[a].known);
  EXPECT_EQ(nodes[a].spec.num_gpus, 8);
  EXPECT_EQ(nodes[a].address, "10.0.0.1");
  EXPECT_EQ(nodes[a].first_seen_ms, 1000);
  EXPECT_FALSE(nodes.Heard(a, Beat("a", 8, "10.0.0.1"), false, 2000));
  EXPECT_EQ(nodes[a].last_seen_ms, 2000);
  EXPECT_EQ(nodes[a].first_seen_ms, 1000);
  // A busy node keeps its size until its ranks end; an idle one takes the new one.
  EXPECT_FALSE(nodes.Heard(a, Beat("a", 4, "10.0.0.1"), true, 3000));
  EXPECT_EQ(nodes[a].spec.num_gpus, 8);
  EXPECT_TRUE(nodes.Heard(a, Beat("a", 4, "10.0.0.1"), false, 4000));
  EXPECT_EQ(nodes[a].spec.num_gpus, 4);
  EXPECT_TRUE(nodes.Heard(a, Beat("a", 4, "10.0.0.2"), false, 5000)) << "a new address";
  EXPECT_EQ(nodes[a].address, "10.0.0.2");
  const int b = nodes.IndexOf("b");
  nodes.Heard(b, Beat("b", 2), false, 5000);
  EXPECT_EQ(nodes[b].address, "b") << "no address: its name";
  EXPECT_EQ(nodes.KnownSpecs().size(), 2u);
}

// Found by a review: the reported model name was compared with the catalog's name for it, so a
// node that reports NVML's name (every real one) or a model the catalog does not know asked for a
// new snapshot, and a store write, at every idle beat.
TEST(NodeRegistry, AModelNameTheCatalogSpellsOtherwiseAsksForNoNewSnapshotOnEachBeat) {
  for (const char* model : {"NVIDIA H100 80GB HBM3", "a model nobody knows"}) {
    NodeRegistry nodes("", 1);
    const int a = nodes.IndexOf("a");
    net::Heartbeat beat = Beat("a", 8);
    beat.gpu_model = model;
    EXPECT_TRUE(nodes.Heard(a, beat, false, 1000)) << model;
    EXPECT_FALSE(nodes.Heard(a, beat, false, 2000)) << model;
    beat.gpu_model = "G2";
    const bool same_model = nodes[a].model_name == "G2";
    EXPECT_EQ(nodes.Heard(a, beat, false, 3000), !same_model) << model;
  }
}

TEST(NodeRegistry, ASilentNodePastItsLeaseIsLostWithANewEpochAndComesBackAlive) {
  NodeRegistry nodes("", 1);
  const int a = nodes.IndexOf("a");
  const int b = nodes.IndexOf("b");
  nodes.Heard(a, Beat("a", 8), false, 1000);
  nodes.Heard(b, Beat("b", 8), false, 6000);
  EXPECT_TRUE(nodes.PastLease(11000, 10000).empty());
  EXPECT_EQ(nodes.PastLease(11001, 10000), std::vector<int>{a});
  const int64_t epoch = nodes[a].epoch;
  nodes.Lose(a);
  EXPECT_FALSE(nodes[a].alive);
  EXPECT_GT(nodes[a].epoch, epoch);
  EXPECT_TRUE(nodes.PastLease(11001, 10000).empty()) << "lost once";
  EXPECT_EQ(nodes.Record(a, 11001).state, "LOST");
  EXPECT_TRUE(nodes.Heard(a, Beat("a", 8), false, 12000));
  EXPECT_TRUE(nodes[a].alive);
  EXPECT_EQ(nodes.Record(a, 12000).state, "READY");
}

TEST(NodeRegistry, ARecordedNodeIsExpectedBackForOneLeaseUnlessItWasLost) {
  NodeRegistry nodes("", 1);
  store::NodeRecord ready;
  ready.name = "a";
  ready.gpus = 4;
  ready.gpu_model = "G2";
  ready.state = "READY";
  ready.drains.push_back({2, "fan", "root", 5});
  store::NodeRecord lost = ready;
  lost.name = "b";
  lost.state = "LOST";
  nodes.Restore(ready, 50000);
  nodes.Restore(lost, 50000);
  const int a = nodes.IndexOf("a");
  const int b = nodes.IndexOf("b");
  EXPECT_TRUE(nodes[a].known);
  EXPECT_FALSE(nodes[a].alive);
  EXPECT_TRUE(nodes[a].pending_return);
  EXPECT_EQ(nodes[a].drains.count(2), 1u);
  EXPECT_FALSE(nodes[b].pending_return);
  EXPECT_EQ(nodes.PastLease(60001, 10000), std::vector<int>{a});
}

}  // namespace
}  // namespace gpufleet::controller
