#pragma once
// `SimulatedProbe`: GPUs that do not exist, for machines without an NVIDIA driver. Their names
// start with "SIMULATED" and every sample has `simulated` set, so no display can pass them off as
// real. Readings are a deterministic function of the GPU index and the caller's clock.
#include <string>
#include <vector>

#include "gpu/gpu_probe.h"

namespace gpufleet::gpu {

class SimulatedProbe final : public GpuProbe {
 public:
  explicit SimulatedProbe(int gpu_count);

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
};

}  // namespace gpufleet::gpu
