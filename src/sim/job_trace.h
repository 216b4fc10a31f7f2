#pragma once
// Job traces for the time simulator, by format (`--trace FORMAT:FILE`):
//   philly:FILE  Microsoft Philly as prepared by Pollux (philly_trace.h).
//   openb:FILE   an Alibaba openb pod list in time mode: arrival = creation_time, run time =
//                deletion_time - creation_time; GPU shares, CPU, memory and GPU models kept; the
//                queue is the pod's qos class. Pods without GPUs, without a deletion time or with
//                a zero run time never ran a GPU job and are skipped (counted in `skipped`).
//   csv:FILE     our own generic format, header first:
//                  id,submit_s,duration_s,num_gpus[,queue][,gpu_milli][,cpu_milli][,memory_mib]
//                id: unique integer; submit_s >= 0 (any order: rows are sorted); duration_s > 0;
//                num_gpus >= 1 (gpu_milli < 1000 asks a share of one GPU); cpu_milli and
//                memory_mib are per GPU.
// Every reader sorts by submit time (stably), keeps the time window and then the first `limit`
// jobs, and counts submit times from the first kept job. Every error names file, line and column.
#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu_catalog.h"
#include "core/result.h"
#include "sim/time_sim.h"

namespace gpufleet::sim {

struct TraceReadOptions {
  int64_t limit = 0;           // keep the first N jobs in submit order (0: all)
  int64_t window_start_s = 0;  // keep jobs submitted in [start, end) seconds after the first
  int64_t window_end_s = 0;    // 0: no end
};

struct JobTrace {
  std::vector<TraceJob> jobs;  // sorted by submit time; ids unique
  int64_t skipped = 0;         // rows that describe no GPU job (see above)
  std::string note;            // what the reader did that a user should know, or ""
};

core::Result<JobTrace> ReadJobTrace(const std::string& format_and_path,
                                    const TraceReadOptions& options,
                                    const core::GpuCatalog& catalog);
// The generic CSV format from text (for tests and generated inputs).
core::Result<JobTrace> ParseGenericCsv(std::string text, const std::string& path,
                                       const TraceReadOptions& options);

}  // namespace gpufleet::sim
