#include "agent/metrics_text.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

namespace gpufleet::agent {
namespace {

using gpu::GpuProcess;
using gpu::GpuSample;
using gpu::Reading;

void AppendEscaped(std::string& out, const std::string& value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

void AppendNumber(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  char buffer[32];
  // Integral values print without a fraction, as Prometheus clients do.
  if (value == std::floor(value) && std::fabs(value) < 9.0e15) {
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, static_cast<long long>(value));
    out.append(buffer, end);
    return;
  }
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void AppendNumber(std::string& out, std::uint64_t value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

// Writes one metric family: HELP and TYPE once, then one line per GPU that has the figure.
class FamilyWriter {
 public:
  FamilyWriter(std::string& out, const std::vector<std::string>& gpu_labels)
      : out_(out), gpu_labels_(gpu_labels) {}

  template <typename T, typename Scale>
  void Family(const char* name, const char* type, const char* help,
              const std::vector<GpuSample>& samples, Reading<T> GpuSample::*field, Scale scale) {
    bool header = false;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const GpuSample& s = samples[i];
      const Reading<T>& r = s.*field;
      if (s.lost || !r.has_value()) continue;
      if (!header) {
        Header(name, type, help);
        header = true;
      }
      Line(name, gpu_labels_[i], scale(r.value));
    }
  }

  void Header(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  // A family with one line per GPU, every GPU included; `value(i)` gives GPU i's value.
  template <typename F>
  void EveryGpu(const char* name, const char* type, const char* help, F value) {
    Header(name, type, help);
    for (std::size_t i = 0; i < gpu_labels_.size(); ++i) Line(name, gpu_labels_[i], value(i));
  }

  // A family whose value for GPU i is `value(i)`, a std::optional: GPUs without one (and lost
  // GPUs) are left out, and so is the header when no GPU has a value.
  template <typename F>
  void Optional(const char* name, const char* type, const char* help,
                const std::vector<GpuSample>& samples, F value) {
    bool header = false;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (samples[i].lost) continue;
      const auto v = value(i);
      if (!v.has_value()) continue;
      if (!header) {
        Header(name, type, help);
        header = true;
      }
      Line(name, gpu_labels_[i], *v);
    }
  }

  template <typename V>
  void Line(const char* name, const std::string& labels, V value) {
    out_ += name;
    out_ += '{';
    out_ += labels;
    out_ += "} ";
    AppendNumber(out_, value);
    out_ += '\n';
  }

 private:
  std::string& out_;
  const std::vector<std::string>& gpu_labels_;
};

auto Identity = [](auto v) { return static_cast<std::uint64_t>(v); };
auto ToMiB = [](std::uint64_t bytes) { return static_cast<std::uint64_t>(bytes / (1024 * 1024)); };
auto MilliToUnit = [](auto v) { return static_cast<double>(v) / 1000.0; };
auto AsDouble = [](double v) { return v; };
auto KibPerSecondToBytes = [](std::uint32_t kb) { return std::uint64_t{kb} * 1024; };

template <auto Member>
gpu::ReadStatus StatusOf(const GpuSample& s) {
  return (s.*Member).status;
}

// The figures of dcgm-exporter's default counter list (plus DCGM_FI_PROF_SM_ACTIVE) whose support
// depends on the GPU or the driver, each with the reading its series comes from.
struct FieldSupport {
  const char* field;
  gpu::ReadStatus (*status)(const GpuSample&);
};
constexpr FieldSupport kFieldSupport[] = {
    {"DCGM_FI_DEV_SM_CLOCK", StatusOf<&GpuSample::sm_clock_mhz>},
    {"DCGM_FI_DEV_MEM_CLOCK", StatusOf<&GpuSample::mem_clock_mhz>},
    {"DCGM_FI_DEV_MEMORY_TEMP", StatusOf<&GpuSample::memory_temperature_c>},
    {"DCGM_FI_DEV_GPU_TEMP", StatusOf<&GpuSample::temperature_c>},
    {"DCGM_FI_DEV_POWER_USAGE", StatusOf<&GpuSample::power_mw>},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", StatusOf<&GpuSample::energy_mj>},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", StatusOf<&GpuSample::pcie_replay_count>},
    {"DCGM_FI_DEV_GPU_UTIL", StatusOf<&GpuSample::gpu_util_pct>},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", StatusOf<&GpuSample::mem_util_pct>},
    {"DCGM_FI_DEV_ENC_UTIL", StatusOf<&GpuSample::encoder_util_pct>},
    {"DCGM_FI_DEV_DEC_UTIL", StatusOf<&GpuSample::decoder_util_pct>},
    {"DCGM_FI_DEV_FB_RESERVED", StatusOf<&GpuSample::fb_reserved_bytes>},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", StatusOf<&GpuSample::nvlink_tx_kib>},
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", StatusOf<&GpuSample::vgpu_license_status>},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", StatusOf<&GpuSample::remapped_rows_correctable>},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", StatusOf<&GpuSample::gr_engine_activity>},
    {"DCGM_FI_PROF_SM_ACTIVE", StatusOf<&GpuSample::sm_activity>},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", StatusOf<&GpuSample::tensor_activity>},
    {"DCGM_FI_PROF_DRAM_ACTIVE", StatusOf<&GpuSample::dram_activity>},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", StatusOf<&GpuSample::pcie_tx_kbps>},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", StatusOf<&GpuSample::pcie_rx_kbps>},
};

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  AppendEscaped(out, value);
  return out;
}

