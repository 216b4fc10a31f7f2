// Fuzzes the openb node list reader (sim/openb_trace.h): sn,cpu_milli,memory_mib,gpu,model.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "core/check.h"
#include "core/gpu_catalog.h"
#include "core/node.h"
#include "sim/openb_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  std::string text(reinterpret_cast<const char*>(data), size);
  const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
  auto nodes = sim::ParseOpenbNodes(std::move(text), "fuzz.csv", catalog);
  if (!nodes) return 0;
  std::set<std::string> names;
  for (const core::NodeSpec& node : nodes.value()) {
    GPUFLEET_CHECK(!node.name.empty() && names.insert(node.name).second);
    GPUFLEET_CHECK(node.num_gpus >= 0 && node.num_gpus <= core::kMaxGpusPerNode);
    GPUFLEET_CHECK(node.cpu_milli >= 0 && node.memory_mib >= 0);
    GPUFLEET_CHECK(node.model < catalog.size());
  }
  return 0;
}
