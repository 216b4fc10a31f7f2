#include "scenario.h"

#include <gtest/gtest.h>

#include <string>

namespace fake_nvml {
namespace {

std::string ErrorOf(std::string_view text) {
  try {
    ParseScenario(text);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(Scenario, ParsesGpusAndFillsTheTopology) {
  Scenario s = ParseScenario(R"({"gpus": [{"name": "A"}, {"name": "B"}]})");
  ASSERT_EQ(s.gpus.size(), 2U);
  ASSERT_EQ(s.topology.size(), 2U);
  EXPECT_EQ(s.topology[0].size(), 2U);
}

TEST(Scenario, EveryMalformedTextIsAScenarioError) {
  EXPECT_NE(ErrorOf("{").find("invalid JSON"), std::string::npos);
  // Found by fuzz/fake_nvml_scenario_fuzz: a number too large for a double escaped as
  // nlohmann's out_of_range exception instead of a ScenarioError.
  EXPECT_NE(ErrorOf("9999999E999999999").find("invalid JSON"), std::string::npos)
      << ErrorOf("9999999E999999999");
  EXPECT_NE(ErrorOf(R"({"time_scale": 1e400})").find("invalid JSON"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({"colour": 1})").find("colour"), std::string::npos);
}

TEST(Scenario, NvLinksLeadToAGpuOrAnNvSwitch) {
  Scenario s = ParseScenario(R"({"gpus": [
      {"name": "A", "nvlinks": [{"link": 0, "peer_gpu": 1}, {"link": 1, "peer_switch": 3}]},
      {"name": "B", "nvlinks": [{"link": 0, "peer_gpu": 0}]}]})");
  ASSERT_EQ(s.gpus[0].nvlinks.size(), 2U);
  EXPECT_EQ(s.gpus[0].nvlinks[0].peer_gpu, 1);
  EXPECT_EQ(s.gpus[0].nvlinks[0].peer_switch, -1);
  EXPECT_EQ(s.gpus[0].nvlinks[1].peer_gpu, -1);
  EXPECT_EQ(s.gpus[0].nvlinks[1].peer_switch, 3);
  EXPECT_NE(ErrorOf(R"({"gpus": [{"nvlinks": [{"link": 0, "peer_gpu": 1, "peer_switch": 0}]},
                                  {}]})")
                .find("gpus[0].nvlinks[0].peer_switch: a link has one far end"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"gpus": [{"nvlinks": [{"link": 0, "peer_switch": 64}]}]})")
                .find("gpus[0].nvlinks[0].peer_switch"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(R"({"gpus": [{"nvlinks": [{"link": 0, "peer_swich": 1}]}]})").find("peer_swich"),
      std::string::npos);
}

}  // namespace
}  // namespace fake_nvml
