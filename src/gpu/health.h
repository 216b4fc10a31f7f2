#pragma once
// GPU health and sample sanity, both pure functions of what the probe read.
//
// `SanitizeSample` clamps values the driver should never report (utilization over 100%, used
// memory over total) and flags counters that run backwards, so one odd reading cannot poison a
// dashboard or a scheduling decision. `HealthTracker` turns samples and driver events into a
// healthy/unhealthy verdict with reasons: critical XIDs and double-bit ECC events are sticky (they
// stay until the agent restarts, as a GPU that threw one needs a look); lost GPUs, thermal
// slowdown, uncorrectable ECC counts and row-remapping trouble hold while they last.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/gpu_sample.h"

namespace gpufleet::gpu {

// A short description of a known XID ("GPU has fallen off the bus"), or "" for unknown ones.
std::string_view XidDescription(std::uint64_t xid);
// XIDs that point at the hardware or driver rather than at the application's own bug.
bool IsCriticalXid(std::uint64_t xid);

// Clamps and flags `sample` in place; `previous` is this GPU's previous sample, or null.
void SanitizeSample(GpuSample& sample, const GpuSample* previous);

class HealthTracker {
 public:
  void OnEvent(const GpuEvent& event);
  // Sets `sample.health`, `xid_count` and `last_xid` from the sample and the events seen so far.
  void Evaluate(GpuSample& sample) const;

 private:
  struct PerGpu {
    std::uint64_t xid_count = 0;
    std::uint32_t last_xid = 0;
    std::vector<std::string> sticky_reasons;
  };
  std::map<int, PerGpu> gpus_;
};

}  // namespace gpufleet::gpu
