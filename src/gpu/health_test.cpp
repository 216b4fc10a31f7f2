#include "gpu/health.h"

#include <gtest/gtest.h>

#include "gpu/nvml_api.h"

namespace gpufleet::gpu {
namespace {

GpuSample HealthySample(int index = 0) {
  GpuSample s;
  s.index = index;
  s.gpu_util_pct.Set(50);
  s.clock_event_reasons.Set(0);
  s.ecc_uncorrected_volatile.Set(0);
  return s;
}

TEST(Health, QuietGpuIsHealthy) {
  HealthTracker tracker;
  GpuSample s = HealthySample();
  tracker.Evaluate(s);
  EXPECT_TRUE(s.health.healthy);
  EXPECT_TRUE(s.health.reasons.empty());
}

TEST(Health, CriticalXidIsStickyAndNamed) {
  HealthTracker tracker;
  tracker.OnEvent({0, GpuEvent::Kind::kXid, 79});
  GpuSample s = HealthySample();
  tracker.Evaluate(s);
  ASSERT_FALSE(s.health.healthy);
  ASSERT_EQ(s.health.reasons.size(), 1U);
  EXPECT_EQ(s.health.reasons[0], "XID 79 (GPU has fallen off the bus)");
  EXPECT_EQ(s.xid_count, 1U);
  EXPECT_EQ(s.last_xid, 79U);
  // Still unhealthy on every later sample, and a repeat does not duplicate the reason.
  tracker.OnEvent({0, GpuEvent::Kind::kXid, 79});
  GpuSample later = HealthySample();
  tracker.Evaluate(later);
  EXPECT_FALSE(later.health.healthy);
  EXPECT_EQ(later.health.reasons.size(), 1U);
  EXPECT_EQ(later.xid_count, 2U);
  // Other GPUs are not affected.
  GpuSample other = HealthySample(1);
  tracker.Evaluate(other);
  EXPECT_TRUE(other.health.healthy);
}

TEST(Health, ApplicationXidIsCountedButNotUnhealthy) {
  HealthTracker tracker;
  tracker.OnEvent({0, GpuEvent::Kind::kXid, 31});
  GpuSample s = HealthySample();
  tracker.Evaluate(s);
  EXPECT_TRUE(s.health.healthy);
  EXPECT_EQ(s.last_xid, 31U);
  EXPECT_FALSE(IsCriticalXid(13));
  EXPECT_TRUE(IsCriticalXid(48));
  EXPECT_TRUE(IsCriticalXid(9999)) << "unknown XIDs are treated as critical";
}

TEST(Health, LostThermalEccAndRemapMarkUnhealthy) {
  HealthTracker tracker;
  GpuSample lost = HealthySample();
  lost.lost = true;
  tracker.Evaluate(lost);
  EXPECT_FALSE(lost.health.healthy);
  EXPECT_NE(lost.health.reasons[0].find("GPU is lost"), std::string::npos);

  GpuSample hot = HealthySample();
  hot.clock_event_reasons.Set(nvmlClocksEventReasonHwThermalSlowdown);
  tracker.Evaluate(hot);
  ASSERT_FALSE(hot.health.healthy);
  EXPECT_NE(hot.health.reasons[0].find("thermal slowdown"), std::string::npos);

  GpuSample capped = HealthySample();
  capped.clock_event_reasons.Set(nvmlClocksEventReasonSwPowerCap | nvmlClocksEventReasonGpuIdle);
  tracker.Evaluate(capped);
  EXPECT_TRUE(capped.health.healthy) << "a power cap is normal operation";

  GpuSample ecc = HealthySample();
  ecc.ecc_uncorrected_volatile.Set(2);
  tracker.Evaluate(ecc);
  ASSERT_FALSE(ecc.health.healthy);
  EXPECT_EQ(ecc.health.reasons[0], "uncorrectable (double-bit) ECC errors since the driver loaded");

  GpuSample remap = HealthySample();
  remap.remapped_rows_failure.Set(1);
  tracker.Evaluate(remap);
  EXPECT_FALSE(remap.health.healthy);
}

TEST(Health, DoubleBitEccEventIsSticky) {
  HealthTracker tracker;
  tracker.OnEvent({2, GpuEvent::Kind::kDoubleBitEcc, 0});
  tracker.OnEvent({2, GpuEvent::Kind::kSingleBitEcc, 0});
  GpuSample s = HealthySample(2);
  tracker.Evaluate(s);
  EXPECT_FALSE(s.health.healthy);
  EXPECT_EQ(s.health.reasons.size(), 1U);
}

TEST(Sanitize, ClampsUtilizationAndFlagsIt) {
  GpuSample s = HealthySample();
  s.gpu_util_pct.Set(137);
  s.mem_util_pct.Set(100);
  SanitizeSample(s, nullptr);
  EXPECT_EQ(s.gpu_util_pct.value, 100U);
  EXPECT_EQ(s.gpu_util_pct.status, ReadStatus::kClamped);
  EXPECT_TRUE(s.gpu_util_pct.has_value());
  EXPECT_EQ(s.mem_util_pct.status, ReadStatus::kOk);
  ASSERT_EQ(s.flags.size(), 1U);
  EXPECT_NE(s.flags[0].find("137"), std::string::npos);
}

TEST(Sanitize, ClampsProcessUtilMemoryAndActivity) {
  GpuSample s = HealthySample();
  GpuProcess p;
  p.sm_util_pct.Set(250);
  s.processes.Set({p});
  s.fb_total_bytes.Set(100);
  s.fb_used_bytes.Set(120);
  s.sm_activity.Set(1.5);
  s.temperature_c.Set(4000);
  SanitizeSample(s, nullptr);
  EXPECT_EQ(s.processes.value[0].sm_util_pct.value, 100U);
  EXPECT_EQ(s.fb_used_bytes.value, 100U);
  EXPECT_DOUBLE_EQ(s.sm_activity.value, 1.0);
  EXPECT_FALSE(s.temperature_c.has_value()) << "an implausible temperature is not shown";
  EXPECT_EQ(s.flags.size(), 4U);
}

TEST(Sanitize, FlagsCountersAndTimeGoingBackwards) {
  GpuSample before = HealthySample();
  before.time_s = 10;
  before.energy_mj.Set(5000);
  GpuSample now = HealthySample();
  now.time_s = 9;
  now.energy_mj.Set(4000);
  SanitizeSample(now, &before);
  ASSERT_EQ(now.flags.size(), 2U);
  EXPECT_EQ(now.flags[0], "sample time went backwards");
  EXPECT_NE(now.flags[1].find("energy_mj went backwards"), std::string::npos);
}

}  // namespace
}  // namespace gpufleet::gpu
