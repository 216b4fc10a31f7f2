#pragma once
// `JobUsage`: a job's usage over its life, as the controller keeps it in the store and the advisor
// (advise/advisor.h) reads it, and `UsageSeriesBuilder`, which makes it from the agents' samples.
//
// The series is job-wide, in one-minute buckets: each bucket summarizes every GPU-sample of the
// job's GPUs and the host counters of every rank in that minute. Per GPU, whole-life totals are
// kept beside it (for unused GPUs and stragglers). Stored, a bucket is 16 bytes (one byte a figure,
// see EncodeUsage), so an hour costs 960 bytes plus a fixed header and 24 bytes a GPU.
//
// Pure: no clock, file or socket. Times are milliseconds given by the caller; a bucket's
// `start_ms` counts from the job's start.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/host_usage.h"
#include "core/result.h"

namespace gpufleet::advise {

inline constexpr int64_t kBucketMs = 60'000;

// One minute of the job. Every figure is -1 when nothing measured it in this bucket.
struct UsageBucket {
  int64_t start_ms = 0;  // since the job's start, a multiple of kBucketMs
  // GPU side, over the bucket's samples of all the job's GPUs.
  float sm_mean = -1, sm_min = -1, sm_max = -1;  // SM utilization, % (the job's own processes'
                                                 // SM where the GPU is shared and NVML says)
  float membw_pct = -1;      // memory-bandwidth utilization, %, mean
  float fb_used_pct = -1;    // framebuffer used of total, %, the fullest GPU's largest sample
  float pcie_mb_s = -1;      // PCIe rx+tx per GPU, MB/s, mean
  float power_pct = -1;      // power draw of its limit, %, mean
  float throttled_pct = -1;  // share of GPU-samples with a thermal or power clock-event reason, %
  float active_gpus = -1;    // mean count of the job's GPUs busy (SM >= 5%) in a sample
  // Host side, rates over the bucket from the ranks' counters, summed over ranks.
  float cpu_used_pct = -1;       // CPU time used of the job's CPU allocation, %
  float cpu_throttled_pct = -1;  // share of its CFS periods that hit the CPU limit, %
  float cpu_pressure_pct = -1;   // PSI cpu "some" (v2), else run-queue wait, % of wall time
  float io_pressure_pct = -1;    // PSI io "some" (v2), else time with a task in D state (/proc), %
  float mem_pressure_pct = -1;   // PSI memory "some" (v2 only), % of wall time
  float mem_used_pct = -1;       // memory charged of its limit (else of the node's), %, largest
  float io_mb_s = -1;            // block I/O read+write, MB/s
};

// One GPU of the job over its whole life.
struct GpuTotal {
  std::string node;
  int index = 0;
  int64_t samples = 0;         // samples with an SM reading
  double sm_sum = 0;           // sum of SM % over those samples
  int64_t busy_samples = 0;    // samples with SM >= 5%
  int64_t mem_peak_mib = -1;   // largest framebuffer use seen (-1: never read)
  int64_t mem_total_mib = -1;  // its framebuffer size (-1: unknown)
  double sm_mean() const { return samples > 0 ? sm_sum / samples : -1; }
};

struct JobUsage {
  core::UsageSource host_source = core::UsageSource::kNone;  // where the host figures came from
  int64_t cpu_alloc_milli = 0;  // what `cpu_used_pct` is relative to (0: unknown)
  int64_t mem_alloc_mib = 0;    // what `mem_used_pct` is relative to (0: unknown)
  int64_t oom_kills = 0;        // processes the kernel's OOM killer ended, all ranks
  std::vector<UsageBucket> buckets;  // in time order, no two with the same start
  std::vector<GpuTotal> gpus;        // one per (node, index) the job held
};

// The figures the builder takes from one GPU sample; -1 (or !has_reasons) when not read.
struct GpuReading {
  int index = 0;
  double sm_pct = -1;        // device SM utilization
  double own_sm_pct = -1;    // the job's own processes' SM, where the GPU is shared
  double membw_pct = -1;
  int64_t mem_used_mib = -1, mem_total_mib = -1;
  double pcie_mb_s = -1;     // rx + tx
  double power_w = -1, power_limit_w = -1;
  bool has_reasons = false;
  uint64_t clock_event_reasons = 0;  // nvmlClocksEventReason* bits
};

// nvmlClocksEventReason bits that mean the GPU slowed down for heat or power (not idle, not
// application clocks): SW power cap, HW slowdown, SW/HW thermal, HW power brake.
inline constexpr uint64_t kThrottleReasonsMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

// Builds a job's JobUsage from samples as they come. Samples older than the newest bucket are
// folded into their own bucket; samples before the start or a repeated sample time of one GPU are
// ignored (agents resend their last sample).
class UsageSeriesBuilder {
 public:
  // `start_ms`: the job's start. `cpu_alloc_milli`/`mem_alloc_mib`: what the job may use (its limit
  // or request, else its nodes' share); 0 when unknown, and then those percentages stay -1.
  UsageSeriesBuilder(int64_t start_ms, int64_t cpu_alloc_milli, int64_t mem_alloc_mib);
  // Carries on from a stored series (a controller restart): new samples extend it.
  static UsageSeriesBuilder Resume(int64_t start_ms, JobUsage stored);

