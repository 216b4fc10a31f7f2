#pragma once
// JSON views of GPU samples, for `gpufleet top --json` and the agent's /v1 endpoints. A figure the
// GPU cannot give is `null`; key names carry their unit (`_pct`, `_mib`, `_w`, `_c`, `_mhz`).
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gpu_sample.h"
#include "gpu/sampler.h"

namespace gpufleet::agent {

struct HostInfo {
  std::string hostname;
  std::string backend;  // "nvml" or "simulated"
  std::string driver_version;
  std::string notice;  // why simulated GPUs are in use, or ""
};

// One document: the host, then every GPU with its processes. `indent` < 0 prints one line.
// Without `with_commands` each process's command line is null: the agent's own port serves it to
// whoever can connect (a container job on the host's network, whose PID namespace hides other
// processes' command lines; a host mounted with hidepid), and a command line may hold a secret.
std::string GpusToJson(const HostInfo& host, const std::vector<gpu::GpuSample>& samples,
                       int indent = -1, bool with_commands = true);
// A GPU's history points and aggregates.
std::string HistoryToJson(int gpu, const std::vector<gpu::HistoryPoint>& points,
                          const std::vector<gpu::HistoryAggregate>& aggregates);
// The common-ancestor matrix.
std::string TopologyToJson(const gpu::GpuTopology& topology);
// Names of the bits set in a clock-event-reason mask ("gpu_idle", "sw_power_cap", ...).
std::vector<std::string> ClockEventReasonNames(std::uint64_t mask);

}  // namespace gpufleet::agent
