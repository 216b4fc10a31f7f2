#pragma once
// The occupancy doctor: from a job's usage series (advise/usage_series.h), its request and its
// nodes' facts, says what holds the job back, with the figures that show it, the GPU-hours it
// wastes and what to change, in words a PyTorch user acts on.
//
// Pure: no clock, file or socket; the controller and the simulator call it alike.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "advise/usage_series.h"

namespace gpufleet::advise {

enum class FindingKind {
  kIdle,               // allocated GPUs at ~0% SM for a long stretch
  kUnusedGpus,         // k GPUs asked, only m < k ever active
  kInputBoundCpu,      // low/saw-toothed SM while the job's CPU is saturated or stalled
  kInputBoundIo,       // low SM with high I/O stall
  kTransferBound,      // high PCIe traffic with low SM
  kUnderBatched,       // moderate SM, little memory used, no host pressure
  kMemoryBound,        // memory near full with low SM, or an OOM kill
  kThrottled,          // thermal or power clock-event reasons a significant share of the time
  kImbalance,          // one GPU or node consistently below the rest
  kOverRequestedHost,  // CPU or memory asked far above what the job used
  kEfficient,          // nothing wrong
};
// The kind's name as reports, JSON and the labelled suite spell it: "idle", "unused_gpus",
// "input_bound_cpu", "input_bound_io", "transfer_bound", "under_batched", "memory_bound",
// "throttled", "imbalance", "over_requested_host", "efficient".
std::string_view FindingKindName(FindingKind kind);
// Sets `out` to the kind FindingKindName calls `name`; false (and `out` untouched) for any other.
bool ParseFindingKind(std::string_view name, FindingKind& out);

enum class Severity { kInfo, kWarning, kCritical };
// The severity's name: "info", "warning" or "critical".
std::string_view SeverityName(Severity severity);

// One figure behind a finding, over the span it covers.
struct Evidence {
  std::string figure;  // e.g. "sm_mean", "cpu_used_pct" (the UsageBucket field names)
  double value = 0;
  std::string unit;                // "%", "MB/s", "GPUs", "min", ...
  int64_t from_ms = 0, to_ms = 0;  // since the job's start
};

struct Finding {
  FindingKind kind = FindingKind::kEfficient;
  Severity severity = Severity::kInfo;
  std::string summary;  // one line, with the key figures
  std::vector<Evidence> evidence;
  double waste_gpu_h = 0;           // GPU-hours this costs (allocated but not used for it)
  std::vector<std::string> advice;  // one or two concrete steps
  bool for_admins = false;          // a node problem (throttling, a slow node), not the user's
  std::string node;                 // the node it names, when it names one
};

// What the advisor knows of the job besides its usage.
struct JobFacts {
  int gpus = 0;  // GPUs allocated, all nodes
  // The share of each of those GPUs the job holds: below 1 for a --gpu-share job, whose GPU time
  // (allocated and wasted) is that share of the GPUs' time.
  double gpu_share = 1;
  int nodes = 1;
  int64_t cpu_milli = 0;       // CPU asked (0: none asked)
  int64_t memory_mib = 0;      // memory asked (0: none asked)
  int64_t node_cpu_milli = 0;  // CPUs of one of its nodes (0: unknown)
  std::string gpu_model;       // as the catalog names it, "" when unknown
  int64_t run_ms = 0;          // how long it ran (so far)
  bool ended = false;
};

// Thresholds; the defaults are what docs/advise.md explains ("How the advisor decides").
struct AdviseOptions {
  // Idle: every GPU of the job at about 0% SM for a stretch this long. NVML reads 0% on an idle
  // GPU; 2% leaves room for a monitoring kernel now and then. Ten minutes is past any checkpoint
  // save, evaluation pass or start-up load of a training loop: what is left is a job nobody drives.
  int64_t idle_min_ms = 10 * 60'000;
  double idle_sm_pct = 2;
  // A GPU counts as used over the job's life when at least this share of its samples were busy
  // (SM >= 5%, the series' own rule) or it ever held this much memory: a CUDA context and the
  // cuDNN/cuBLAS workspaces stay below 1 GiB, any real tensors go beyond it.
  double used_busy_share = 0.01;
  int64_t used_mem_mib = 1024;
  // Below this SM (mean over the used GPUs in a minute) the GPUs are starved: a well-fed training
  // step keeps a kernel running nearly all the time (90%+), so under 70% about a third of the GPU
  // time goes to waiting. The waste of a starved minute is the share of it the same work would
  // not have needed at this level: used GPUs x (1 - sm / good_sm_pct).
  double good_sm_pct = 70;
  // A bottleneck is reported only when it costs at least this share of the job's allocated GPU
  // time: noise (a slow minute, an evaluation pass) stays under it.
  double min_waste_share = 0.05;
  // CPU-bound input: the job uses nearly all the CPU it may (cpu_used_pct) and the CFS quota
  // stops it in a fifth of the time or more (cpu_throttled_pct); or, without a limit, its threads
  // wait for a CPU (cpu_pressure_pct: PSI, or run-queue wait on v1) 40% of the time or more.
  double cpu_saturated_pct = 85;
  double cpu_throttled_pct = 20;
  double cpu_pressure_pct = 40;
  // I/O-bound input: a task of the job stalled on I/O (PSI io, or a process in D state on v1)
  // 30% of the time or more: a loader that waits that long cannot keep a GPU fed.
  double io_stall_pct = 30;
  // Transfer-bound: PCIe traffic per GPU this high (a fifth of a PCIe 4.0 x16 link, a third of
  // 3.0 x16 in practice) while SM is low means the step waits on copies.
  double pcie_high_mb_s = 4000;
  // Memory: GPU memory this full with low SM (allocator churn, the largest batch that fits is
  // small), or host memory this close to its limit; and GPU memory under gpu_mem_small_pct with
  // moderate SM and no host pressure: the batch could be several times larger.
  double gpu_mem_full_pct = 95;
  double host_mem_full_pct = 95;
  double gpu_mem_small_pct = 30;
  // Throttled: thermal or power clock-event reasons in at least this share of the GPU samples;
  // a throttled GPU runs its clocks lower by about `throttle_slowdown` (the waste charged).
  double throttled_share_pct = 20;
  double throttle_slowdown = 0.25;
  // Imbalance: the lowest node (else GPU) below `imbalance_ratio` of the others' median SM and at
  // least `imbalance_gap_pct` points under it.
  double imbalance_ratio = 0.8;
  double imbalance_gap_pct = 15;
  // Host over-request: over at least `over_min_run_ms`, the job used at most this share of its
  // CPU (mean) or memory (peak), and what it left unused is worth giving back.
  int64_t over_min_run_ms = 20 * 60'000;
  double over_cpu_used_pct = 25;
  int64_t over_cpu_slack_milli = 2000;
  double over_mem_used_pct = 25;
  int64_t over_mem_slack_mib = 4096;
  // Severity from the share of the job's allocated GPU time a finding wastes.
  double critical_share = 0.5;
  double warning_share = 0.15;
};

// The findings, worst waste first; exactly one kEfficient finding when nothing is wrong. A job
// with no usage measured gets no finding at all.
std::vector<Finding> Advise(const JobUsage& usage, const JobFacts& facts,
                            const AdviseOptions& options = {});

}  // namespace gpufleet::advise