  // One GPU sample of the job's GPU on `node`, read at `t_ms`.
  void AddGpu(std::string_view node, const GpuReading& reading, int64_t t_ms);
  // Rank `rank`'s cumulative host counters at `t_ms` (the agent's latest read of them).
  void AddHost(int rank, const core::HostUsage& usage, int64_t t_ms);

  // The series so far, the open bucket included.
  JobUsage Snapshot() const;
  // The per-GPU totals so far (cheap: no bucket is copied).
  const std::vector<GpuTotal>& gpu_totals() const { return usage_.gpus; }

 private:
  // Running sums of one bucket. Host shares (pressure, throttling) are means over ranks of
  // counter-delta / wall-delta; host rates (CPU, I/O) are that mean times the ranks seen.
  struct Accum {
    double sm_sum = 0, sm_min = 1e9, sm_max = -1;
    int64_t sm_n = 0, busy_n = 0;
    double membw_sum = 0;
    int64_t membw_n = 0;
    double fb_max = -1;
    double pcie_sum = 0;
    int64_t pcie_n = 0;
    double power_sum = 0;
    int64_t power_n = 0;
    int64_t reasons_n = 0, throttled_n = 0;
    double wall_us = 0;  // sum over host deltas of their span
    std::array<double, core::kUsageFigures> delta{};
    std::array<double, core::kUsageFigures> delta_wall{};  // wall time over which `delta` was seen
    double mem_max_bytes = -1;
    uint64_t ranks = 0;  // ranks seen (bit per rank, modulo 64)
  };
  struct HostPrev {
    int rank = 0;
    int64_t t_ms = -1;
    core::HostUsage usage;
  };
  struct LastGpuSample {
    std::string node;
    int index = 0;
    int64_t t_ms = -1;
  };
  // The bucket of `t_ms` (made when new) and its sums; null for a time before the start or in a
  // bucket resumed from the store.
  UsageBucket* BucketAt(int64_t t_ms, Accum** sums);
  int64_t start_ms_;
  JobUsage usage_;
  std::size_t stored_buckets_ = 0;  // usage_.buckets[0, this) came from Resume
  std::vector<Accum> sums_;         // parallel to usage_.buckets
  std::vector<HostPrev> host_prev_;
  std::vector<LastGpuSample> last_gpu_;
};

// The stored form: a version byte, the header, then 16 bytes a bucket (each figure quantized to
// one byte: percentages in steps of 0.5 up to 127, CPU and memory against the job's request in
// steps of 0.5 to 100 and then 8 steps an octave to ~10,000% (a job on a node without limits uses
// more than it asked), MB/s and GPU counts on a log scale; 255 is "not measured"), then the GPUs.
// Decoding checks every length and value, and reads version 1 too (CPU and memory capped at 127).
std::string EncodeUsage(const JobUsage& usage);
core::Result<JobUsage> DecodeUsage(std::string_view bytes);

}  // namespace gpufleet::advise
