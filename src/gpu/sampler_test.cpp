#include "gpu/sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "gpu/ring_buffer.h"

namespace gpufleet::gpu {
namespace {

// A probe whose GPU i reports utilization (10 * i + round) % 101 at round `round`, plus 200% on
// round 3 of GPU 0 to exercise sanitizing.
class ScriptedProbe final : public GpuProbe {
 public:
  explicit ScriptedProbe(int gpus) : gpus_(gpus) {}
  std::string BackendName() const override { return "scripted"; }
  bool IsSimulated() const override { return true; }
  std::string DriverVersion() const override { return "test"; }
  int DeviceCount() const override { return gpus_; }
  GpuSample Sample(int index, double now_s) override {
    GpuSample s;
    s.index = index;
    s.time_s = now_s;
    const int round = calls_[static_cast<std::size_t>(index)]++;
    s.gpu_util_pct.Set(
        index == 0 && round == 3 ? 200U : static_cast<std::uint32_t>(10 * index + round) % 101);
    s.power_mw.Set(100'000);
    return s;
  }
  std::vector<GpuEvent> WaitEvents(int timeout_ms) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 5)));
    return {};
  }
  GpuTopology Topology() override { return {}; }

 private:
  int gpus_;
  int calls_[8] = {};
};

TEST(RingBuffer, KeepsTheNewestInOrder) {
  RingBuffer<int> ring(3);
  for (int i = 1; i <= 5; ++i) ring.Push(i);
  ASSERT_EQ(ring.size(), 3U);
  EXPECT_EQ(ring[0], 3);
  EXPECT_EQ(ring[1], 4);
  EXPECT_EQ(ring[2], 5);
  EXPECT_EQ(ring.back(), 5);
}

TEST(Sampler, RoundsFillLatestHistoryAndAggregates) {
  ScriptedProbe probe(2);
  double now = 0;
  SamplerOptions options;
  options.interval_s = 1;
  options.history_s = 5;
  options.aggregate_s = 3;
  Sampler sampler(probe, options, [&] { return now; });
  EXPECT_TRUE(sampler.Latest().empty());
  for (int round = 0; round < 10; ++round) {
    now = round;
    sampler.SampleOnce();
  }
  EXPECT_EQ(sampler.rounds(), 10U);
  const std::vector<GpuSample> latest = sampler.Latest();
  ASSERT_EQ(latest.size(), 2U);
  EXPECT_EQ(latest[1].gpu_util_pct.value, 19U);
  EXPECT_DOUBLE_EQ(latest[1].time_s, 9.0);

  // The ring keeps 5 points; a 3-second window holds the points after t = 6.
  EXPECT_EQ(sampler.History(0, 100).size(), 5U);
  const std::vector<HistoryPoint> recent = sampler.History(1, 3);
  ASSERT_EQ(recent.size(), 3U);
  EXPECT_DOUBLE_EQ(recent[0].time_s, 7.0);
  EXPECT_FLOAT_EQ(recent[0].gpu_util_pct, 17.0f);
  EXPECT_FLOAT_EQ(recent[0].power_w, 100.0f);
  EXPECT_TRUE(std::isnan(recent[0].temperature_c)) << "not reported, so not a number";

  // Aggregates: [0,1,2] [3,4,5] [6,7,8] closed, [9] open. GPU 0's round 3 was clamped to 100.
  const std::vector<HistoryAggregate> windows = sampler.Aggregates(0);
  ASSERT_EQ(windows.size(), 4U);
  EXPECT_EQ(windows[0].samples, 3);
  EXPECT_FLOAT_EQ(windows[0].gpu_util_mean, 1.0f);
  EXPECT_FLOAT_EQ(windows[1].gpu_util_max, 100.0f);
  EXPECT_FLOAT_EQ(windows[1].gpu_util_mean, (100.0f + 4 + 5) / 3);
  EXPECT_EQ(windows[3].samples, 1);
  EXPECT_TRUE(sampler.History(7, 10).empty());
}

TEST(Sampler, EventsUpdateHealthAtOnce) {
  ScriptedProbe probe(2);
  Sampler sampler(probe, {}, [] { return 0.0; });
  sampler.SampleOnce();
  ASSERT_TRUE(sampler.Latest()[1].health.healthy);
  sampler.OnEvent({1, GpuEvent::Kind::kXid, 48});
  const std::vector<GpuSample> latest = sampler.Latest();
  EXPECT_TRUE(latest[0].health.healthy);
  EXPECT_FALSE(latest[1].health.healthy);
  EXPECT_EQ(latest[1].last_xid, 48U);
}

TEST(Sampler, ThreadSamplesUntilStopped) {
  ScriptedProbe probe(1);
  SamplerOptions options;
  options.interval_s = 0.01;
  Sampler sampler(probe, options);
  sampler.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sampler.rounds() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sampler.Stop();
  const std::uint64_t rounds = sampler.rounds();
  EXPECT_GE(rounds, 3U);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(sampler.rounds(), rounds) << "no rounds after Stop";
}

}  // namespace
}  // namespace gpufleet::gpu
