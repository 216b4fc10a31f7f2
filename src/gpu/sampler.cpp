#include "gpu/sampler.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>

namespace gpufleet::gpu {
namespace {

constexpr int kEventWaitMs = 200;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kMiB = 1024.0 * 1024.0;

template <typename T>
float Figure(const Reading<T>& reading, double scale = 1.0) {
  return reading.has_value() ? static_cast<float>(static_cast<double>(reading.value) * scale)
                             : kNaN;
}

HistoryPoint PointOf(const GpuSample& s) {
  HistoryPoint p;
  p.time_s = s.time_s;
  p.gpu_util_pct = Figure(s.gpu_util_pct);
  p.mem_util_pct = Figure(s.mem_util_pct);
  p.fb_used_mib = Figure(s.fb_used_bytes, 1.0 / kMiB);
  p.power_w = Figure(s.power_mw, 1e-3);
  p.temperature_c = Figure(s.temperature_c);
  p.sm_activity = Figure(s.sm_activity);
  return p;
}

std::size_t Slots(double keep_s, double every_s) {
  return static_cast<std::size_t>(std::max(1.0, std::ceil(keep_s / std::max(every_s, 1e-3))));
}

}  // namespace

// Sums and counts of the open aggregate window, per figure, so that a figure missing from some
// samples (or all) is averaged over the samples that had it (or reported as NaN).
void Sampler::Window::Add(const HistoryPoint& p) {
  if (samples == 0) start_s = p.time_s;
  end_s = p.time_s;
  ++samples;
  for (int f = 0; f < kFigures; ++f) {
    const float v = Figures(p)[f];
    if (std::isnan(v)) continue;
    sum[f] += v;
    max[f] = count[f] == 0 ? v : std::max(max[f], v);
    ++count[f];
  }
}

std::array<float, Sampler::kFigures> Sampler::Window::Figures(const HistoryPoint& p) {
  return {p.gpu_util_pct, p.mem_util_pct, p.fb_used_mib, p.power_w, p.temperature_c, p.sm_activity};
}

HistoryAggregate Sampler::Window::Close() const {
  HistoryAggregate a;
  a.start_s = start_s;
  a.end_s = end_s;
  a.samples = samples;
  auto mean = [&](int f) { return count[f] > 0 ? static_cast<float>(sum[f] / count[f]) : kNaN; };
  auto top = [&](int f) { return count[f] > 0 ? max[f] : kNaN; };
  a.gpu_util_mean = mean(0);
  a.gpu_util_max = top(0);
  a.mem_util_mean = mean(1);
  a.fb_used_max_mib = top(2);
  a.power_mean_w = mean(3);
  a.power_max_w = top(3);
  a.temperature_max_c = top(4);
  a.sm_activity_mean = mean(5);
  return a;
}

Sampler::Sampler(GpuProbe& probe, SamplerOptions options, Clock clock)
    : probe_(probe), options_(options), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  const int n = probe_.DeviceCount();
  gpus_.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    gpus_.emplace_back(Slots(options_.history_s, options_.interval_s),
                       Slots(options_.aggregate_keep_s, options_.aggregate_s));
  }
}

Sampler::~Sampler() { Stop(); }

void Sampler::Start() {
  if (sample_thread_.joinable()) return;
  stop_ = false;
  sample_thread_ = std::thread([this] { SampleLoop(); });
  event_thread_ = std::thread([this] { EventLoop(); });
}

void Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (sample_thread_.joinable()) sample_thread_.join();
  if (event_thread_.joinable()) event_thread_.join();
}

void Sampler::SampleLoop() {
  using std::chrono::duration;
  using std::chrono::steady_clock;
  const auto interval = std::chrono::duration_cast<steady_clock::duration>(
      duration<double>(std::max(options_.interval_s, 0.01)));
  auto next = steady_clock::now();
  while (!stop_) {
    SampleOnce();
    next += interval;
    // After a stall (suspend, a hung driver call), skip the missed rounds instead of bursting.
    const auto now = steady_clock::now();
    if (next < now) next = now + interval;
    std::unique_lock<std::mutex> lock(stop_mutex_);
    stop_cv_.wait_until(lock, next, [this] { return stop_.load(); });
  }
}

