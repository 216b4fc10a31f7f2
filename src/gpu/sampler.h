#pragma once
// `Sampler`: reads every GPU of a probe at a fixed interval (1 s by default) on its own thread,
// keeps the latest full sample per GPU and a ring-buffer history of the main figures (an hour at
// 1 s by default) plus per-minute aggregates (a day by default), and folds driver events (XIDs,
// ECC) from a second thread into each GPU's health. Readers (the /metrics endpoint, `top`) get
// copies and never wait for the driver: the probe is called without the data lock held.
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "gpu/gpu_probe.h"
#include "gpu/health.h"
#include "gpu/ring_buffer.h"

namespace gpufleet::gpu {

struct SamplerOptions {
  double interval_s = 1.0;
  double history_s = 3600.0;  // raw history kept per GPU
  double aggregate_s = 60.0;  // width of one downsampled aggregate
  double aggregate_keep_s = 86400.0;
};

// One history point; a figure the GPU could not give is NaN.
struct HistoryPoint {
  double time_s = 0;
  float gpu_util_pct = 0;
  float mem_util_pct = 0;
  float fb_used_mib = 0;
  float power_w = 0;
  float temperature_c = 0;
  float sm_activity = 0;
};

// The figures of one aggregate window; means and maxima over the samples that had the figure
// (NaN when none had it).
struct HistoryAggregate {
  double start_s = 0;
  double end_s = 0;
  int samples = 0;
  float gpu_util_mean = 0;
  float gpu_util_max = 0;
  float mem_util_mean = 0;
  float fb_used_max_mib = 0;
  float power_mean_w = 0;
  float power_max_w = 0;
  float temperature_max_c = 0;
  float sm_activity_mean = 0;
};

class Sampler {
 public:
  using Clock = std::function<double()>;  // monotonic seconds
  // `clock` defaults to the steady clock; tests pass their own.
  Sampler(GpuProbe& probe, SamplerOptions options, Clock clock = {});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts the sampling and event threads; the first round runs at once.
  void Start();
  // Stops both threads (waits at most about one event-wait timeout).
  void Stop();
  // One sampling round on the caller's thread (for `top --once` and tests); not while started.
  void SampleOnce();
  // Folds one driver event into health (the event thread calls this; tests may too).
  void OnEvent(const GpuEvent& event);

  // The latest sample of every GPU (empty before the first round).
  std::vector<GpuSample> Latest() const;
  // History of one GPU over the last `seconds` (oldest first).
  std::vector<HistoryPoint> History(int gpu, double seconds) const;
  std::vector<HistoryAggregate> Aggregates(int gpu) const;
  std::uint64_t rounds() const { return rounds_.load(); }
  // Seconds since the last round finished (infinity before the first), on the sampler's clock:
  // a driver call that hangs shows up here.
  double SecondsSinceLastRound() const;
  GpuProbe& probe() { return probe_; }
  const SamplerOptions& options() const { return options_; }

 private:
  static constexpr int kFigures = 6;
  struct Window {
    double start_s = 0, end_s = 0;
    int samples = 0;
    std::array<double, kFigures> sum{};
    std::array<float, kFigures> max{};
    std::array<int, kFigures> count{};
    void Add(const HistoryPoint& p);
    HistoryAggregate Close() const;
    static std::array<float, kFigures> Figures(const HistoryPoint& p);
  };
  struct PerGpu {
    PerGpu(std::size_t history_slots, std::size_t aggregate_slots)
        : history(history_slots), aggregates(aggregate_slots) {}
    GpuSample latest;
    bool has_latest = false;
    RingBuffer<HistoryPoint> history;
    RingBuffer<HistoryAggregate> aggregates;
    Window open_window;  // the aggregate being filled
  };
  void SampleLoop();
  void EventLoop();
  void Fold(PerGpu& gpu, const GpuSample& sample);

  GpuProbe& probe_;
  SamplerOptions options_;
  Clock clock_;
  std::mutex sample_mutex_;  // one sampling round at a time
  mutable std::mutex data_mutex_;
  std::vector<PerGpu> gpus_;
  HealthTracker health_;
  std::atomic<std::uint64_t> rounds_{0};
  std::atomic<double> last_round_s_{-1.0};
  std::atomic<bool> stop_{false};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  std::thread sample_thread_;
  std::thread event_thread_;
};

}  // namespace gpufleet::gpu
