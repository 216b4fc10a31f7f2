#include "core/host_usage.h"

#include <gtest/gtest.h>

namespace gpufleet::core {
namespace {

TEST(HostUsageTest, NamesRoundTripAndUnmeasuredFiguresAreListedAsMissing) {
  for (UsageSource s : {UsageSource::kNone, UsageSource::kCgroupV2, UsageSource::kCgroupV1,
                        UsageSource::kProc}) {
    UsageSource back = UsageSource::kNone;
    ASSERT_TRUE(ParseUsageSource(UsageSourceName(s), back));
    EXPECT_EQ(back, s);
  }
  UsageSource ignored;
  EXPECT_FALSE(ParseUsageSource("cgroup-v3", ignored));
  EXPECT_EQ(UsageFigureName(UsageFigure::kCpuUsageUs), "cpu_usage_us");
  EXPECT_EQ(UsageFigureName(UsageFigure::kMemoryPressureSomeUs), "memory_pressure_some_us");

  HostUsage u;
  EXPECT_EQ(u.Missing().size(), kUsageFigures);
  u.source = UsageSource::kCgroupV1;
  for (std::size_t i = 0; i < kUsageFigures; ++i) u.figures[i] = 1;
  u.set(UsageFigure::kCpuPressureSomeUs, -1);
  EXPECT_EQ(u.Missing(), std::vector<std::string>{"cpu_pressure_some_us"});
}

TEST(HostUsageTest, TextFormRoundTripsAndRefusesWhatItDidNotWrite) {
  HostUsage u;
  EXPECT_EQ(HostUsageToText(u), "");
  HostUsage back;
  ASSERT_TRUE(HostUsageFromText("", back));
  EXPECT_FALSE(back.measured());
  u.source = UsageSource::kProc;
  u.set(UsageFigure::kCpuUsageUs, 123);
  u.set(UsageFigure::kMemoryPeakBytes, int64_t{1} << 40);
  ASSERT_TRUE(HostUsageFromText(HostUsageToText(u), back));
  EXPECT_EQ(back.source, UsageSource::kProc);
  EXPECT_EQ(back.figures, u.figures);
  // Written before later figures existed: those are missing.
  ASSERT_TRUE(HostUsageFromText("cgroup-v2 5 6", back));
  EXPECT_EQ(back.get(UsageFigure::kCpuUsageUs), 5);
  EXPECT_EQ(back.get(UsageFigure::kCpuThrottledPeriods), 6);
  EXPECT_FALSE(back.has(UsageFigure::kCpuThrottledUs));
  for (const char* bad : {"cgroup-v3 1", "proc 1 x", "proc -2", "proc 1  2", " 1",
                          "proc 1 1 1 1 1 1 1 1 1 1 1 1 1 1"}) {
    EXPECT_FALSE(HostUsageFromText(bad, back)) << bad;
    EXPECT_FALSE(back.measured()) << bad;
  }
}

TEST(HostUsageTest, RanksAddCountersTakeTheLargestMemoryAndLoseFiguresAnyRankLacks) {
  HostUsage a, b;
  a.source = b.source = UsageSource::kCgroupV2;
  a.set(UsageFigure::kCpuUsageUs, 100);
  b.set(UsageFigure::kCpuUsageUs, 250);
  a.set(UsageFigure::kMemoryPeakBytes, 7);
  b.set(UsageFigure::kMemoryPeakBytes, 5);
  a.set(UsageFigure::kOomKills, 1);  // b lacks it: unknown for the job
  const HostUsage sum = CombineRanks(a, b);
  EXPECT_EQ(sum.get(UsageFigure::kCpuUsageUs), 350);
  EXPECT_EQ(sum.get(UsageFigure::kMemoryPeakBytes), 7);
  EXPECT_FALSE(sum.has(UsageFigure::kOomKills));
  // An unmeasured rank changes nothing.
  EXPECT_EQ(CombineRanks(a, HostUsage{}).figures, a.figures);
  EXPECT_EQ(CombineRanks(HostUsage{}, b).figures, b.figures);
}

}  // namespace
}  // namespace gpufleet::core
