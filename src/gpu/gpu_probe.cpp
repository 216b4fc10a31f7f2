#include "gpu/gpu_probe.h"

#include "gpu/nvml_library.h"
#include "gpu/nvml_probe.h"
#include "gpu/simulated_probe.h"

namespace gpufleet::gpu {

OpenedProbe OpenProbe(const ProbeOptions& options) {
  OpenedProbe opened;
  if (options.simulated_gpus >= 0) {
    opened.probe = std::make_unique<SimulatedProbe>(options.simulated_gpus);
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
