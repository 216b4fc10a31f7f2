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

}  // namespace
}  // namespace fake_nvml
