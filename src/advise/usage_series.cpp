#include "advise/usage_series.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace gpufleet::advise {

using core::UsageFigure;

UsageSeriesBuilder::UsageSeriesBuilder(int64_t start_ms, int64_t cpu_alloc_milli,
                                       int64_t mem_alloc_mib)
    : start_ms_(start_ms) {
  usage_.cpu_alloc_milli = std::max<int64_t>(0, cpu_alloc_milli);
  usage_.mem_alloc_mib = std::max<int64_t>(0, mem_alloc_mib);
}

UsageSeriesBuilder UsageSeriesBuilder::Resume(int64_t start_ms, JobUsage stored) {
  UsageSeriesBuilder b(start_ms, stored.cpu_alloc_milli, stored.mem_alloc_mib);
  b.usage_ = std::move(stored);
  b.stored_buckets_ = b.usage_.buckets.size();
  b.sums_.resize(b.usage_.buckets.size());
  return b;
}

UsageBucket* UsageSeriesBuilder::BucketAt(int64_t t_ms, Accum** sums) {
  if (t_ms < start_ms_) return nullptr;
  const int64_t start = (t_ms - start_ms_) / kBucketMs * kBucketMs;
  auto& buckets = usage_.buckets;
  auto it = std::lower_bound(buckets.begin(), buckets.end(), start,
                             [](const UsageBucket& b, int64_t s) { return b.start_ms < s; });
  const auto at = static_cast<std::size_t>(it - buckets.begin());
  if (at < stored_buckets_) return nullptr;  // a stored bucket: its sums are gone
  if (it == buckets.end() || it->start_ms != start) {
    UsageBucket fresh;
    fresh.start_ms = start;
    buckets.insert(it, fresh);
    sums_.insert(sums_.begin() + static_cast<std::ptrdiff_t>(at), Accum{});
  }
  *sums = &sums_[at];
  return &buckets[at];
}

void UsageSeriesBuilder::AddGpu(std::string_view node, const GpuReading& r, int64_t t_ms) {
  auto last = std::find_if(last_gpu_.begin(), last_gpu_.end(), [&](const LastGpuSample& s) {
    return s.index == r.index && s.node == node;
  });
  if (last == last_gpu_.end()) {
    last_gpu_.push_back({std::string(node), r.index, -1});
    last = last_gpu_.end() - 1;
  }
  if (t_ms <= last->t_ms) return;  // resent
  last->t_ms = t_ms;
  Accum* a = nullptr;
  if (BucketAt(t_ms, &a) == nullptr) return;

  auto total = std::find_if(usage_.gpus.begin(), usage_.gpus.end(), [&](const GpuTotal& g) {
    return g.index == r.index && g.node == node;
  });
  if (total == usage_.gpus.end()) {
    GpuTotal g;
    g.node = std::string(node);
    g.index = r.index;
    usage_.gpus.push_back(g);
    total = usage_.gpus.end() - 1;
  }
  const double sm = r.own_sm_pct >= 0 ? r.own_sm_pct : r.sm_pct;
  if (sm >= 0) {
    const double v = std::min(100.0, sm);
    a->sm_sum += v;
    a->sm_min = std::min(a->sm_min, v);
    a->sm_max = std::max(a->sm_max, v);
    ++a->sm_n;
    ++total->samples;
    total->sm_sum += v;
    if (v >= 5) {
      ++a->busy_n;
      ++total->busy_samples;
    }
  }
  if (r.membw_pct >= 0) {
    a->membw_sum += std::min(100.0, r.membw_pct);
    ++a->membw_n;
  }
  if (r.mem_used_mib >= 0) total->mem_peak_mib = std::max(total->mem_peak_mib, r.mem_used_mib);
  if (r.mem_total_mib > 0) total->mem_total_mib = r.mem_total_mib;
  if (r.mem_used_mib >= 0 && total->mem_total_mib > 0) {
    a->fb_max = std::max(a->fb_max, 100.0 * static_cast<double>(r.mem_used_mib) /
                                        static_cast<double>(total->mem_total_mib));
  }
  if (r.pcie_mb_s >= 0) {
    a->pcie_sum += r.pcie_mb_s;
    ++a->pcie_n;
  }
  if (r.power_w >= 0 && r.power_limit_w > 0) {
    a->power_sum += 100.0 * r.power_w / r.power_limit_w;
    ++a->power_n;
  }
  if (r.has_reasons) {
    ++a->reasons_n;
    if (r.clock_event_reasons & kThrottleReasonsMask) ++a->throttled_n;
  }
}

