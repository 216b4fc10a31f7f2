// Fuzzes the openb pod list reader (sim/openb_trace.h): name,cpu_milli,memory_mib,num_gpu,
// gpu_milli and the optional gpu_spec, qos, creation_time, deletion_time.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "core/check.h"
#include "core/gpu_catalog.h"
#include "sim/openb_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto pods = sim::ParseOpenbPods(std::move(text), "fuzz.csv", core::GpuCatalog::Builtin());
  if (!pods) return 0;
  std::set<std::string> names;
  for (const sim::OpenbPod& pod : pods.value()) {
    const core::JobSpec& job = pod.job;
    GPUFLEET_CHECK(!job.name.empty() && names.insert(job.name).second);
    GPUFLEET_CHECK(job.num_gpu >= 0 && job.num_gpu <= core::kMaxGpusPerNode);
    GPUFLEET_CHECK(job.gpu_milli >= 0 && job.gpu_milli <= core::kGpuMilli);
    GPUFLEET_CHECK(job.num_gpu == 0 ? job.gpu_milli == 0 : job.gpu_milli > 0);
    GPUFLEET_CHECK(job.cpu_milli >= 0 && job.memory_mib >= 0);
  }
  return 0;
}
