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
// "idle", "unused_gpus", "input_bound_cpu", "input_bound_io", "transfer_bound", "under_batched",
// "memory_bound", "throttled", "imbalance", "over_requested_host", "efficient".
std::string_view FindingKindName(FindingKind kind);
bool ParseFindingKind(std::string_view name, FindingKind& out);

enum class Severity { kInfo, kWarning, kCritical };
std::string_view SeverityName(Severity severity);  // "info", "warning", "critical"

// One figure behind a finding, over the span it covers.
struct Evidence {
  std::string figure;  // e.g. "sm_mean", "cpu_used_pct" (the UsageBucket field names)
  double value = 0;
  std::string unit;    // "%", "MB/s", "GPUs", "min", ...
  int64_t from_ms = 0, to_ms = 0;  // since the job's start
};

struct Finding {
  FindingKind kind = FindingKind::kEfficient;
  Severity severity = Severity::kInfo;
  std::string summary;            // one line, with the key figures
  std::vector<Evidence> evidence;
  double waste_gpu_h = 0;         // GPU-hours this costs (allocated but not used for it)
  std::vector<std::string> advice;  // one or two concrete steps
  bool for_admins = false;        // a node problem (throttling, a slow node), not the user's
  std::string node;               // the node it names, when it names one
};

// What the advisor knows of the job besides its usage.
struct JobFacts {
  int gpus = 0;                   // GPUs allocated, all nodes
  int nodes = 1;
  int64_t cpu_milli = 0;          // CPU asked (0: none asked)
  int64_t memory_mib = 0;         // memory asked (0: none asked)
  int64_t node_cpu_milli = 0;     // CPUs of one of its nodes (0: unknown)
  std::string gpu_model;          // as the catalog names it, "" when unknown
  int64_t run_ms = 0;             // how long it ran (so far)
  bool ended = false;
};

// Thresholds; the defaults are what docs/advise.md explains.
struct AdviseOptions {
  int64_t idle_min_ms = 10 * 60'000;  // shortest idle stretch reported
  double idle_sm_pct = 2;             // "about 0%"
  double busy_sm_pct = 5;             // a GPU counts as used at this SM
  double low_sm_pct = 40;             // below this, the GPU is starved
};

// The findings, worst waste first; exactly one kEfficient finding when nothing is wrong. A job
// with no usage measured gets no finding at all.
std::vector<Finding> Advise(const JobUsage& usage, const JobFacts& facts,
                            const AdviseOptions& options = {});

}  // namespace gpufleet::advise
