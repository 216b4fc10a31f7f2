// Fuzzes the autoscaler's TOML file (scale/autoscale_config.h), the TOML parser included
// (header-only in the fuzz build), and checks what a parse that succeeds promises.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "core/gpu_catalog.h"
#include "core/node.h"
#include "scale/autoscale_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = scale::ParseAutoscaleToml(text, "fuzz.toml", core::GpuCatalog::Builtin(), false);
  if (!config) return 0;
  double floor = 0;
  for (const scale::NodeGroup& g : config.value().groups) {
    GPUFLEET_CHECK(scale::ValidScaleName(g.name) && g.name.size() <= 40);
    GPUFLEET_CHECK(g.gpus >= 1 && g.gpus <= core::kMaxGpusPerNode);
    GPUFLEET_CHECK(g.min >= 0 && g.min <= g.max);
    GPUFLEET_CHECK(g.price_per_hour >= 0 && g.spot_price_per_hour >= 0);
    GPUFLEET_CHECK(g.spot_price_per_hour <= g.price_per_hour);
    GPUFLEET_CHECK(g.boot_s >= 0 && g.cpu_milli > 0 && g.memory_mib > 0);
    floor += g.min * g.price_per_hour;
  }
  GPUFLEET_CHECK(floor <= config.value().policy.max_spend_per_hour);
  GPUFLEET_CHECK(config.value().policy.scan_interval_s >= 1);
  return 0;
}
