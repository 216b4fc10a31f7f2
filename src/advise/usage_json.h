#pragma once
// JSON forms of a job's usage series and facts, for the labelled suite (advise/testdata), tools
// and tests. Pure: text in, text out.
//
// JobUsage: {"host_source", "cpu_alloc_milli", "mem_alloc_mib", "oom_kills", "bucket_fields":
// [names], "buckets": [[one value per field], ...], "gpus": [{"node", "index", "samples",
// "sm_sum", "busy_samples", "mem_peak_mib", "mem_total_mib"}]}; bucket figures keep two decimals.
// JobFacts: {"gpus", "nodes", "cpu_milli", "memory_mib", "node_cpu_milli", "gpu_model", "run_ms",
// "ended"}.
#include <string>
#include <string_view>

#include "advise/advisor.h"
#include "advise/usage_series.h"
#include "core/result.h"

namespace gpufleet::advise {

// The JSON text of `usage` (one line).
std::string UsageToJson(const JobUsage& usage);
// Reads UsageToJson's form; an error names the key at fault. Bucket fields may come in any order
// and missing ones read as -1 (not measured).
core::Result<JobUsage> UsageFromJson(std::string_view text);

// The JSON text of `facts` (one line).
std::string FactsToJson(const JobFacts& facts);
// Reads FactsToJson's form; missing keys keep their defaults, a wrongly typed one is an error.
core::Result<JobFacts> FactsFromJson(std::string_view text);

}  // namespace gpufleet::advise
