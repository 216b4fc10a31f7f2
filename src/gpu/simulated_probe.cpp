#include "gpu/simulated_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace gpufleet::gpu {
namespace {

constexpr std::uint64_t kMiB = 1024ULL * 1024ULL;
constexpr std::uint64_t kReservedMiB = 512;

}  // namespace

SimulatedProbe::SimulatedProbe(int gpu_count, std::string model, std::uint64_t memory_mib)
    : gpu_count_(gpu_count < 0 ? 0 : gpu_count),
      model_(std::move(model)),
      total_mib_(std::max<std::uint64_t>(memory_mib, 2 * kReservedMiB)) {}

GpuSample SimulatedProbe::Sample(int index, double now_s) {
  GpuSample s;
  s.index = index;
  s.simulated = true;
  s.time_s = now_s;
  s.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  char text[64];
  std::snprintf(text, sizeof text, "GPU-5151a7ed-0000-4000-8000-%012d", index);
  s.uuid = text;
  std::snprintf(text, sizeof text, "00000000:%02X:00.0", 0x18 + 0x10 * index);
  s.pci_bus_id = text;
  s.name = "SIMULATED " + model_;

  // Each GPU follows its own slow wave, so a dashboard shows movement and differences.
  const double phase = now_s / 60.0 + index * 1.3;
  const double load = 0.5 + 0.45 * std::sin(phase);
  const auto util = static_cast<std::uint32_t>(std::lround(100.0 * load));
  s.gpu_util_pct.Set(util);
  s.mem_util_pct.Set(util / 2);
  const std::uint64_t used_mib = static_cast<std::uint64_t>(load * 0.8 * total_mib_);
  s.fb_total_bytes.Set(total_mib_ * kMiB);
  s.fb_reserved_bytes.Set(kReservedMiB * kMiB);
  s.fb_used_bytes.Set(used_mib * kMiB);
  s.fb_free_bytes.Set((total_mib_ - kReservedMiB - used_mib) * kMiB);
  s.temperature_c.Set(static_cast<std::uint32_t>(32 + 40 * load));
  s.memory_temperature_c.Set(static_cast<std::uint32_t>(36 + 40 * load));
  const double watts = 70 + 600 * load;
  s.power_mw.Set(static_cast<std::uint32_t>(watts * 1000));
  s.power_limit_mw.Set(700'000);
  // Energy integrates the wave exactly, so the counter only ever grows.
  const double joules =
      370.0 * now_s - 600.0 * 0.45 * 60.0 * (std::cos(phase) - std::cos(index * 1.3));
  s.energy_mj.Set(static_cast<std::uint64_t>(std::max(0.0, joules) * 1000.0));
  s.sm_clock_mhz.Set(util > 5 ? 1980 : 345);
  s.mem_clock_mhz.Set(2619);
  s.clock_event_reasons.Set(util > 5 ? 0 : 0x1);
  s.pcie_tx_kbps.Set(util * 1000);
  s.pcie_rx_kbps.Set(util * 3000);
  s.pcie_replay_count.Set(0);
  s.ecc_corrected_volatile.Set(0);
  s.ecc_uncorrected_volatile.Set(0);
  s.ecc_corrected_total.Set(0);
  s.ecc_uncorrected_total.Set(0);
  s.retired_pages_single_bit.Set(0);
  s.retired_pages_double_bit.Set(0);
  s.remapped_rows_correctable.Set(0);
  s.remapped_rows_uncorrectable.Set(0);
  s.remapped_rows_pending.Set(0);
  s.remapped_rows_failure.Set(0);
  s.sm_activity.Set(load * 0.9);
  s.mig_mode.Set(0);
  s.processes.Set({});
  return s;
}

std::vector<GpuEvent> SimulatedProbe::WaitEvents(int timeout_ms) {
  if (timeout_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  return {};
}

GpuTopology SimulatedProbe::Topology() {
  GpuTopology topology;
  const auto n = static_cast<std::size_t>(gpu_count_);
  topology.common_ancestor.assign(n, std::vector<int>(n, 50));
  topology.nvlinks.assign(n, std::vector<int>(n, 0));
  // Two PCIe/NUMA halves, as on a typical 8-GPU board.
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) {
        topology.common_ancestor[a][b] = 0;
      } else if (a / 4 == b / 4) {
        topology.common_ancestor[a][b] = 40;
      }
    }
  }
  return topology;
}

}  // namespace gpufleet::gpu