void UsageSeriesBuilder::AddHost(int rank, const core::HostUsage& usage, int64_t t_ms) {
  if (!usage.measured() || t_ms < start_ms_) return;
  auto prev = std::find_if(host_prev_.begin(), host_prev_.end(),
                           [&](const HostPrev& p) { return p.rank == rank; });
  if (prev == host_prev_.end()) {
    host_prev_.push_back({rank, -1, {}});
    prev = host_prev_.end() - 1;
  }
  if (usage_.host_source == core::UsageSource::kNone) usage_.host_source = usage.source;
  if (t_ms <= prev->t_ms) return;
  const HostPrev before = *prev;
  prev->t_ms = t_ms;
  prev->usage = usage;
  // OOM kills: the sum over ranks of each rank's latest count.
  int64_t ooms = 0;
  for (const HostPrev& p : host_prev_) ooms += std::max<int64_t>(0, p.usage.get(UsageFigure::kOomKills));
  usage_.oom_kills = std::max(usage_.oom_kills, ooms);

  Accum* a = nullptr;
  if (BucketAt(t_ms, &a) == nullptr) return;
  a->ranks |= uint64_t{1} << (static_cast<unsigned>(rank) % 64);
  if (usage.has(UsageFigure::kMemoryCurrentBytes)) {
    a->mem_max_bytes =
        std::max(a->mem_max_bytes, static_cast<double>(usage.get(UsageFigure::kMemoryCurrentBytes)));
  }
  if (before.t_ms < 0 || before.usage.source != usage.source) return;  // no delta yet
  const double wall_us = static_cast<double>(t_ms - before.t_ms) * 1000.0;
  a->wall_us += wall_us;
  for (std::size_t i = 0; i < core::kUsageFigures; ++i) {
    const int64_t was = before.usage.figures[i], now = usage.figures[i];
    if (was < 0 || now < was) continue;  // not measured, or reset (the job's cgroup anew)
    a->delta[i] += static_cast<double>(now - was);
    a->delta_wall[i] += wall_us;
  }
}

namespace {

float Round(double v) { return static_cast<float>(v); }

// The mean over ranks of figure `f`'s delta per wall time, or -1 when unmeasured.
double Share(const std::array<double, core::kUsageFigures>& delta,
             const std::array<double, core::kUsageFigures>& wall, UsageFigure f) {
  const auto i = static_cast<std::size_t>(f);
  return wall[i] > 0 ? delta[i] / wall[i] : -1;
}

}  // namespace

