#pragma once
// Reader for the Microsoft Philly trace as prepared by the Pollux (OSDI'21) artifact
// (`philly_pollux_osdi21.csv`: timestamp,duration,num_gpus,gpu_time,cluster). The rows are not
// in submit order; the reader sorts them (stably, so equal timestamps keep file order) and can
// keep a time window or the first N jobs. Exact duplicate rows are distinct jobs in the real
// trace (63 of them) and are kept; the count is reported. Every error names file, line and
// column.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpufleet::sim {

struct PhillyJob {
  int64_t id = 0;          // position in submit order, from 0
  int line = 0;            // line in the trace file
  int64_t submit_s = 0;    // seconds after the first kept job's submit time
  int64_t duration_s = 0;  // run time at reference speed (rounded up to whole seconds)
  int num_gpus = 0;
  std::string vc;  // virtual cluster
};

struct PhillyReadOptions {
  int64_t limit = 0;           // keep the first N jobs in submit order (0: all)
  int64_t window_start_s = 0;  // keep jobs submitted in [start, end) seconds after the first
  int64_t window_end_s = 0;    // 0: no end
};

struct PhillyTrace {
  std::vector<PhillyJob> jobs;  // in submit order
  int64_t first_submit_unix_s = 0;
  int64_t duplicate_rows = 0;  // rows equal in every field to an earlier row (kept as jobs)
};

core::Result<PhillyTrace> ReadPhillyTrace(const std::string& path,
                                          const PhillyReadOptions& options);
// The same from the file's text; `path` names it in errors.
core::Result<PhillyTrace> ParsePhillyTrace(std::string text, const std::string& path,
                                           const PhillyReadOptions& options);

// "YYYY-MM-DD HH:MM:SS" (UTC) as seconds since 1970-01-01; an error when malformed.
core::Result<int64_t> ParseTimestamp(std::string_view text);

}  // namespace gpufleet::sim
