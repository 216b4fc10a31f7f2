// Fuzzes the generic CSV job trace (sim/job_trace.h, `--trace csv:FILE`). The first byte picks
// the read options (limit and time window), so that their code paths are fuzzed too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>

#include "core/check.h"
#include "sim/job_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  if (size == 0) return 0;
  sim::TraceReadOptions options;
  options.limit = data[0] & 0x7;
  options.window_start_s = (data[0] >> 3) & 0x3;
  options.window_end_s = (data[0] >> 5) * 10;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto trace = sim::ParseGenericCsv(std::move(text), "fuzz.csv", options);
  if (!trace) return 0;
  const auto& jobs = trace.value().jobs;
  if (options.limit > 0) GPUFLEET_CHECK(static_cast<int64_t>(jobs.size()) <= options.limit);
  std::unordered_set<int64_t> ids;
  for (size_t i = 0; i < jobs.size(); ++i) {
    GPUFLEET_CHECK(ids.insert(jobs[i].id).second);
    GPUFLEET_CHECK(jobs[i].duration_s > 0 && jobs[i].num_gpus >= 1 && jobs[i].submit_s >= 0);
    GPUFLEET_CHECK(jobs[i].gpu_milli >= 1 && jobs[i].gpu_milli <= core::kGpuMilli);
    if (i == 0) GPUFLEET_CHECK(jobs[i].submit_s == 0);
    if (i > 0) GPUFLEET_CHECK(jobs[i - 1].submit_s <= jobs[i].submit_s);
  }
  return 0;
}
