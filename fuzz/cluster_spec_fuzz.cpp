// Fuzzes the TOML cluster spec (sim/cluster_spec.h), the TOML parser included (header-only in
// the fuzz build).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "core/gpu_catalog.h"
#include "sim/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = sim::ParseClusterToml(text, "fuzz.toml", core::GpuCatalog::Builtin());
  if (!spec) return 0;
  for (const core::NodeSpec& node : spec.value().nodes) {
    GPUFLEET_CHECK(node.num_gpus >= 0 && node.num_gpus <= core::kMaxGpusPerNode);
    GPUFLEET_CHECK(node.cpu_milli >= 0 && node.memory_mib >= 0);
  }
  return 0;
}
