#pragma once
// Renders GPU samples in the Prometheus text exposition format (version 0.0.4), with
// dcgm-exporter's metric names, units and labels (`gpu`, `UUID`, `pci_bus_id`, `device`,
// `modelName`, `Hostname`, `DCGM_FI_DRIVER_VERSION`), so Grafana dashboards built for dcgm-exporter
// work unchanged. Our own series are prefixed `gpufleet_`: health, per-process and per-job GPU
// memory and SM%, field support, agent info. A figure the GPU does not support is left out, as
// dcgm-exporter does, and `gpufleet_gpu_field_supported` says so; a lost GPU keeps only its health
// series, since its other readings would be stale.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gpu_sample.h"

namespace gpufleet::agent {

struct MetricsContext {
  std::string hostname;
  std::string backend;  // "nvml" or "simulated"
  std::string driver_version;
  std::string version;  // gpufleet's
  std::uint64_t sample_rounds = 0;
  double seconds_since_last_round = 0;
};

// Appends the exposition of `samples` to `out` (cleared first); reuse `out` between scrapes to
// avoid reallocating.
void RenderMetrics(const std::vector<gpu::GpuSample>& samples, const MetricsContext& context,
                   std::string& out);

// Escapes a label value: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);

}  // namespace gpufleet::agent