void Sampler::EventLoop() {
  while (!stop_) {
    const auto started = std::chrono::steady_clock::now();
    const std::vector<GpuEvent> events = probe_.WaitEvents(kEventWaitMs);
    for (const GpuEvent& event : events) OnEvent(event);
    if (!events.empty()) continue;
    // A probe that returns at once (no event support, a failed wait, a lost GPU) must not make
    // this loop spin: wait out the rest of the period.
    std::unique_lock<std::mutex> lock(stop_mutex_);
    stop_cv_.wait_until(lock, started + std::chrono::milliseconds(kEventWaitMs),
                        [this] { return stop_.load(); });
  }
}

void Sampler::OnEvent(const GpuEvent& event) {
  std::lock_guard<std::mutex> lock(data_mutex_);
  health_.OnEvent(event);
  // Show the new verdict at once rather than at the next round.
  if (event.gpu_index >= 0 && static_cast<std::size_t>(event.gpu_index) < gpus_.size()) {
    PerGpu& gpu = gpus_[static_cast<std::size_t>(event.gpu_index)];
    if (gpu.has_latest) health_.Evaluate(gpu.latest);
  }
}

void Sampler::SampleOnce() {
  std::lock_guard<std::mutex> round(sample_mutex_);
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    GpuSample sample = probe_.Sample(static_cast<int>(i), clock_());
    std::lock_guard<std::mutex> lock(data_mutex_);
    PerGpu& gpu = gpus_[i];
    SanitizeSample(sample, gpu.has_latest ? &gpu.latest : nullptr);
    health_.Evaluate(sample);
    Fold(gpu, sample);
    gpu.latest = std::move(sample);
    gpu.has_latest = true;
  }
  last_round_s_ = clock_();
  ++rounds_;
}

void Sampler::Fold(PerGpu& gpu, const GpuSample& sample) {
  const HistoryPoint point = PointOf(sample);
  gpu.history.Push(point);
  Window& w = gpu.open_window;
  if (w.samples > 0 && point.time_s >= w.start_s + options_.aggregate_s) {
    gpu.aggregates.Push(w.Close());
    w = Window{};
  }
  w.Add(point);
}

double Sampler::SecondsSinceLastRound() const {
  const double last = last_round_s_.load();
  return last < 0 ? std::numeric_limits<double>::infinity() : clock_() - last;
}

std::vector<GpuSample> Sampler::Latest() const {
  std::lock_guard<std::mutex> lock(data_mutex_);
  std::vector<GpuSample> out;
  out.reserve(gpus_.size());
  for (const PerGpu& gpu : gpus_) {
    if (gpu.has_latest) out.push_back(gpu.latest);
  }
  return out;
}

std::vector<HistoryPoint> Sampler::History(int gpu_index, double seconds) const {
  std::lock_guard<std::mutex> lock(data_mutex_);
  std::vector<HistoryPoint> out;
  if (gpu_index < 0 || static_cast<std::size_t>(gpu_index) >= gpus_.size()) return out;
  const RingBuffer<HistoryPoint>& history = gpus_[static_cast<std::size_t>(gpu_index)].history;
  if (history.empty()) return out;
  const double since = history.back().time_s - seconds;
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (history[i].time_s > since) out.push_back(history[i]);
  }
  return out;
}

std::vector<HistoryAggregate> Sampler::Aggregates(int gpu_index) const {
  std::lock_guard<std::mutex> lock(data_mutex_);
  std::vector<HistoryAggregate> out;
  if (gpu_index < 0 || static_cast<std::size_t>(gpu_index) >= gpus_.size()) return out;
  const PerGpu& gpu = gpus_[static_cast<std::size_t>(gpu_index)];
  for (std::size_t i = 0; i < gpu.aggregates.size(); ++i) out.push_back(gpu.aggregates[i]);
  if (gpu.open_window.samples > 0) out.push_back(gpu.open_window.Close());
  return out;
}

}  // namespace gpufleet::gpu