JobUsage UsageSeriesBuilder::Snapshot() const {
  JobUsage out = usage_;
  for (std::size_t i = stored_buckets_; i < out.buckets.size(); ++i) {
    UsageBucket& b = out.buckets[i];
    const Accum& a = sums_[i];
    if (a.sm_n > 0) {
      b.sm_mean = Round(a.sm_sum / static_cast<double>(a.sm_n));
      b.sm_min = Round(a.sm_min);
      b.sm_max = Round(a.sm_max);
      const auto gpus = static_cast<double>(std::max<std::size_t>(1, out.gpus.size()));
      b.active_gpus =
          Round(static_cast<double>(a.busy_n) * gpus / static_cast<double>(a.sm_n));
    }
    if (a.membw_n > 0) b.membw_pct = Round(a.membw_sum / static_cast<double>(a.membw_n));
    if (a.fb_max >= 0) b.fb_used_pct = Round(std::min(100.0, a.fb_max));
    if (a.pcie_n > 0) b.pcie_mb_s = Round(a.pcie_sum / static_cast<double>(a.pcie_n));
    if (a.power_n > 0) b.power_pct = Round(a.power_sum / static_cast<double>(a.power_n));
    if (a.reasons_n > 0) {
      b.throttled_pct =
          Round(100.0 * static_cast<double>(a.throttled_n) / static_cast<double>(a.reasons_n));
    }
    const double ranks = std::max(1, __builtin_popcountll(a.ranks));
    const bool v2 = out.host_source == core::UsageSource::kCgroupV2;
    if (const double cpu = Share(a.delta, a.delta_wall, UsageFigure::kCpuUsageUs);
        cpu >= 0 && out.cpu_alloc_milli > 0) {
      // `cpu` is the mean over ranks; the allocation is the job's, all ranks together.
      b.cpu_used_pct =
          Round(100.0 * ranks * cpu * 1000.0 / static_cast<double>(out.cpu_alloc_milli));
    }
    if (const double t = Share(a.delta, a.delta_wall, UsageFigure::kCpuThrottledUs); t >= 0) {
      b.cpu_throttled_pct = Round(std::min(100.0, 100.0 * t));
    }
    const double cpu_stall = Share(a.delta, a.delta_wall,
                                   v2 ? UsageFigure::kCpuPressureSomeUs : UsageFigure::kCpuWaitUs);
    if (cpu_stall >= 0) b.cpu_pressure_pct = Round(std::min(100.0, 100.0 * cpu_stall));
    double io_stall = v2 ? Share(a.delta, a.delta_wall, UsageFigure::kIoPressureSomeUs) : -1;
    if (io_stall < 0) io_stall = Share(a.delta, a.delta_wall, UsageFigure::kIoBlockedUs);
    if (io_stall >= 0) b.io_pressure_pct = Round(std::min(100.0, 100.0 * io_stall));
    if (const double m = Share(a.delta, a.delta_wall, UsageFigure::kMemoryPressureSomeUs);
        m >= 0) {
      b.mem_pressure_pct = Round(std::min(100.0, 100.0 * m));
    }
    if (a.mem_max_bytes >= 0 && out.mem_alloc_mib > 0) {
      b.mem_used_pct = Round(100.0 * a.mem_max_bytes /
                             (static_cast<double>(out.mem_alloc_mib) * 1024.0 * 1024.0));
    }
    const double rd = Share(a.delta, a.delta_wall, UsageFigure::kIoReadBytes);
    const double wr = Share(a.delta, a.delta_wall, UsageFigure::kIoWriteBytes);
    if (rd >= 0 || wr >= 0) {
      // bytes per microsecond = MB/s (10^6 bytes a second)
      b.io_mb_s = Round(ranks * (std::max(0.0, rd) + std::max(0.0, wr)));
    }
  }
  return out;
}

// ---- The stored form ----