void RenderMetrics(const std::vector<GpuSample>& samples, const MetricsContext& context,
                   std::string& out) {
  out.clear();
  // The dcgm-exporter label set, built once per GPU and reused on every line.
  std::vector<std::string> labels;
  labels.reserve(samples.size());
  for (const GpuSample& s : samples) {
    std::string l = "gpu=\"";
    AppendNumber(l, static_cast<std::uint64_t>(s.index));
    l += "\",UUID=\"";
    AppendEscaped(l, s.uuid);
    l += "\",pci_bus_id=\"";
    AppendEscaped(l, s.pci_bus_id);
    l += "\",device=\"nvidia";
    AppendNumber(l, static_cast<std::uint64_t>(s.index));
    l += "\",modelName=\"";
    AppendEscaped(l, s.name);
    l += "\",Hostname=\"";
    AppendEscaped(l, context.hostname);
    l += '"';
    // dcgm-exporter's default list has the driver version as a label on every series.
    if (!context.driver_version.empty()) {
      l += ",DCGM_FI_DRIVER_VERSION=\"";
      AppendEscaped(l, context.driver_version);
      l += '"';
    }
    labels.push_back(std::move(l));
  }
  FamilyWriter w(out, labels);

  w.Family("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", samples,
           &GpuSample::sm_clock_mhz, Identity);
  w.Family("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", samples,
           &GpuSample::mem_clock_mhz, Identity);
  w.Family("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", samples,
           &GpuSample::memory_temperature_c, Identity);
  w.Family("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", samples,
           &GpuSample::temperature_c, Identity);
  w.Family("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", samples, &GpuSample::power_mw,
           MilliToUnit);
  w.Family("DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W).", samples,
           &GpuSample::power_limit_mw, MilliToUnit);
  w.Family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
           "Total energy consumption since boot (in mJ).", samples, &GpuSample::energy_mj,
           Identity);
  w.Family("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", samples,
           &GpuSample::pcie_replay_count, Identity);
  w.Family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", samples,
           &GpuSample::gpu_util_pct, Identity);
  w.Family("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", samples,
           &GpuSample::mem_util_pct, Identity);
  w.Family("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", samples,
           &GpuSample::fb_free_bytes, ToMiB);
  w.Family("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", samples,
           &GpuSample::fb_used_bytes, ToMiB);
  w.Family("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", samples,
           &GpuSample::fb_reserved_bytes, ToMiB);
  w.Family("DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB).", samples,
           &GpuSample::fb_total_bytes, ToMiB);
  w.Family("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge",
           "Current clock event (throttle) reasons, a bit mask.", samples,
           &GpuSample::clock_event_reasons, Identity);
  w.Family("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter",
           "Total number of single-bit volatile ECC errors.", samples,
           &GpuSample::ecc_corrected_volatile, Identity);
  w.Family("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
           "Total number of double-bit volatile ECC errors.", samples,
           &GpuSample::ecc_uncorrected_volatile, Identity);
  w.Family("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter",
           "Total number of single-bit persistent ECC errors.", samples,
           &GpuSample::ecc_corrected_total, Identity);
  w.Family("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter",
           "Total number of double-bit persistent ECC errors.", samples,
           &GpuSample::ecc_uncorrected_total, Identity);
  w.Family("DCGM_FI_DEV_RETIRED_SBE", "counter",
           "Total number of retired pages due to single-bit errors.", samples,
           &GpuSample::retired_pages_single_bit, Identity);
  w.Family("DCGM_FI_DEV_RETIRED_DBE", "counter",
           "Total number of retired pages due to double-bit errors.", samples,
           &GpuSample::retired_pages_double_bit, Identity);
  w.Family("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
           "Number of remapped rows for correctable errors.", samples,
           &GpuSample::remapped_rows_correctable, Identity);
  w.Family("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
           "Number of remapped rows for uncorrectable errors.", samples,
           &GpuSample::remapped_rows_uncorrectable, Identity);
  w.Family("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed.",
           samples, &GpuSample::remapped_rows_failure, Identity);
  w.Family("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", samples,
           &GpuSample::encoder_util_pct, Identity);
  w.Family("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", samples,
           &GpuSample::decoder_util_pct, Identity);
  // NVML's NVLink data counters, transmitted plus received over every link, in KiB.
  w.Optional("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
             "Total number of NVLink bandwidth counters for all lanes.", samples,
             [&](std::size_t i) -> std::optional<std::uint64_t> {
               const GpuSample& s = samples[i];
               if (!s.nvlink_tx_kib.has_value() || !s.nvlink_rx_kib.has_value()) return {};
               return s.nvlink_tx_kib.value + s.nvlink_rx_kib.value;
             });
  w.Family("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status", samples,
           &GpuSample::vgpu_license_status, Identity);
  w.Family("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.",
           samples, &GpuSample::gr_engine_activity, AsDouble);
  w.Family("DCGM_FI_PROF_SM_ACTIVE", "gauge",
           "The ratio of cycles an SM has at least 1 warp assigned (0 to 1).", samples,
           &GpuSample::sm_activity, AsDouble);
  w.Family("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
           "Ratio of cycles the tensor (HMMA) pipe is active.", samples,
           &GpuSample::tensor_activity, AsDouble);
  w.Family("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
           "Ratio of cycles the device memory interface is active sending or receiving data.",
           samples, &GpuSample::dram_activity, AsDouble);
  // From nvmlDeviceGetPcieThroughput (every GPU since Maxwell), not DCGM's profiling module: the
  // driver's KB/s over its last 20 ms window, in bytes per second.
  w.Family("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
           "The rate of data transmitted over the PCIe bus - including both protocol headers and "
           "data payloads - in bytes per second.",
           samples, &GpuSample::pcie_tx_kbps, KibPerSecondToBytes);
  w.Family("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
           "The rate of data received over the PCIe bus - including both protocol headers and "
           "data payloads - in bytes per second.",
           samples, &GpuSample::pcie_rx_kbps, KibPerSecondToBytes);

  // XID: dcgm-exporter reports the value of the last XID seen (0 when none).
  w.EveryGpu("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
             [&](std::size_t i) { return std::uint64_t{samples[i].last_xid}; });

  // Our own per-GPU series.
  w.Family("gpufleet_gpu_pcie_tx_bytes_per_second", "gauge",
           "PCIe transmit throughput over the driver's last 20 ms window.", samples,
           &GpuSample::pcie_tx_kbps, KibPerSecondToBytes);
  w.Family("gpufleet_gpu_pcie_rx_bytes_per_second", "gauge",
           "PCIe receive throughput over the driver's last 20 ms window.", samples,
           &GpuSample::pcie_rx_kbps, KibPerSecondToBytes);
  w.Family("gpufleet_gpu_mig_mode", "gauge", "1 when MIG mode is enabled.", samples,
           &GpuSample::mig_mode, Identity);
  w.EveryGpu("gpufleet_gpu_xid_events_total", "counter", "XID events seen since the agent started.",
             [&](std::size_t i) { return samples[i].xid_count; });
  w.EveryGpu("gpufleet_gpu_nvlink_active_links", "gauge", "NVLink links that are up.",
             [&](std::size_t i) {
               std::uint64_t active = 0;
               for (const gpu::NvLinkState& link : samples[i].nvlinks) active += link.active;
               return active;
             });
  w.EveryGpu("gpufleet_gpu_healthy", "gauge",
             "1 when the GPU is healthy; see gpufleet_gpu_health_reason when 0.",
             [&](std::size_t i) { return std::uint64_t{samples[i].health.healthy}; });
  w.Header("gpufleet_gpu_health_reason", "gauge", "One series per reason a GPU is unhealthy.");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    for (const std::string& reason : samples[i].health.reasons) {
      std::string l = labels[i] + ",reason=\"";
      AppendEscaped(l, reason);
      l += '"';
      w.Line("gpufleet_gpu_health_reason", l, std::uint64_t{1});
    }
  }
  // Why a dcgm-exporter series is absent: 0 when the GPU or driver does not support it (NVML
  // answered NOT_SUPPORTED, or the entry point is missing), 1 when it does. Fields not read yet
  // (GPM's first sample) and lost GPUs have no line.
  w.Header("gpufleet_gpu_field_supported", "gauge",
           "1 when the GPU and driver support a dcgm-exporter field, 0 when not.");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].lost) continue;
    for (const FieldSupport& f : kFieldSupport) {
      const gpu::ReadStatus status = f.status(samples[i]);
      if (status == gpu::ReadStatus::kMissing) continue;
      std::string l = labels[i] + ",field=\"";
      l += f.field;
      l += '"';
      w.Line("gpufleet_gpu_field_supported", l,
             std::uint64_t{status != gpu::ReadStatus::kNotSupported});
    }
  }
  w.EveryGpu("gpufleet_gpu_lost", "gauge", "1 when the driver reports the GPU as lost.",
             [&](std::size_t i) { return std::uint64_t{samples[i].lost}; });
  w.EveryGpu("gpufleet_gpu_simulated", "gauge", "1 when the GPU is simulated, not real hardware.",
             [&](std::size_t i) { return std::uint64_t{samples[i].simulated}; });

  // Per process, then per job (the sum over a job's processes on each GPU).
  struct JobUse {
    std::uint64_t memory = 0;
    std::uint64_t sm = 0;
    bool has_sm = false;
  };
  std::map<std::pair<std::size_t, std::string>, JobUse> jobs;
  std::vector<std::string> process_labels;
  std::vector<const GpuProcess*> processes;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const GpuSample& s = samples[i];
    if (s.lost || !s.processes.has_value()) continue;
    for (const GpuProcess& p : s.processes.value) {
      std::string l = labels[i];
      l += ",pid=\"";
      AppendNumber(l, std::uint64_t{p.pid});
      l += "\",user=\"";
      AppendEscaped(l, p.user);
      l += "\",job=\"";
      AppendEscaped(l, p.job_id);
      l += '"';
      process_labels.push_back(std::move(l));
      processes.push_back(&p);
      if (!p.job_id.empty()) {
        JobUse& use = jobs[{i, p.job_id}];
        if (p.used_memory_bytes.has_value()) use.memory += p.used_memory_bytes.value;
        if (p.sm_util_pct.has_value()) {
          use.sm += p.sm_util_pct.value;
          use.has_sm = true;
        }
      }
    }
  }
  w.Header("gpufleet_process_gpu_memory_bytes", "gauge", "GPU memory used by a process.");
  for (std::size_t k = 0; k < processes.size(); ++k) {
    if (processes[k]->used_memory_bytes.has_value()) {
      w.Line("gpufleet_process_gpu_memory_bytes", process_labels[k],
             processes[k]->used_memory_bytes.value);
    }
  }
  w.Header("gpufleet_process_sm_util_percent", "gauge",
           "Share of the GPU's SM time used by a process (in %).");
  for (std::size_t k = 0; k < processes.size(); ++k) {
    if (processes[k]->sm_util_pct.has_value()) {
      w.Line("gpufleet_process_sm_util_percent", process_labels[k],
             std::uint64_t{processes[k]->sm_util_pct.value});
    }
  }
  w.Header("gpufleet_process_mem_util_percent", "gauge",
           "Share of the GPU's memory-controller time used by a process (in %).");
  for (std::size_t k = 0; k < processes.size(); ++k) {
    if (processes[k]->mem_util_pct.has_value()) {
      w.Line("gpufleet_process_mem_util_percent", process_labels[k],
             std::uint64_t{processes[k]->mem_util_pct.value});
    }
  }
  w.Header("gpufleet_job_gpu_memory_bytes", "gauge",
           "GPU memory used by a gpufleet job's processes.");
  for (const auto& [key, use] : jobs) {
    std::string l = labels[key.first] + ",job=\"";
    AppendEscaped(l, key.second);
    l += '"';
    w.Line("gpufleet_job_gpu_memory_bytes", l, use.memory);
  }
  w.Header("gpufleet_job_sm_util_percent", "gauge",
           "Share of the GPU's SM time used by a gpufleet job's processes (in %).");
  for (const auto& [key, use] : jobs) {
    if (!use.has_sm) continue;
    std::string l = labels[key.first] + ",job=\"";
    AppendEscaped(l, key.second);
    l += '"';
    w.Line("gpufleet_job_sm_util_percent", l, use.sm);
  }

  w.Header("gpufleet_agent_info", "gauge", "The agent's backend and versions.");
  std::string info = "Hostname=\"";
  AppendEscaped(info, context.hostname);
  info += "\",backend=\"";
  AppendEscaped(info, context.backend);
  info += "\",driver_version=\"";
  AppendEscaped(info, context.driver_version);
  info += "\",version=\"";
  AppendEscaped(info, context.version);
  info += '"';
  w.Line("gpufleet_agent_info", info, std::uint64_t{1});
  w.Header("gpufleet_agent_sample_rounds_total", "counter", "Sampling rounds completed.");
  std::string host = "Hostname=\"";
  AppendEscaped(host, context.hostname);
  host += '"';
  w.Line("gpufleet_agent_sample_rounds_total", host, context.sample_rounds);
  w.Header("gpufleet_agent_last_round_age_seconds", "gauge",
           "Seconds since the last sampling round finished (stale data if large).");
  w.Line("gpufleet_agent_last_round_age_seconds", host, context.seconds_since_last_round);
  w.Header("gpufleet_agent_gpus", "gauge", "GPUs this agent reads.");
  w.Line("gpufleet_agent_gpus", host, static_cast<std::uint64_t>(samples.size()));
}

}  // namespace gpufleet::agent
