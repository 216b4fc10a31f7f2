#include "advise/usage_series.h"

#include <gtest/gtest.h>

namespace gpufleet::advise {
namespace {

using core::UsageFigure;

GpuReading Gpu(int index, double sm, int64_t mem_used = 1000) {
  GpuReading r;
  r.index = index;
  r.sm_pct = sm;
  r.membw_pct = sm / 2;
  r.mem_used_mib = mem_used;
  r.mem_total_mib = 80000;
  r.pcie_mb_s = 100;
  r.power_w = 350;
  r.power_limit_w = 700;
  r.has_reasons = true;
  return r;
}

core::HostUsage Host(int64_t cpu_us, int64_t wait_us, int64_t io_bytes, int64_t mem_bytes) {
  core::HostUsage u;
  u.source = core::UsageSource::kCgroupV1;
  u.set(UsageFigure::kCpuUsageUs, cpu_us);
  u.set(UsageFigure::kCpuWaitUs, wait_us);
  u.set(UsageFigure::kCpuThrottledUs, 0);
  u.set(UsageFigure::kIoReadBytes, io_bytes);
  u.set(UsageFigure::kIoWriteBytes, 0);
  u.set(UsageFigure::kMemoryCurrentBytes, mem_bytes);
  u.set(UsageFigure::kIoBlockedUs, 0);
  u.set(UsageFigure::kOomKills, 0);
  return u;
}

TEST(UsageSeriesBuilder, SummarizesEachMinuteOfGpuAndHostSamples) {
  const int64_t start = 1'000'000;
  UsageSeriesBuilder b(start, /*cpu_alloc_milli=*/2000, /*mem_alloc_mib=*/1024);
  for (int s = 0; s < 120; ++s) {
    const int64_t t = start + s * 1000;
    b.AddGpu("n1", Gpu(0, s < 60 ? 90 : 10), t);
    b.AddGpu("n1", Gpu(1, 0, 0), t);
    b.AddGpu("n1", Gpu(1, 50), t);  // a resent time: ignored
    // One CPU of two busy, 10 MB/s read, 512 MiB in use.
    b.AddHost(0, Host(s * 1'000'000LL, s * 250'000LL, s * 10'000'000LL, 512LL << 20), t);
  }
  const JobUsage u = b.Snapshot();
  ASSERT_EQ(u.buckets.size(), 2u);
  EXPECT_EQ(u.buckets[0].start_ms, 0);
  EXPECT_EQ(u.buckets[1].start_ms, kBucketMs);
  EXPECT_NEAR(u.buckets[0].sm_mean, 45, 0.01);  // 90 and 0
  EXPECT_NEAR(u.buckets[0].sm_min, 0, 0.01);
  EXPECT_NEAR(u.buckets[0].sm_max, 90, 0.01);
  EXPECT_NEAR(u.buckets[0].active_gpus, 1, 0.01);
  EXPECT_NEAR(u.buckets[1].active_gpus, 1, 0.01);  // 10% counts as busy
  EXPECT_NEAR(u.buckets[0].power_pct, 50, 0.01);
  EXPECT_NEAR(u.buckets[0].throttled_pct, 0, 0.01);
  EXPECT_NEAR(u.buckets[1].cpu_used_pct, 50, 0.5);
  EXPECT_NEAR(u.buckets[1].cpu_pressure_pct, 25, 0.5);
  EXPECT_NEAR(u.buckets[1].io_mb_s, 10, 0.1);
  EXPECT_NEAR(u.buckets[1].mem_used_pct, 50, 0.1);
  EXPECT_NEAR(u.buckets[1].io_pressure_pct, 0, 0.01);
  EXPECT_EQ(u.buckets[1].mem_pressure_pct, -1);  // v1 has no memory PSI
  ASSERT_EQ(u.gpus.size(), 2u);
  EXPECT_EQ(u.gpus[0].samples, 120);
  EXPECT_EQ(u.gpus[0].busy_samples, 120);
  EXPECT_EQ(u.gpus[1].busy_samples, 0);
  EXPECT_EQ(u.gpus[1].mem_peak_mib, 0);
}

TEST(UsageSeriesBuilder, SkipsCounterResetsAndSamplesBeforeTheStart) {
  UsageSeriesBuilder b(10'000, 1000, 0);
  b.AddHost(0, Host(5'000'000, 0, 0, 0), 5'000);  // before the start
  b.AddHost(0, Host(9'000'000, 0, 0, 0), 11'000);
  b.AddHost(0, Host(1'000, 0, 0, 0), 12'000);  // the counters went back: no delta
  b.AddHost(0, Host(501'000, 0, 0, 0), 13'000);
  const JobUsage u = b.Snapshot();
  ASSERT_EQ(u.buckets.size(), 1u);
  EXPECT_NEAR(u.buckets[0].cpu_used_pct, 50, 0.1);
  EXPECT_EQ(u.buckets[0].mem_used_pct, -1);  // no memory allocation to compare with
}

TEST(UsageSeriesBuilder, AddsTheCpuOfAllRanksAgainstTheJobsAllocation) {
  // Two ranks, each one CPU busy, of a job allowed 2 CPUs in all: 100%; the I/O adds up too.
  UsageSeriesBuilder b(0, /*cpu_alloc_milli=*/2000, /*mem_alloc_mib=*/1024);
  for (int s = 0; s < 60; ++s) {
    for (int rank = 0; rank < 2; ++rank) {
      b.AddHost(rank, Host(s * 1'000'000LL, 0, s * 5'000'000LL, 256LL << 20), s * 1000);
    }
  }
  const JobUsage u = b.Snapshot();
  ASSERT_EQ(u.buckets.size(), 1u);
  EXPECT_NEAR(u.buckets[0].cpu_used_pct, 100, 0.5);
  EXPECT_NEAR(u.buckets[0].io_mb_s, 10, 0.1);
  EXPECT_NEAR(u.buckets[0].mem_used_pct, 25, 0.1);  // the largest rank's, of one rank's limit
}

TEST(UsageSeries, EncodesWithinOneKilobyteAnHourAndDecodesWhatItEncoded) {
  // A 1-GPU hour costs under 1 KB; each GPU adds a fixed ~20 bytes, however long the job.
  UsageSeriesBuilder one(0, 1000, 1024);
  for (int s = 0; s < 3600; ++s) {
    one.AddGpu("node-a", Gpu(0, (s * 7) % 100), s * 1000);
    one.AddHost(0, Host(s * 900'000LL, s * 10'000LL, s * 1'000'000LL, 512LL << 20), s * 1000);
  }
  EXPECT_LE(EncodeUsage(one.Snapshot()).size(), 1000u);

  UsageSeriesBuilder b(0, 4000, 8192);
  for (int s = 0; s < 3600; ++s) {
    for (int g = 0; g < 4; ++g) b.AddGpu("node-a", Gpu(g, (s * 7 + g * 13) % 100), s * 1000);
    b.AddHost(0, Host(s * 3'000'000LL, s * 10'000LL, s * 1'000'000LL, 4LL << 30), s * 1000);
  }
  const JobUsage u = b.Snapshot();
  ASSERT_EQ(u.buckets.size(), 60u);
  const std::string bytes = EncodeUsage(u);
  EXPECT_LE(bytes.size(), 1024u + 4 * 24u);
  auto back = DecodeUsage(bytes);
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back.value().buckets.size(), 60u);
  for (std::size_t i = 0; i < 60; ++i) {
    EXPECT_EQ(back.value().buckets[i].start_ms, u.buckets[i].start_ms);
    EXPECT_NEAR(back.value().buckets[i].sm_mean, u.buckets[i].sm_mean, 0.26);
    EXPECT_NEAR(back.value().buckets[i].cpu_used_pct, u.buckets[i].cpu_used_pct, 0.26);
    EXPECT_NEAR(back.value().buckets[i].io_mb_s, u.buckets[i].io_mb_s, u.buckets[i].io_mb_s * 0.05);
    EXPECT_EQ(back.value().buckets[i].mem_pressure_pct, -1);
  }
  ASSERT_EQ(back.value().gpus.size(), 4u);
  EXPECT_EQ(back.value().gpus[2].node, "node-a");
  EXPECT_EQ(back.value().gpus[2].samples, 3600);
  EXPECT_EQ(back.value().cpu_alloc_milli, 4000);
  EXPECT_EQ(back.value().host_source, core::UsageSource::kCgroupV1);
  EXPECT_EQ(EncodeUsage(back.value()), bytes);  // a second trip changes nothing
}

TEST(UsageSeries, KeepsGapsBetweenRunsOfMinutes) {
  JobUsage u;
  for (int64_t m : {0, 1, 2, 10, 11, 30}) {
    UsageBucket b;
    b.start_ms = m * kBucketMs;
    b.sm_mean = static_cast<float>(m);
    u.buckets.push_back(b);
  }
  auto back = DecodeUsage(EncodeUsage(u));
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back.value().buckets.size(), 6u);
  EXPECT_EQ(back.value().buckets[3].start_ms, 10 * kBucketMs);
  EXPECT_EQ(back.value().buckets[5].start_ms, 30 * kBucketMs);
  EXPECT_EQ(back.value().buckets[5].sm_mean, 30);
}

TEST(UsageSeries, RefusesDamagedBytesWithAReason) {
  JobUsage u;
  u.buckets.resize(3);
  for (int i = 0; i < 3; ++i) u.buckets[i].start_ms = i * kBucketMs;
  u.gpus.push_back(GpuTotal{"n", 0, 10, 500, 10, 100, 200});
  const std::string good = EncodeUsage(u);
  ASSERT_TRUE(DecodeUsage(good).ok());
  EXPECT_FALSE(DecodeUsage("").ok());
  EXPECT_FALSE(DecodeUsage(std::string(1, '\x09')).ok());  // unknown version
  for (std::size_t cut = 1; cut < good.size(); ++cut) {
    EXPECT_FALSE(DecodeUsage(good.substr(0, cut)).ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(DecodeUsage(good + "x").ok());
}

TEST(UsageSeriesBuilder, ResumesAStoredSeriesAndAddsOnlyNewMinutes) {
  UsageSeriesBuilder first(0, 0, 0);
  for (int s = 0; s < 90; ++s) first.AddGpu("n", Gpu(0, 80), s * 1000);
  auto stored = DecodeUsage(EncodeUsage(first.Snapshot()));
  ASSERT_TRUE(stored.ok());
  auto again = UsageSeriesBuilder::Resume(0, stored.value());
  again.AddGpu("n", Gpu(0, 20), 100'000);  // in the stored second minute: dropped
  again.AddGpu("n", Gpu(0, 20), 130'000);  // the third minute
  const JobUsage u = again.Snapshot();
  ASSERT_EQ(u.buckets.size(), 3u);
  EXPECT_NEAR(u.buckets[1].sm_mean, 80, 0.5);
  EXPECT_NEAR(u.buckets[2].sm_mean, 20, 0.5);
}

}  // namespace
}  // namespace gpufleet::advise

namespace gpufleet::advise {
namespace {

// Heartbeats come more often than the agent reads the counters (at most once a second): most
// beats repeat the last read. The rate must still be the counters' over the wall time, as on the
// H200 run where a job used ~3.8 cores of the 1 it asked for.
TEST(UsageSeriesBuilder, RepeatedReadsBetweenFreshOnesKeepTheRate) {
  UsageSeriesBuilder b(0, 1000, 0);
  core::HostUsage last = Host(0, 0, 0, 0);
  int64_t read_ms = 0;
  for (int64_t t = 0; t <= 150'000; t += 333) {
    if (t - read_ms >= 1000) {
      read_ms = t;
      last = Host(t * 3830, 0, 0, 0);  // 3.83 cores
    }
    b.AddHost(0, last, t);
  }
  const JobUsage u = b.Snapshot();
  ASSERT_EQ(u.buckets.size(), 3u);
  for (const UsageBucket& bucket : u.buckets) EXPECT_NEAR(bucket.cpu_used_pct, 383, 15);
}

}  // namespace
}  // namespace gpufleet::advise

namespace gpufleet::advise {
namespace {

// On the H200 (no cgroup limits), a job used 3.8 cores of the 1 it asked for; the stored series
// said 127%, the old format's ceiling, and the advisor quoted it.
TEST(UsageSeries, KeepsCpuUseBeyondWhatTheJobAsked) {
  UsageSeriesBuilder b(0, 1000, 1024);
  for (int s = 0; s <= 120; ++s) {
    b.AddHost(0, Host(s * 3'830'000LL, 0, 0, 3LL << 30), s * 1000);
  }
  const JobUsage u = b.Snapshot();
  ASSERT_GE(u.buckets.size(), 2u);
  EXPECT_NEAR(u.buckets[0].cpu_used_pct, 383, 1);
  auto back = DecodeUsage(EncodeUsage(u));
  ASSERT_TRUE(back.ok()) << back.error();
  for (std::size_t i = 0; i < u.buckets.size(); ++i) {
    // Within the half-step of the wide scale's 8 steps an octave (about 4.4%).
    EXPECT_NEAR(back.value().buckets[i].cpu_used_pct, u.buckets[i].cpu_used_pct,
                u.buckets[i].cpu_used_pct * 0.045);
    EXPECT_NEAR(back.value().buckets[i].mem_used_pct, 300, 300 * 0.045);
  }
  // Up to 100% the steps stay half a percent.
  UsageSeriesBuilder c(0, 1000, 1024);
  for (int s = 0; s <= 60; ++s) c.AddHost(0, Host(s * 733'000LL, 0, 0, 0), s * 1000);
  auto small = DecodeUsage(EncodeUsage(c.Snapshot()));
  ASSERT_TRUE(small.ok());
  EXPECT_NEAR(small.value().buckets[0].cpu_used_pct, 73.3, 0.26);
}

// A minute's series at `cores` of a 1-core request, encoded.
std::string OneMinuteAt(double cores) {
  UsageSeriesBuilder b(0, 1000, 1024);
  for (int s = 0; s <= 60; ++s) {
    b.AddHost(0, Host(static_cast<int64_t>(s * cores * 1'000'000), 0, 0, 0), s * 1000);
  }
  return EncodeUsage(b.Snapshot());
}

TEST(UsageSeries, ALoaderAtItsQuotaReadsOneHundredPercent) {
  // Just above 100% (a quota's accounting overshoots a little) is 100, not the next step (109).
  for (double cores : {1.002, 1.04}) {
    auto back = DecodeUsage(OneMinuteAt(cores));
    ASSERT_TRUE(back.ok());
    EXPECT_NEAR(back.value().buckets[0].cpu_used_pct, 100, 0.5) << cores;
  }
  auto more = DecodeUsage(OneMinuteAt(1.10));
  ASSERT_TRUE(more.ok());
  EXPECT_NEAR(more.value().buckets[0].cpu_used_pct, 110, 110 * 0.045);
}

TEST(UsageSeries, ReadsTheFirstVersion) {
  // The CPU byte: where two series that differ only in CPU differ.
  std::string bytes = OneMinuteAt(0.5);
  const std::string other = OneMinuteAt(0.6);
  ASSERT_EQ(bytes.size(), other.size());
  std::size_t at = 0;
  while (at < bytes.size() && bytes[at] == other[at]) ++at;
  ASSERT_LT(at, bytes.size());
  bytes[at] = static_cast<char>(254);
  bytes[0] = 1;  // version 1: code 254 is 127%, the old ceiling
  auto old = DecodeUsage(bytes);
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_NEAR(old.value().buckets[0].cpu_used_pct, 127, 0.01);
  bytes[0] = 2;  // version 2: the wide scale's top
  auto now = DecodeUsage(bytes);
  ASSERT_TRUE(now.ok()) << now.error();
  EXPECT_GT(now.value().buckets[0].cpu_used_pct, 10000);
}

}  // namespace
}  // namespace gpufleet::advise