namespace {

// Version 2 stores the figures that may pass 100% (CPU and memory against what the job asked:
// nothing holds a job to it on a node without cgroup limits) on the wide scale; version 1 capped
// them at 127%, and is still read.
constexpr uint8_t kVersion = 2;
constexpr uint8_t kMissing = 255;
constexpr int kFiguresPerBucket = 16;

uint8_t Pct(float v) {
  if (v < 0) return kMissing;
  return static_cast<uint8_t>(std::lround(std::min(127.0, static_cast<double>(v)) * 2.0));
}
float FromPct(uint8_t b) { return b == kMissing ? -1.0f : static_cast<float>(b) / 2.0f; }
// Wide: half-percent steps to 100% (codes 0-200), then 8 steps an octave up to about 10,000%.
constexpr int kWideLinear = 200;
uint8_t Wide(float v) {
  if (std::isnan(v) || v < 0) return kMissing;
  if (v <= 100) return static_cast<uint8_t>(std::lround(static_cast<double>(v) * 2.0));
  if (std::isinf(v)) return 254;
  // Nearest step: 100% to ~104% (a loader at its quota reads a hair above 100) is code 200.
  const long step = std::lround(8.0 * std::log2(static_cast<double>(v) / 100.0));
  return static_cast<uint8_t>(std::min<long>(254, kWideLinear + std::max(0L, step)));
}
float FromWide(uint8_t b) {
  if (b == kMissing) return -1.0f;
  if (b <= kWideLinear) return static_cast<float>(b) / 2.0f;
  return static_cast<float>(100.0 * std::exp2((b - kWideLinear) / 8.0));
}
// Log scale for MB/s and GPU counts: 16 steps an octave of (1 + v), up to about 60,000.
uint8_t Log(float v) {
  if (v < 0) return kMissing;
  return static_cast<uint8_t>(std::min(254L, std::lround(16.0 * std::log2(1.0 + v))));
}
float FromLog(uint8_t b) {
  return b == kMissing ? -1.0f : static_cast<float>(std::exp2(b / 16.0) - 1.0);
}

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool Varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) return false;
      const auto b = static_cast<uint8_t>(bytes_[at_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Byte(uint8_t& b) {
    if (at_ >= bytes_.size()) return false;
    b = static_cast<uint8_t>(bytes_[at_++]);
    return true;
  }
  bool Bytes(std::size_t n, std::string& out) {
    if (bytes_.size() - at_ < n) return false;
    out.assign(bytes_.substr(at_, n));
    at_ += n;
    return true;
  }
  bool done() const { return at_ == bytes_.size(); }
  std::size_t left() const { return bytes_.size() - at_; }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// The bucket's figures in their stored order, with how each is quantized.
enum class Scale : uint8_t { kPct, kLog, kWide };
struct FigureCodec {
  float UsageBucket::*field;
  Scale scale;
};
constexpr Scale P = Scale::kPct, L = Scale::kLog, W = Scale::kWide;
constexpr std::array<FigureCodec, kFiguresPerBucket> kCodecs = {{
    {&UsageBucket::sm_mean, P},           {&UsageBucket::sm_min, P},
    {&UsageBucket::sm_max, P},            {&UsageBucket::membw_pct, P},
    {&UsageBucket::fb_used_pct, P},       {&UsageBucket::pcie_mb_s, L},
    {&UsageBucket::power_pct, P},         {&UsageBucket::throttled_pct, P},
    {&UsageBucket::active_gpus, L},       {&UsageBucket::cpu_used_pct, W},
    {&UsageBucket::cpu_throttled_pct, P}, {&UsageBucket::cpu_pressure_pct, P},
    {&UsageBucket::io_pressure_pct, P},   {&UsageBucket::mem_pressure_pct, P},
    {&UsageBucket::mem_used_pct, W},      {&UsageBucket::io_mb_s, L},
}};

constexpr uint64_t kMaxBuckets = 1'000'000;  // 1.9 years of minutes
constexpr uint64_t kMaxGpus = 65'536;
constexpr uint64_t kMaxNodeName = 255;

}  // namespace

std::string EncodeUsage(const JobUsage& usage) {
  std::string out;
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(usage.host_source));
  PutVarint(out, static_cast<uint64_t>(std::max<int64_t>(0, usage.cpu_alloc_milli)));
  PutVarint(out, static_cast<uint64_t>(std::max<int64_t>(0, usage.mem_alloc_mib)));
  PutVarint(out, static_cast<uint64_t>(std::max<int64_t>(0, usage.oom_kills)));
  // Buckets in runs of consecutive minutes: (minutes since the last run's end, length, figures).
  std::vector<std::pair<std::size_t, std::size_t>> runs;  // [first, end)
  for (std::size_t i = 0; i < usage.buckets.size(); ++i) {
    if (!runs.empty() && usage.buckets[i].start_ms ==
                             usage.buckets[runs.back().second - 1].start_ms + kBucketMs) {
      ++runs.back().second;
    } else {
      runs.push_back({i, i + 1});
    }
  }
  PutVarint(out, runs.size());
  int64_t next_minute = 0;
  for (const auto& [first, end] : runs) {
    const int64_t minute = usage.buckets[first].start_ms / kBucketMs;
    PutVarint(out, static_cast<uint64_t>(std::max<int64_t>(0, minute - next_minute)));
    PutVarint(out, end - first);
    for (std::size_t i = first; i < end; ++i) {
      for (const FigureCodec& c : kCodecs) {
        const float v = usage.buckets[i].*(c.field);
        out.push_back(static_cast<char>(c.scale == Scale::kLog    ? Log(v)
                                        : c.scale == Scale::kWide ? Wide(v)
                                                                  : Pct(v)));
      }
    }
    next_minute = minute + static_cast<int64_t>(end - first);
  }
  PutVarint(out, usage.gpus.size());
  for (const GpuTotal& g : usage.gpus) {
    const std::string node = g.node.substr(0, kMaxNodeName);
    PutVarint(out, node.size());
    out += node;
    PutVarint(out, static_cast<uint64_t>(std::max(0, g.index)));
    PutVarint(out, static_cast<uint64_t>(std::max<int64_t>(0, g.samples)));
    PutVarint(out, static_cast<uint64_t>(std::llround(std::max(0.0, g.sm_sum))));
    PutVarint(out, static_cast<uint64_t>(std::max<int64_t>(0, g.busy_samples)));
    PutVarint(out, static_cast<uint64_t>(g.mem_peak_mib + 1));
    PutVarint(out, static_cast<uint64_t>(g.mem_total_mib + 1));
  }
  return out;
}

