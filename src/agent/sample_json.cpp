#include "agent/sample_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "gpu/nvml_api.h"

namespace gpufleet::agent {
namespace {

using nlohmann::json;
constexpr double kMiB = 1024.0 * 1024.0;

template <typename T>
json Value(const gpu::Reading<T>& r) {
  return r.has_value() ? json(r.value) : json(nullptr);
}
template <typename T>
json Scaled(const gpu::Reading<T>& r, double scale) {
  if (!r.has_value()) return nullptr;
  return std::round(static_cast<double>(r.value) * scale * 1000.0) / 1000.0;
}
template <typename T>
json MiB(const gpu::Reading<T>& r) {
  if (!r.has_value()) return nullptr;
  return static_cast<std::uint64_t>(static_cast<double>(r.value) / kMiB);
}
json Float(float v) { return std::isnan(v) ? json(nullptr) : json(v); }

json ProcessJson(const gpu::GpuProcess& p, bool with_command) {
  return {{"pid", p.pid},
          {"uid", p.uid},
          {"user", p.user},
          {"command", with_command ? json(p.command) : json(nullptr)},
          {"job", p.job_id},
          {"gpu_memory_mib", MiB(p.used_memory_bytes)},
          {"sm_util_pct", Value(p.sm_util_pct)},
          {"mem_util_pct", Value(p.mem_util_pct)}};
}

json GpuJson(const gpu::GpuSample& s, bool with_commands) {
  json g = {
      {"index", s.index},
      {"uuid", s.uuid},
      {"name", s.name},
      {"pci_bus_id", s.pci_bus_id},
      {"simulated", s.simulated},
      {"lost", s.lost},
      {"healthy", s.health.healthy},
      {"health_reasons", s.health.reasons},
      {"time_unix_ms", s.unix_ms},
      {"gpu_util_pct", Value(s.gpu_util_pct)},
      {"mem_util_pct", Value(s.mem_util_pct)},
      {"memory_total_mib", MiB(s.fb_total_bytes)},
      {"memory_used_mib", MiB(s.fb_used_bytes)},
      {"memory_free_mib", MiB(s.fb_free_bytes)},
      {"memory_reserved_mib", MiB(s.fb_reserved_bytes)},
      {"temperature_c", Value(s.temperature_c)},
      {"memory_temperature_c", Value(s.memory_temperature_c)},
      {"power_w", Scaled(s.power_mw, 1e-3)},
      {"power_limit_w", Scaled(s.power_limit_mw, 1e-3)},
      {"energy_j", Scaled(s.energy_mj, 1e-3)},
      {"sm_clock_mhz", Value(s.sm_clock_mhz)},
      {"mem_clock_mhz", Value(s.mem_clock_mhz)},
      {"clock_event_reasons", s.clock_event_reasons.has_value()
                                  ? json(ClockEventReasonNames(s.clock_event_reasons.value))
                                  : json(nullptr)},
      {"pcie_tx_kbps", Value(s.pcie_tx_kbps)},
      {"pcie_rx_kbps", Value(s.pcie_rx_kbps)},
      {"pcie_replay_count", Value(s.pcie_replay_count)},
      {"ecc_corrected_volatile", Value(s.ecc_corrected_volatile)},
      {"ecc_uncorrected_volatile", Value(s.ecc_uncorrected_volatile)},
      {"ecc_corrected_total", Value(s.ecc_corrected_total)},
      {"ecc_uncorrected_total", Value(s.ecc_uncorrected_total)},
      {"retired_pages_single_bit", Value(s.retired_pages_single_bit)},
      {"retired_pages_double_bit", Value(s.retired_pages_double_bit)},
      {"remapped_rows_correctable", Value(s.remapped_rows_correctable)},
      {"remapped_rows_uncorrectable", Value(s.remapped_rows_uncorrectable)},
      {"remapped_rows_pending", Value(s.remapped_rows_pending)},
      {"remapped_rows_failure", Value(s.remapped_rows_failure)},
      {"sm_activity", Value(s.sm_activity)},
      {"gr_engine_activity", Value(s.gr_engine_activity)},
      {"tensor_activity", Value(s.tensor_activity)},
      {"dram_activity", Value(s.dram_activity)},
      {"encoder_util_pct", Value(s.encoder_util_pct)},
      {"decoder_util_pct", Value(s.decoder_util_pct)},
      {"nvlink_tx_kib", Value(s.nvlink_tx_kib)},
      {"nvlink_rx_kib", Value(s.nvlink_rx_kib)},
      {"vgpu_license_status", Value(s.vgpu_license_status)},
      {"mig_mode", Value(s.mig_mode)},
      {"xid_count", s.xid_count},
      {"last_xid", s.last_xid},
      {"flags", s.flags},
      {"open_error", s.open_error},
  };
  json mig = json::array();
  for (const gpu::MigDevice& m : s.mig_devices) {
    mig.push_back({{"uuid", m.uuid},
                   {"name", m.name},
                   {"memory_total_mib", MiB(m.memory_total_bytes)},
                   {"memory_used_mib", MiB(m.memory_used_bytes)}});
  }
  g["mig_devices"] = std::move(mig);
  json links = json::array();
  for (const gpu::NvLinkState& l : s.nvlinks) {
    links.push_back(
        {{"link", l.link}, {"active", l.active}, {"remote_pci_bus_id", l.remote_pci_bus_id}});
  }
  g["nvlinks"] = std::move(links);
  json processes = json::array();
  if (s.processes.has_value()) {
    for (const gpu::GpuProcess& p : s.processes.value)
      processes.push_back(ProcessJson(p, with_commands));
  }
  g["processes"] = std::move(processes);
  g["processes_supported"] = s.processes.has_value();
  return g;
}

}  // namespace

std::vector<std::string> ClockEventReasonNames(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {nvmlClocksEventReasonGpuIdle, "gpu_idle"},
      {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
      {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
      {nvmlClocksEventReasonHwSlowdown, "hw_slowdown"},
      {nvmlClocksEventReasonSyncBoost, "sync_boost"},
      {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
      {nvmlClocksEventReasonHwThermalSlowdown, "hw_thermal_slowdown"},
      {nvmlClocksEventReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {nvmlClocksEventReasonDisplayClockSetting, "display_clock_setting"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames) {
    if (mask & bit) names.emplace_back(name);
  }
  return names;
}

std::string GpusToJson(const HostInfo& host, const std::vector<gpu::GpuSample>& samples, int indent,
                       bool with_commands) {
  bool simulated = false;
  json gpus = json::array();
  for (const gpu::GpuSample& s : samples) {
    simulated = simulated || s.simulated;
    gpus.push_back(GpuJson(s, with_commands));
  }
  json doc = {{"hostname", host.hostname},
              {"backend", host.backend},
              {"simulated", simulated || host.backend == "simulated"},
              {"driver_version", host.driver_version},
              {"notice", host.notice},
              {"gpus", std::move(gpus)}};
  return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string HistoryToJson(int gpu, const std::vector<gpu::HistoryPoint>& points,
                          const std::vector<gpu::HistoryAggregate>& aggregates) {
  json p = json::array();
  for (const gpu::HistoryPoint& h : points) {
    p.push_back({{"time_s", h.time_s},
                 {"gpu_util_pct", Float(h.gpu_util_pct)},
                 {"mem_util_pct", Float(h.mem_util_pct)},
                 {"memory_used_mib", Float(h.fb_used_mib)},
                 {"power_w", Float(h.power_w)},
                 {"temperature_c", Float(h.temperature_c)},
                 {"sm_activity", Float(h.sm_activity)}});
  }
  json a = json::array();
  for (const gpu::HistoryAggregate& w : aggregates) {
    a.push_back({{"start_s", w.start_s},
                 {"end_s", w.end_s},
                 {"samples", w.samples},
                 {"gpu_util_mean", Float(w.gpu_util_mean)},
                 {"gpu_util_max", Float(w.gpu_util_max)},
                 {"mem_util_mean", Float(w.mem_util_mean)},
                 {"memory_used_max_mib", Float(w.fb_used_max_mib)},
                 {"power_mean_w", Float(w.power_mean_w)},
                 {"power_max_w", Float(w.power_max_w)},
                 {"temperature_max_c", Float(w.temperature_max_c)},
                 {"sm_activity_mean", Float(w.sm_activity_mean)}});
  }
  return json{{"gpu", gpu}, {"points", std::move(p)}, {"aggregates", std::move(a)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string TopologyToJson(const gpu::GpuTopology& topology) {
  return json{{"common_ancestor", topology.common_ancestor},
              {"nvlinks", topology.nvlinks},
              {"levels",
               {{"0", "same board"},
                {"10", "one PCIe switch"},
                {"20", "several PCIe switches"},
                {"30", "PCIe host bridge"},
                {"40", "NUMA node"},
                {"50", "system (across NUMA nodes)"},
                {"-1", "unknown"}}}}
      .dump();
}

}  // namespace gpufleet::agent
