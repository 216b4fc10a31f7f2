#include "gpu/gpu_probe.h"

#include "core/gpu_catalog.h"
#include "gpu/nvml_library.h"
#include "gpu/nvml_probe.h"
#include "gpu/simulated_probe.h"

namespace gpufleet::gpu {

OpenedProbe OpenProbe(const ProbeOptions& options) {
  OpenedProbe opened;
  if (options.simulated_gpus >= 0) {
    const core::GpuCatalog& catalog = core::GpuCatalog::Builtin();
    const auto model = options.simulated_model.empty()
                           ? std::nullopt
                           : catalog.Find(options.simulated_model);
    opened.probe = model ? std::make_unique<SimulatedProbe>(
                               options.simulated_gpus, catalog.model(*model).name,
                               static_cast<std::uint64_t>(catalog.model(*model).memory_gib * 1024))
                         : std::make_unique<SimulatedProbe>(options.simulated_gpus);
    opened.notice = "using " + std::to_string(options.simulated_gpus) +
                    " SIMULATED GPUs, as asked (--simulated-gpus)";
    return opened;
  }
  auto library = NvmlLibrary::Open(options.nvml_library);
  if (library.ok()) {
    opened.probe = std::make_unique<NvmlProbe>(std::move(library).value());
    return opened;
  }
  const int n = options.fallback_simulated_gpus;
  opened.probe = std::make_unique<SimulatedProbe>(n);
  opened.notice = "no NVIDIA driver: " + library.error() + "; using " + std::to_string(n) +
                  " SIMULATED GPUs (--simulated-gpus N to choose, 0 for none)";
  return opened;
}

}  // namespace gpufleet::gpu