core::Result<JobUsage> DecodeUsage(std::string_view bytes) {
  using R = core::Result<JobUsage>;
  auto bad = [](const std::string& what) -> R { return core::Error("usage series: " + what); };
  Reader in(bytes);
  JobUsage u;
  uint8_t version = 0, source = 0;
  if (!in.Byte(version)) return bad("empty");
  if (version != 1 && version != kVersion) {
    return bad("unknown version " + std::to_string(version));
  }
  if (!in.Byte(source) || source > static_cast<uint8_t>(core::UsageSource::kProc)) {
    return bad("bad host source");
  }
  u.host_source = static_cast<core::UsageSource>(source);
  uint64_t cpu = 0, mem = 0, ooms = 0, runs = 0;
  if (!in.Varint(cpu) || !in.Varint(mem) || !in.Varint(ooms) || !in.Varint(runs)) {
    return bad("truncated header");
  }
  constexpr uint64_t kMaxInt = uint64_t{1} << 40;
  if (cpu > kMaxInt || mem > kMaxInt || ooms > kMaxInt) return bad("header value out of range");
  u.cpu_alloc_milli = static_cast<int64_t>(cpu);
  u.mem_alloc_mib = static_cast<int64_t>(mem);
  u.oom_kills = static_cast<int64_t>(ooms);
  if (runs > kMaxBuckets) return bad("too many runs");
  uint64_t minute = 0;
  for (uint64_t r = 0; r < runs; ++r) {
    uint64_t gap = 0, length = 0;
    if (!in.Varint(gap) || !in.Varint(length)) return bad("truncated run");
    if ((r > 0 && gap == 0) || length == 0) return bad("runs overlap or are empty");
    if (gap > kMaxBuckets || length > kMaxBuckets ||
        minute + gap + length > kMaxBuckets || u.buckets.size() + length > kMaxBuckets) {
      return bad("too many buckets");
    }
    if (in.left() / kFiguresPerBucket < length) return bad("truncated buckets");
    minute += gap;
    for (uint64_t i = 0; i < length; ++i, ++minute) {
      UsageBucket b;
      b.start_ms = static_cast<int64_t>(minute) * kBucketMs;
      for (const FigureCodec& c : kCodecs) {
        uint8_t v = 0;
        in.Byte(v);
        b.*(c.field) = c.scale == Scale::kLog                     ? FromLog(v)
                       : c.scale == Scale::kWide && version >= 2 ? FromWide(v)
                                                                 : FromPct(v);
      }
      u.buckets.push_back(b);
    }
  }
  uint64_t gpus = 0;
  if (!in.Varint(gpus) || gpus > kMaxGpus) return bad("bad GPU count");
  for (uint64_t i = 0; i < gpus; ++i) {
    GpuTotal g;
    uint64_t len = 0, index = 0, samples = 0, sm_sum = 0, busy = 0, peak = 0, total = 0;
    if (!in.Varint(len) || len > kMaxNodeName || !in.Bytes(len, g.node) || !in.Varint(index) ||
        !in.Varint(samples) || !in.Varint(sm_sum) || !in.Varint(busy) || !in.Varint(peak) ||
        !in.Varint(total)) {
      return bad("truncated GPU " + std::to_string(i));
    }
    if (index > 1024 || samples > kMaxInt || busy > samples || sm_sum > samples * 100 ||
        peak > kMaxInt || total > kMaxInt) {
      return bad("GPU " + std::to_string(i) + " out of range");
    }
    g.index = static_cast<int>(index);
    g.samples = static_cast<int64_t>(samples);
    g.sm_sum = static_cast<double>(sm_sum);
    g.busy_samples = static_cast<int64_t>(busy);
    g.mem_peak_mib = static_cast<int64_t>(peak) - 1;
    g.mem_total_mib = static_cast<int64_t>(total) - 1;
    u.gpus.push_back(std::move(g));
  }
  if (!in.done()) return bad("trailing bytes");
  return u;
}

}  // namespace gpufleet::advise
