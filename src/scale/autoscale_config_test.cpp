#include "scale/autoscale_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpufleet::scale {
namespace {

const char* kGood = R"(
[[groups]]
name = "v100-8"
gpu_model = "V100M32"
gpus = 8
cpu_cores = 64
memory_gib = 512
price_per_hour = 24.48
spot_price_per_hour = 7.34
min = 0
max = 16
boot_s = 180

[[groups]]
name = "a100-8"
gpu_model = "A100-80GB"
gpus = 8
cpu_cores = 96
memory_gib = 1152
price_per_hour = 40.96
min = 1
max = 4
boot_s = 240
priority = 3

[policy]
scale_down_unneeded_s = 300
max_spend_per_hour = 500
expander = "least-waste"
consolidation = true
consolidation_min_saving_s = 900

[provider]
kind = "exec"
script = "/opt/cloud.sh"
timeout_s = 60
)";

core::Result<AutoscaleConfig> Parse(const std::string& text, bool provider = true) {
  return ParseAutoscaleToml(text, "scale.toml", core::GpuCatalog::Builtin(), provider);
}

TEST(AutoscaleConfig, ReadsGroupsPolicyAndProvider) {
  auto c = Parse(kGood);
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_EQ(c.value().groups.size(), 2u);
  const NodeGroup& g = c.value().groups[0];
  EXPECT_EQ(g.name, "v100-8");
  EXPECT_EQ(g.gpus, 8);
  EXPECT_EQ(g.cpu_milli, 64000);
  EXPECT_EQ(g.memory_mib, 512 * 1024);
  EXPECT_DOUBLE_EQ(g.spot_price_per_hour, 7.34);
  EXPECT_EQ(g.boot_s, 180);
  EXPECT_EQ(c.value().groups[1].priority, 3);
  EXPECT_FALSE(c.value().groups[1].HasSpot());
  EXPECT_EQ(c.value().policy.scale_down_unneeded_s, 300);
  EXPECT_EQ(c.value().policy.expander, Expander::kLeastWaste);
  EXPECT_DOUBLE_EQ(c.value().policy.max_spend_per_hour, 500);
  EXPECT_TRUE(c.value().policy.consolidation);
  EXPECT_EQ(c.value().policy.consolidation_min_saving_s, 900);
  EXPECT_EQ(c.value().provider.kind, "exec");
  EXPECT_EQ(c.value().provider.timeout_s, 60);
  EXPECT_EQ(c.value().FindGroup("a100-8"), 1);
  EXPECT_EQ(c.value().FindGroup("nope"), -1);
}

// Each bad edit of the good file, and the field its error must name.
TEST(AutoscaleConfig, BadInputNamesTheField) {
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{"gpus = 8\ncpu_cores = 64", "gpus = 99\ncpu_cores = 64"}, "gpus"},
      {{"\"V100M32\"", "\"V999\""}, "gpu_model"},
      {{"name = \"v100-8\"", "name = \"V100 8\""}, "name"},
      {{"name = \"a100-8\"", "name = \"v100-8\""}, "named twice"},
      {{"max = 16", "max = -1"}, "max"},
      {{"min = 1", "min = 9"}, "min"},
      {{"price_per_hour = 24.48", "price_per_hour = \"cheap\""}, "price_per_hour"},
      {{"price_per_hour = 24.48", "price_per_hour = 0"}, "price_per_hour"},
      // Found by a review: a positive but tiny price made the planner's node count infinite.
      {{"price_per_hour = 24.48", "price_per_hour = 1e-300"}, "price_per_hour"},
      {{"spot_price_per_hour = 7.34", "spot_price_per_hour = 1e-300"}, "spot_price_per_hour"},
      {{"spot_price_per_hour = 7.34", "spot_price_per_hour = 99.0"}, "spot_price_per_hour"},
      {{"expander = \"least-waste\"", "expander = \"random\""}, "expander"},
      {{"boot_s = 180", "boot_s = 180\ncolour = 1"}, "colour"},
      {{"kind = \"exec\"", "kind = \"ssh\""}, "provider.kind"},
      {{"script = \"/opt/cloud.sh\"", "script = \"cloud.sh\""}, "provider.script"},
      {{"max_spend_per_hour = 500", "max_spend_per_hour = 10"}, "max_spend_per_hour"},
      {{"boot_s = 240", "boot_s = 2.5"}, "boot_s"},
      {{"consolidation = true", "consolidation = 1"}, "consolidation"},
      {{"consolidation = true", "consolidation = false"}, "consolidation_min_saving_s"},
      {{"saving_s = 900", "saving_s = -1"}, "consolidation_min_saving_s"},
  };
  for (const auto& [edit, field] : cases) {
    std::string text = kGood;
    const size_t at = text.find(edit.first);
    ASSERT_NE(at, std::string::npos) << edit.first;
    text.replace(at, edit.first.size(), edit.second);
    auto c = Parse(text);
    ASSERT_FALSE(c.ok()) << edit.second;
    EXPECT_NE(c.error().find(field), std::string::npos) << c.error();
  }
}

