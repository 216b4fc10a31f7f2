// Fuzzes the Philly trace reader (sim/philly_trace.h) on the text of a trace file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/check.h"
#include "sim/philly_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto trace = sim::ParsePhillyTrace(std::move(text), "fuzz.csv", sim::PhillyReadOptions{});
  if (!trace) return 0;
  const auto& jobs = trace.value().jobs;
  GPUFLEET_CHECK(!jobs.empty());
  GPUFLEET_CHECK(jobs.front().submit_s == 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    GPUFLEET_CHECK(jobs[i].id == static_cast<int64_t>(i));
    GPUFLEET_CHECK(jobs[i].duration_s > 0 && jobs[i].num_gpus > 0 && !jobs[i].vc.empty());
    if (i > 0) GPUFLEET_CHECK(jobs[i - 1].submit_s <= jobs[i].submit_s);
  }
  return 0;
}
