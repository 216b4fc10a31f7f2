// Fuzzes the body of POST /v1/jobs (controller/submit_request.h). An accepted body gives a job
// within every limit the parser promises; a refused one names the field at fault.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "controller/submit_request.h"
#include "core/check.h"

namespace {

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto job = controller::ParseSubmitRequest(body);
  if (!job) {
    // Only an unknown field with an empty name ("": 1) is refused without a field name.
    GPUFLEET_CHECK(!job.failure().field.empty() ||
                   job.failure().message.find("unknown field ''") != std::string::npos);
    return 0;
  }
  const store::JobRecord& j = job.value();
  GPUFLEET_CHECK(!j.argv.empty() && !j.argv[0].empty());
  for (const std::string& arg : j.argv) GPUFLEET_CHECK(!HasNul(arg));
  for (const auto& [name, value] : j.env) {
    GPUFLEET_CHECK(!name.empty() && name.find('=') == std::string::npos);
    GPUFLEET_CHECK(!HasNul(name) && !HasNul(value));
  }
  GPUFLEET_CHECK(!j.name.empty() && j.name.size() <= 200 && !HasNul(j.name));
  GPUFLEET_CHECK(!j.queue.empty() && !HasNul(j.queue));
  GPUFLEET_CHECK(j.workdir.empty() || (j.workdir[0] == '/' && !HasNul(j.workdir)));
  GPUFLEET_CHECK(j.gpus >= 1 && j.gpus <= 1024);
  GPUFLEET_CHECK(j.gpu_milli >= 1 && j.gpu_milli <= 1000 && (j.gpu_milli == 1000 || j.gpus == 1));
  GPUFLEET_CHECK(j.nodes >= 1 && j.nodes <= controller::kMaxJobNodes);
  GPUFLEET_CHECK(j.priority >= -controller::kMaxJobPriority &&
                 j.priority <= controller::kMaxJobPriority);
  GPUFLEET_CHECK(j.cpu_milli >= 0 && j.memory_mib >= 0 && j.time_limit_s >= 0);
  return 0;
}