TEST(AutoscaleConfig, ConsolidationIsOffByDefault) {
  std::string text = kGood;
  text.erase(text.find("consolidation = true"),
             text.find("[provider]") - text.find("consolidation = true"));
  auto c = Parse(text);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_FALSE(c.value().policy.consolidation);
  EXPECT_EQ(c.value().policy.consolidation_min_saving_s, 600);
}

TEST(AutoscaleConfig, MissingPiecesAreNamed) {
  EXPECT_NE(Parse("").error().find("groups"), std::string::npos);
  std::string no_provider = kGood;
  no_provider.resize(no_provider.find("[provider]"));
  EXPECT_NE(Parse(no_provider).error().find("provider"), std::string::npos);
  EXPECT_TRUE(Parse(no_provider, false).ok());
  std::string no_boot = kGood;
  no_boot.replace(no_boot.find("boot_s = 180"), 12, "");
  EXPECT_NE(Parse(no_boot).error().find("boot_s"), std::string::npos);
  EXPECT_NE(Parse("x = \"\xc3\xa9\"").error().find("non-ASCII"), std::string::npos);
  EXPECT_NE(Parse("[[groups]\n").error().find("malformed"), std::string::npos);
}

TEST(AutoscaleConfig, TheShippedExamplesParse) {
  for (const char* name : {"local.example.toml", "exec.example.toml"}) {
    const std::string path = std::string(GPUFLEET_SOURCE_DIR) + "/data/autoscale/" + name;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream text;
    text << in.rdbuf();
    auto c = Parse(text.str());
    EXPECT_TRUE(c.ok()) << path << ": " << c.error();
  }
  // The simulator's (no provider).
  for (const char* name : {"philly-ca-baseline.toml", "philly-gpufleet.toml",
                           "philly-gpufleet-spot.toml", "philly-gpufleet-consolidate.toml"}) {
    const std::string path = std::string(GPUFLEET_SOURCE_DIR) + "/data/autoscale/" + name;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream text;
    text << in.rdbuf();
    auto c = Parse(text.str(), /*provider=*/false);
    ASSERT_TRUE(c.ok()) << path << ": " << c.error();
    EXPECT_EQ(c.value().policy.consolidation,
              std::string(name).find("consolidate") != std::string::npos);
  }
}

// Found by a review: a gang the spend cap could never buy was accepted, counted on nodes that
// would never come, and held the queue's reservation for good.
TEST(GrowthNodeCountTest, TheSpendCapBoundsWhatAGroupMayGrowTo) {
  NodeGroup g;
  g.max = 8;
  g.price_per_hour = 55.84;
  ScalePolicy policy;
  EXPECT_EQ(GrowthNodeCount(g, policy), 8) << "no cap: the group's max";
  policy.max_spend_per_hour = 300;
  EXPECT_EQ(GrowthNodeCount(g, policy), 5) << "300 / 55.84 buys 5";
  policy.max_spend_per_hour = 55.84 * 3;
  EXPECT_EQ(GrowthNodeCount(g, policy), 3) << "exactly three, not two by rounding";
  g.spot_price_per_hour = 20;
  EXPECT_EQ(GrowthNodeCount(g, policy), 8) << "at the spot price the cap buys 8";
  EXPECT_EQ(GrowthNodeCount(g, policy, /*spot=*/false), 3) << "on demand, still three";
  g.max = 1000;
  policy.max_spend_per_hour = std::numeric_limits<double>::infinity();
  EXPECT_EQ(GrowthNodeCount(g, policy), 256);
  policy.max_spend_per_hour = 0;
  EXPECT_EQ(GrowthNodeCount(g, policy), 0);
}

}  // namespace
}  // namespace gpufleet::scale
