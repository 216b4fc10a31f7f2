#pragma once
// `SimulatedProbe`: GPUs that do not exist, for machines without an NVIDIA driver. Their names
// start with "SIMULATED" and every sample has `simulated` set, so no display can pass them off as
// real. Readings are a deterministic function of the GPU index and the caller's clock.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gpu_probe.h"

namespace gpufleet::gpu {

class SimulatedProbe final : public GpuProbe {
 public:
  // `model`: the name the GPUs report (after "SIMULATED "), with `memory_mib` each.
  explicit SimulatedProbe(int gpu_count, std::string model = "NVIDIA H100 80GB HBM3",
                          std::uint64_t memory_mib = 81559);

  std::string BackendName() const override { return "simulated"; }
  bool IsSimulated() const override { return true; }
  std::string DriverVersion() const override { return "simulated"; }
  int DeviceCount() const override { return gpu_count_; }
  GpuSample Sample(int index, double now_s) override;
  // Simulated GPUs raise no events; this only waits out the timeout.
  std::vector<GpuEvent> WaitEvents(int timeout_ms) override;
  GpuTopology Topology() override;

 private:
  int gpu_count_;
  std::string model_;
  std::uint64_t total_mib_;
};

}  // namespace gpufleet::gpu
