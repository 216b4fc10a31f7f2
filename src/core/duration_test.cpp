#include "core/duration.h"

#include <gtest/gtest.h>

namespace gpufleet::core {
namespace {

TEST(DurationTest, ReadsClockFormsAndRefusesMoreThanThreeParts) {
  EXPECT_EQ(ParseDurationSeconds("1:30"), 90);
  EXPECT_EQ(ParseDurationSeconds("2:00:01"), 7201);
  EXPECT_EQ(ParseDurationSeconds("90m"), 5400);
  EXPECT_EQ(ParseDurationSeconds("1:2:3:4"), std::nullopt);
  // Fourteen parts of nine digits multiplied past int64 before the part count was checked
  // (undefined behaviour, reachable through the API's ?since=).
  std::string many = "999999999";
  for (int i = 0; i < 13; ++i) many += ":999999999";
  EXPECT_EQ(ParseDurationSeconds(many), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds("0:0"), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds("367d"), std::nullopt);
}

}  // namespace
TEST(DurationText, WholeDaysOrHoursElseMinutesElseSeconds) {
  EXPECT_EQ(DurationText(30LL * 24 * 3600'000), "30 d");
  EXPECT_EQ(DurationText(3 * 3600'000), "3 h");
  EXPECT_EQ(DurationText(90 * 60'000), "90 min");
  EXPECT_EQ(DurationText(45'000), "45 s");
}

}  // namespace gpufleet::core
