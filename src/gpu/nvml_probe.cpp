#include "gpu/nvml_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace gpufleet::gpu {
namespace {

constexpr unsigned kMaxGrowAttempts = 6;
// Per-process utilization is the newest driver sample within this window.
constexpr unsigned long long kProcessUtilWindowUs = 2'000'000;

// Records the outcome of one NVML call into `reading`; a lost GPU marks the whole sample.
// `value` is taken by reference on purpose: in `Record(r, nvmlCall(&x), x, s)` the argument order
// is unspecified, and only a reference is sure to see what the call wrote into `x`.
template <typename T, typename V>
void Record(Reading<T>& reading, nvmlReturn_t rc, const V& value, GpuSample& sample) {
  if (rc == NVML_SUCCESS) {
    reading.Set(static_cast<T>(value));
  } else if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
    reading.status = ReadStatus::kNotSupported;
  } else {
    reading.status = ReadStatus::kFailed;
    if (rc == NVML_ERROR_GPU_IS_LOST) sample.lost = true;
  }
}

// Calls a process-list entry point (`Info` is the v1 or the v2/v3 element), growing the buffer
// while the driver answers INSUFFICIENT_SIZE: the count can grow between the size query and the
// read. `capacity` carries the buffer size from one call to the next.
template <typename Info>
nvmlReturn_t ReadProcessList(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int*, Info*),
                             nvmlDevice_t handle, std::size_t& capacity,
                             std::vector<GpuProcess>& out) {
  std::vector<Info> buffer(capacity);
  nvmlReturn_t rc = NVML_ERROR_UNKNOWN;
  for (unsigned attempt = 0; attempt < kMaxGrowAttempts; ++attempt) {
    unsigned count = static_cast<unsigned>(buffer.size());
    rc = fn(handle, &count, buffer.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      buffer.resize(std::max<std::size_t>(count, buffer.size()) * 2);
      continue;
    }
    if (rc == NVML_SUCCESS) {
      for (unsigned i = 0; i < std::min<std::size_t>(count, buffer.size()); ++i) {
        GpuProcess p;
        p.pid = buffer[i].pid;
        if (buffer[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) {
          p.used_memory_bytes.Set(buffer[i].usedGpuMemory);
        }
        out.push_back(std::move(p));
      }
    }
    break;
  }
  capacity = buffer.size();
  return rc;
}

// A field value as an unsigned integer, whatever union member the driver chose.
std::uint64_t FieldValueAsU64(const nvmlFieldValue_t& field) {
  switch (field.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return field.value.ullVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return field.value.ulVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return field.value.sllVal < 0 ? 0 : static_cast<std::uint64_t>(field.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return field.value.siVal < 0 ? 0 : static_cast<std::uint64_t>(field.value.siVal);
    case NVML_VALUE_TYPE_DOUBLE:
      // NaN and negatives read as 0, values past 2^64 saturate (a cast would be undefined).
      if (!(field.value.dVal > 0)) return 0;
      if (field.value.dVal >= 1.8e19) return ~std::uint64_t{0};
      return static_cast<std::uint64_t>(field.value.dVal);
    default:
      return field.value.uiVal;
  }
}

std::string CString(const char* text, std::size_t capacity) {
  return std::string(text, strnlen(text, capacity));
}

unsigned long long WallMicros() {
  return static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
}

}  // namespace

NvmlProbe::NvmlProbe(std::unique_ptr<NvmlLibrary> library, int slow_refresh_every)
    : lib_(std::move(library)), slow_refresh_every_(std::max(1, slow_refresh_every)) {
  const NvmlFunctions& f = lib_->fn();
  if (f.system_get_driver_version != nullptr) {
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (f.system_get_driver_version(version, sizeof version) == NVML_SUCCESS) {
      driver_version_ = CString(version, sizeof version);
    }
  }
  unsigned count = 0;
  if (f.device_get_count(&count) != NVML_SUCCESS) count = 0;
  devices_.resize(count);
  if (f.event_set_create != nullptr && f.event_set_create(&event_set_) != NVML_SUCCESS) {
    event_set_ = nullptr;
  }
  for (unsigned i = 0; i < count; ++i) {
    Device& device = devices_[i];
    device.open_rc = f.device_get_handle_by_index(i, &device.handle);
    if (device.open_rc != NVML_SUCCESS) device.handle = nullptr;
    if (device.handle == nullptr) continue;
    GpuSample scratch;
    ReadIdentity(device, scratch);
    unsigned minor = 0;
    if (f.device_get_minor_number != nullptr &&
        f.device_get_minor_number(device.handle, &minor) == NVML_SUCCESS) {
      const char* dir = std::getenv("GPUFLEET_NVIDIA_DEVICE_DIR");
      device.device_node = std::string(dir != nullptr && *dir != '\0' ? dir : "/dev") + "/nvidia" +
                           std::to_string(minor);
    }
    if (event_set_ != nullptr && f.device_register_events != nullptr) {
      // Some GPUs refuse ECC events (no ECC); XID alone is still worth having.
      const unsigned long long all = nvmlEventTypeXidCriticalError |
                                     nvmlEventTypeDoubleBitEccError |
                                     nvmlEventTypeSingleBitEccError;
      if (f.device_register_events(device.handle, all, event_set_) != NVML_SUCCESS) {
        f.device_register_events(device.handle, nvmlEventTypeXidCriticalError, event_set_);
      }
    }
    if (f.gpm_query_device_support != nullptr && f.gpm_sample_alloc != nullptr &&
        f.gpm_sample_get != nullptr && f.gpm_metrics_get != nullptr) {
      nvmlGpmSupport_t support{};
      support.version = NVML_GPM_SUPPORT_VERSION;
      if (f.gpm_query_device_support(device.handle, &support) == NVML_SUCCESS &&
          support.isSupportedDevice != 0 &&
          f.gpm_sample_alloc(&device.gpm_previous) == NVML_SUCCESS &&
          f.gpm_sample_alloc(&device.gpm_current) == NVML_SUCCESS) {
        device.gpm_supported = true;
      }
    }
  }
}

NvmlProbe::~NvmlProbe() {
  const NvmlFunctions& f = lib_->fn();
  for (Device& device : devices_) {
    if (f.gpm_sample_free == nullptr) break;
    if (device.gpm_previous != nullptr) f.gpm_sample_free(device.gpm_previous);
    if (device.gpm_current != nullptr) f.gpm_sample_free(device.gpm_current);
  }
  if (event_set_ != nullptr && f.event_set_free != nullptr) f.event_set_free(event_set_);
}

std::string NvmlProbe::DeviceNode(int index) const {
  if (index < 0 || index >= DeviceCount()) return "";
  return devices_[static_cast<std::size_t>(index)].device_node;
}

void NvmlProbe::ReadIdentity(Device& device, GpuSample& sample) {
  const NvmlFunctions& f = lib_->fn();
  if (device.uuid.empty() && f.device_get_uuid != nullptr) {
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    const nvmlReturn_t rc = f.device_get_uuid(device.handle, text, sizeof text);
    if (rc == NVML_SUCCESS) device.uuid = CString(text, sizeof text);
    if (rc == NVML_ERROR_GPU_IS_LOST) sample.lost = true;
  }
  if (device.name.empty() && f.device_get_name != nullptr) {
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (f.device_get_name(device.handle, text, sizeof text) == NVML_SUCCESS) {
      device.name = CString(text, sizeof text);
    }
  }
  if (device.pci_bus_id.empty() && f.device_get_pci_info != nullptr) {
    nvmlPciInfo_t pci{};
    if (f.device_get_pci_info(device.handle, &pci) == NVML_SUCCESS) {
      device.pci_bus_id = CString(pci.busId, sizeof pci.busId);
    }
  }
  sample.uuid = device.uuid;
  sample.name = device.name;
  sample.pci_bus_id = device.pci_bus_id;
}

GpuSample NvmlProbe::Sample(int index, double now_s) {
  GpuSample s;
  s.index = index;
  s.time_s = now_s;
  s.unix_ms = static_cast<std::int64_t>(WallMicros() / 1000);
  if (index < 0 || index >= DeviceCount()) return s;
  Device& device = devices_[static_cast<std::size_t>(index)];
  if (device.handle == nullptr) {
    s.lost = device.open_rc == NVML_ERROR_GPU_IS_LOST;
    if (!s.lost) s.open_error = lib_->ErrorString(device.open_rc);
    return s;
  }
  const NvmlFunctions& f = lib_->fn();
  nvmlDevice_t h = device.handle;
  ReadIdentity(device, s);

  if (f.device_get_utilization_rates != nullptr) {
    nvmlUtilization_t util{};
    const nvmlReturn_t rc = f.device_get_utilization_rates(h, &util);
    Record(s.gpu_util_pct, rc, util.gpu, s);
    Record(s.mem_util_pct, rc, util.memory, s);
  }
  if (s.lost) return s;  // nothing else will answer; don't spend 30 calls finding out

  bool memory_read = false;
  if (f.device_get_memory_info_v2 != nullptr) {
    nvmlMemory_v2_t mem{};
    mem.version = nvmlMemory_v2;
    const nvmlReturn_t rc = f.device_get_memory_info_v2(h, &mem);
    if (rc != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && rc != NVML_ERROR_FUNCTION_NOT_FOUND) {
      Record(s.fb_total_bytes, rc, mem.total, s);
      Record(s.fb_used_bytes, rc, mem.used, s);
      Record(s.fb_free_bytes, rc, mem.free, s);
      Record(s.fb_reserved_bytes, rc, mem.reserved, s);
      memory_read = true;
    }
  }
  if (!memory_read && f.device_get_memory_info != nullptr) {
    nvmlMemory_t mem{};
    const nvmlReturn_t rc = f.device_get_memory_info(h, &mem);
    Record(s.fb_total_bytes, rc, mem.total, s);
    Record(s.fb_used_bytes, rc, mem.used, s);
    Record(s.fb_free_bytes, rc, mem.free, s);
  }
  if (f.device_get_temperature != nullptr) {
    unsigned temp = 0;
    Record(s.temperature_c, f.device_get_temperature(h, NVML_TEMPERATURE_GPU, &temp), temp, s);
  }
  ReadFieldValues(device, s);
  if (f.device_get_power_usage != nullptr) {
    unsigned mw = 0;
    Record(s.power_mw, f.device_get_power_usage(h, &mw), mw, s);
  }
  if (f.device_get_total_energy_consumption != nullptr) {
    unsigned long long mj = 0;
    Record(s.energy_mj, f.device_get_total_energy_consumption(h, &mj), mj, s);
  }
  if (f.device_get_clock_info != nullptr) {
    unsigned mhz = 0;
    Record(s.sm_clock_mhz, f.device_get_clock_info(h, NVML_CLOCK_SM, &mhz), mhz, s);
    mhz = 0;
    Record(s.mem_clock_mhz, f.device_get_clock_info(h, NVML_CLOCK_MEM, &mhz), mhz, s);
  }
  if (f.device_get_clocks_event_reasons != nullptr) {
    unsigned long long reasons = 0;
    Record(s.clock_event_reasons, f.device_get_clocks_event_reasons(h, &reasons), reasons, s);
  }
  if (f.device_get_pcie_throughput != nullptr) {
    unsigned kbps = 0;
    Record(s.pcie_tx_kbps, f.device_get_pcie_throughput(h, NVML_PCIE_UTIL_TX_BYTES, &kbps), kbps,
           s);
    kbps = 0;
    Record(s.pcie_rx_kbps, f.device_get_pcie_throughput(h, NVML_PCIE_UTIL_RX_BYTES, &kbps), kbps,
           s);
  }
  ReadCodecs(device, s);
  if (f.device_get_pcie_replay_counter != nullptr) {
    unsigned replays = 0;
    Record(s.pcie_replay_count, f.device_get_pcie_replay_counter(h, &replays), replays, s);
  }
  if (f.device_get_total_ecc_errors != nullptr) {
    unsigned long long n = 0;
    Record(
        s.ecc_corrected_volatile,
        f.device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &n),
        n, s);
    n = 0;
    Record(
        s.ecc_uncorrected_volatile,
        f.device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &n),
        n, s);
    n = 0;
    Record(
        s.ecc_corrected_total,
        f.device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &n),
        n, s);
    n = 0;
    Record(s.ecc_uncorrected_total,
           f.device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC,
                                         &n),
           n, s);
  }
  ReadProcesses(device, s, now_s);
  ReadGpm(device, s);
  if (device.samples_taken % slow_refresh_every_ == 0) ReadSlowFields(device, s);
  s.power_limit_mw = device.slow.power_limit_mw;
  s.retired_pages_single_bit = device.slow.retired_pages_single_bit;
  s.retired_pages_double_bit = device.slow.retired_pages_double_bit;
  s.remapped_rows_correctable = device.slow.remapped_rows_correctable;
  s.remapped_rows_uncorrectable = device.slow.remapped_rows_uncorrectable;
  s.remapped_rows_pending = device.slow.remapped_rows_pending;
  s.remapped_rows_failure = device.slow.remapped_rows_failure;
  s.mig_mode = device.slow.mig_mode;
  s.vgpu_license_status = device.slow.vgpu_license_status;
  s.mig_devices = device.slow.mig_devices;
  s.nvlinks = device.slow.nvlinks;
  ++device.samples_taken;
  return s;
}

void NvmlProbe::ReadProcesses(Device& device, GpuSample& s, double now_s) {
  const NvmlFunctions& f = lib_->fn();
  std::vector<GpuProcess> processes;
  nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (f.device_get_compute_processes != nullptr) {
    rc = ReadProcessList(f.device_get_compute_processes, device.handle, device.process_capacity,
                         processes);
  } else if (f.device_get_compute_processes_v1 != nullptr) {
    rc = ReadProcessList(f.device_get_compute_processes_v1, device.handle, device.process_capacity,
                         processes);
  }
  Record(s.processes, rc, std::vector<GpuProcess>{}, s);
  if (!s.processes.has_value()) return;
  // One entry per pid: NVML may list a process once per MIG instance it uses.
  std::sort(processes.begin(), processes.end(),
            [](const GpuProcess& a, const GpuProcess& b) { return a.pid < b.pid; });
  std::vector<GpuProcess> merged;
  for (GpuProcess& p : processes) {
    if (!merged.empty() && merged.back().pid == p.pid) {
      if (p.used_memory_bytes.has_value()) {
        merged.back().used_memory_bytes.Set(merged.back().used_memory_bytes.value +
                                            p.used_memory_bytes.value);
      }
      continue;
    }
    merged.push_back(std::move(p));
  }
  processes = std::move(merged);
  for (GpuProcess& p : processes) {
    const ProcessOwner& owner = inspector_.Lookup(p.pid, now_s);
    p.uid = owner.uid;
    p.user = owner.user;
    p.command = owner.command;
    p.job_id = owner.job_id;
  }
  s.processes.value = std::move(processes);
  ReadProcessUtilization(device, s);
}

void NvmlProbe::ReadProcessUtilization(Device& device, GpuSample& s) {
  const NvmlFunctions& f = lib_->fn();
  if (f.device_get_process_utilization == nullptr) return;
  std::vector<nvmlProcessUtilizationSample_t> buffer(device.process_util_capacity);
  nvmlReturn_t rc = NVML_ERROR_UNKNOWN;
  unsigned count = 0;
  // Ask for the samples of the last window (NVML timestamps are wall-clock microseconds). The
  // driver records a process's samples at its own pace, so asking only "since my last read" would
  // show an active process as idle whenever we sample faster than the driver does.
  const unsigned long long since_us = WallMicros() - kProcessUtilWindowUs;
  for (unsigned attempt = 0; attempt < kMaxGrowAttempts; ++attempt) {
    count = static_cast<unsigned>(buffer.size());
    rc = f.device_get_process_utilization(device.handle, buffer.data(), &count, since_us);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE) break;
    buffer.resize(std::max<std::size_t>(count, buffer.size()) * 2);
  }
  device.process_util_capacity = buffer.size();
  // NOT_FOUND means "no samples in the window": every process was idle.
  const bool supported = rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_FOUND;
  // The newest sample per pid in the window; a process without one was idle.
  std::unordered_map<std::uint32_t, ProcessUtil> newest;
  if (rc == NVML_SUCCESS) {
    for (unsigned i = 0; i < std::min<std::size_t>(count, buffer.size()); ++i) {
      const nvmlProcessUtilizationSample_t& u = buffer[i];
      ProcessUtil& known = newest[u.pid];
      if (u.timeStamp >= known.timestamp_us) known = {u.smUtil, u.memUtil, u.timeStamp};
    }
  }
  for (GpuProcess& p : s.processes.value) {
    if (!supported) {
      p.sm_util_pct.status = ReadStatus::kNotSupported;
      p.mem_util_pct.status = ReadStatus::kNotSupported;
      continue;
    }
    auto it = newest.find(p.pid);
    p.sm_util_pct.Set(it != newest.end() ? it->second.sm : 0);
    p.mem_util_pct.Set(it != newest.end() ? it->second.mem : 0);
  }
}

void NvmlProbe::ReadGpm(Device& device, GpuSample& s) {
  // One request for every GPM figure: the driver computes them all from the same two samples.
  struct Wanted {
    unsigned id;
    Reading<double> GpuSample::*field;
  };
  static constexpr Wanted kWanted[] = {
      {NVML_GPM_METRIC_SM_UTIL, &GpuSample::sm_activity},
      {NVML_GPM_METRIC_GRAPHICS_UTIL, &GpuSample::gr_engine_activity},
      {NVML_GPM_METRIC_ANY_TENSOR_UTIL, &GpuSample::tensor_activity},
      {NVML_GPM_METRIC_DRAM_BW_UTIL, &GpuSample::dram_activity},
  };
  if (!device.gpm_supported) {
    for (const Wanted& w : kWanted) (s.*w.field).status = ReadStatus::kNotSupported;
    return;
  }
  const NvmlFunctions& f = lib_->fn();
  if (f.gpm_sample_get(device.handle, device.gpm_current) != NVML_SUCCESS) {
    for (const Wanted& w : kWanted) (s.*w.field).status = ReadStatus::kFailed;
    device.gpm_previous_valid = false;
    return;
  }
  if (device.gpm_previous_valid) {
    // The struct is large (about 10 KB): allocated once per device and reused, off the stack.
    if (device.gpm_request == nullptr) device.gpm_request = std::make_unique<nvmlGpmMetricsGet_t>();
    nvmlGpmMetricsGet_t* request = device.gpm_request.get();
    std::memset(request, 0, sizeof(nvmlGpmMetricsGet_t));
    request->version = NVML_GPM_METRICS_GET_VERSION;
    request->numMetrics = static_cast<unsigned>(std::size(kWanted));
    request->sample1 = device.gpm_previous;
    request->sample2 = device.gpm_current;
    for (std::size_t i = 0; i < std::size(kWanted); ++i) {
      request->metrics[i].metricId = kWanted[i].id;
    }
    const nvmlReturn_t rc = f.gpm_metrics_get(request);
    for (std::size_t i = 0; i < std::size(kWanted); ++i) {
      const nvmlReturn_t metric_rc = rc == NVML_SUCCESS ? request->metrics[i].nvmlReturn : rc;
      Record(s.*kWanted[i].field, metric_rc, request->metrics[i].value / 100.0, s);
    }
  }
  std::swap(device.gpm_previous, device.gpm_current);
  device.gpm_previous_valid = true;
}

void NvmlProbe::ReadFieldValues(Device& device, GpuSample& s) {
  const NvmlFunctions& f = lib_->fn();
  if (f.device_get_field_values == nullptr) {
    for (auto* r : {&s.nvlink_tx_kib, &s.nvlink_rx_kib}) r->status = ReadStatus::kNotSupported;
    return;
  }
  // One call for the three fields: each carries its own return code.
  nvmlFieldValue_t fields[3] = {};
  fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  fields[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
  fields[1].scopeId = NVML_NVLINK_SCOPE_ALL_LINKS;
  fields[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
  fields[2].scopeId = NVML_NVLINK_SCOPE_ALL_LINKS;
  const nvmlReturn_t rc = f.device_get_field_values(device.handle, 3, fields);
  auto field_rc = [&](const nvmlFieldValue_t& field) {
    return rc == NVML_SUCCESS ? field.nvmlReturn : rc;
  };
  const std::uint64_t memory_temp = FieldValueAsU64(fields[0]);
  Record(s.memory_temperature_c, field_rc(fields[0]), memory_temp, s);
  // Some GPUs report 0 when they have no memory sensor; that is not a temperature.
  if (s.memory_temperature_c.has_value() && memory_temp == 0) {
    s.memory_temperature_c.status = ReadStatus::kNotSupported;
  }
  const std::uint64_t tx = FieldValueAsU64(fields[1]);
  const std::uint64_t rx = FieldValueAsU64(fields[2]);
  Record(s.nvlink_tx_kib, field_rc(fields[1]), tx, s);
  Record(s.nvlink_rx_kib, field_rc(fields[2]), rx, s);
}

void NvmlProbe::ReadCodecs(Device& device, GpuSample& s) {
  const NvmlFunctions& f = lib_->fn();
  unsigned pct = 0, period_us = 0;
  if (f.device_get_encoder_utilization != nullptr) {
    Record(s.encoder_util_pct, f.device_get_encoder_utilization(device.handle, &pct, &period_us),
           pct, s);
  } else {
    s.encoder_util_pct.status = ReadStatus::kNotSupported;
  }
  pct = 0;
  if (f.device_get_decoder_utilization != nullptr) {
    Record(s.decoder_util_pct, f.device_get_decoder_utilization(device.handle, &pct, &period_us),
           pct, s);
  } else {
    s.decoder_util_pct.status = ReadStatus::kNotSupported;
  }
}

void NvmlProbe::ReadVgpuLicense(Device& device, GpuSample& s) {
  const NvmlFunctions& f = lib_->fn();
  Reading<std::uint32_t>& status = device.slow.vgpu_license_status;
  if (f.device_get_active_vgpus == nullptr || f.vgpu_instance_get_license_status == nullptr) {
    status.status = ReadStatus::kNotSupported;
    return;
  }
  std::vector<nvmlVgpuInstance_t> instances(32);
  unsigned count = static_cast<unsigned>(instances.size());
  nvmlReturn_t rc = f.device_get_active_vgpus(device.handle, &count, instances.data());
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    instances.resize(count);
    rc = f.device_get_active_vgpus(device.handle, &count, instances.data());
  }
  if (rc == NVML_SUCCESS && count == 0) rc = NVML_ERROR_NOT_SUPPORTED;  // nothing to license
  if (rc != NVML_SUCCESS) {
    Record(status, rc, 0U, s);
    return;
  }
  unsigned all_licensed = 1;
  for (unsigned i = 0; i < std::min<std::size_t>(count, instances.size()); ++i) {
    unsigned licensed = 0;
    rc = f.vgpu_instance_get_license_status(instances[i], &licensed);
    if (rc != NVML_SUCCESS) break;
    if (licensed == 0) all_licensed = 0;
  }
  Record(status, rc, all_licensed, s);
}

void NvmlProbe::ReadSlowFields(Device& device, GpuSample& s) {
  const NvmlFunctions& f = lib_->fn();
  GpuSample& slow = device.slow;
  nvmlDevice_t h = device.handle;
  if (f.device_get_enforced_power_limit != nullptr) {
    unsigned mw = 0;
    Record(slow.power_limit_mw, f.device_get_enforced_power_limit(h, &mw), mw, s);
  }
  if (f.device_get_retired_pages != nullptr) {
    for (unsigned cause : {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                           NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR}) {
      unsigned count = 0;
      nvmlReturn_t rc = f.device_get_retired_pages(h, cause, &count, nullptr);
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;  // the count is what we asked
      Record(cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
                 ? slow.retired_pages_double_bit
                 : slow.retired_pages_single_bit,
             rc, count, s);
    }
  }
  if (f.device_get_remapped_rows != nullptr) {
    unsigned correctable = 0, uncorrectable = 0, pending = 0, failure = 0;
    const nvmlReturn_t rc =
        f.device_get_remapped_rows(h, &correctable, &uncorrectable, &pending, &failure);
    Record(slow.remapped_rows_correctable, rc, correctable, s);
    Record(slow.remapped_rows_uncorrectable, rc, uncorrectable, s);
    Record(slow.remapped_rows_pending, rc, pending, s);
    Record(slow.remapped_rows_failure, rc, failure, s);
  }
  slow.mig_devices.clear();
  if (f.device_get_mig_mode != nullptr) {
    unsigned current = 0, pending = 0;
    Record(slow.mig_mode, f.device_get_mig_mode(h, &current, &pending), current, s);
    unsigned max_count = 0;
    if (current == NVML_FEATURE_ENABLED && f.device_get_max_mig_device_count != nullptr &&
        f.device_get_mig_device_handle_by_index != nullptr &&
        f.device_get_max_mig_device_count(h, &max_count) == NVML_SUCCESS) {
      for (unsigned i = 0; i < max_count; ++i) {
        nvmlDevice_t mig = nullptr;
        if (f.device_get_mig_device_handle_by_index(h, i, &mig) != NVML_SUCCESS) continue;
        MigDevice m;
        char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
        if (f.device_get_uuid != nullptr &&
            f.device_get_uuid(mig, text, sizeof text) == NVML_SUCCESS) {
          m.uuid = CString(text, sizeof text);
        }
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
        if (f.device_get_name != nullptr &&
            f.device_get_name(mig, name, sizeof name) == NVML_SUCCESS) {
          m.name = CString(name, sizeof name);
        }
        if (f.device_get_memory_info != nullptr) {
          nvmlMemory_t mem{};
          const nvmlReturn_t rc = f.device_get_memory_info(mig, &mem);
          Record(m.memory_total_bytes, rc, mem.total, s);
          Record(m.memory_used_bytes, rc, mem.used, s);
        }
        slow.mig_devices.push_back(std::move(m));
      }
    }
  }
  slow.nvlinks.clear();
  ReadVgpuLicense(device, s);
  if (f.device_get_nvlink_state != nullptr) {
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      unsigned active = 0;
      const nvmlReturn_t rc = f.device_get_nvlink_state(h, link, &active);
      if (rc != NVML_SUCCESS) continue;  // links are numbered sparsely on some boards
      NvLinkState state;
      state.link = link;
      state.active = active == NVML_FEATURE_ENABLED;
      nvmlPciInfo_t pci{};
      if (state.active && f.device_get_nvlink_remote_pci_info != nullptr &&
          f.device_get_nvlink_remote_pci_info(h, link, &pci) == NVML_SUCCESS) {
        state.remote_pci_bus_id = CString(pci.busId, sizeof pci.busId);
      }
      slow.nvlinks.push_back(std::move(state));
    }
  }
}

std::vector<GpuEvent> NvmlProbe::WaitEvents(int timeout_ms) {
  std::vector<GpuEvent> events;
  const NvmlFunctions& f = lib_->fn();
  if (event_set_ == nullptr || f.event_set_wait == nullptr) return events;
  unsigned wait_ms = static_cast<unsigned>(std::max(0, timeout_ms));
  // The first wait may block; then drain whatever else is queued without waiting.
  for (int i = 0; i < 64; ++i) {
    nvmlEventData_t data{};
    if (f.event_set_wait(event_set_, &data, wait_ms) != NVML_SUCCESS) break;
    wait_ms = 0;
    GpuEvent event;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      if (devices_[d].handle == data.device) event.gpu_index = static_cast<int>(d);
    }
    if (data.eventType & nvmlEventTypeXidCriticalError) {
      event.kind = GpuEvent::Kind::kXid;
    } else if (data.eventType & nvmlEventTypeDoubleBitEccError) {
      event.kind = GpuEvent::Kind::kDoubleBitEcc;
    } else {
      event.kind = GpuEvent::Kind::kSingleBitEcc;
    }
    event.data = data.eventData;
    events.push_back(event);
  }
  return events;
}

namespace {

// A PCI bus id in one spelling ("domain:bus:device.function", hex, lowercase, no padding), so
// that the 8-digit and the legacy 4-digit domain forms compare equal. "" when unparsable.
std::string CanonicalBusId(const std::string& text) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return "";
  char out[48];
  std::snprintf(out, sizeof out, "%x:%x:%x.%x", domain, bus, device, function);
  return out;
}

// Where one GPU's active NVLinks lead: the bus ids of peer GPUs (one entry per link), and how
// many links go into an NVSwitch.
struct NvLinkEnds {
  std::vector<std::string> gpu_bus_ids;
  int switch_links = 0;
};

NvLinkEnds ReadNvLinkEnds(const NvmlFunctions& f, nvmlDevice_t h) {
  NvLinkEnds ends;
  if (h == nullptr || f.device_get_nvlink_state == nullptr) return ends;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    unsigned active = 0;
    if (f.device_get_nvlink_state(h, link, &active) != NVML_SUCCESS) continue;
    if (active != NVML_FEATURE_ENABLED) continue;
    unsigned type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    if (f.device_get_nvlink_remote_device_type != nullptr &&
        f.device_get_nvlink_remote_device_type(h, link, &type) == NVML_SUCCESS &&
        type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      ++ends.switch_links;
      continue;
    }
    // A GPU, or unknown (an older driver): counted only if the far end is one of our GPUs.
    nvmlPciInfo_t pci{};
    if (f.device_get_nvlink_remote_pci_info != nullptr &&
        f.device_get_nvlink_remote_pci_info(h, link, &pci) == NVML_SUCCESS) {
      ends.gpu_bus_ids.push_back(CanonicalBusId(CString(pci.busId, sizeof pci.busId)));
    }
  }
  return ends;
}

}  // namespace

GpuTopology NvmlProbe::Topology() {
  GpuTopology topology;
  const std::size_t n = devices_.size();
  topology.common_ancestor.assign(n, std::vector<int>(n, -1));
  topology.nvlinks.assign(n, std::vector<int>(n, 0));
  const NvmlFunctions& f = lib_->fn();
  for (std::size_t a = 0; a < n; ++a) {
    topology.common_ancestor[a][a] = static_cast<int>(NVML_TOPOLOGY_INTERNAL);
    for (std::size_t b = a + 1; b < n; ++b) {
      unsigned level = 0;
      if (f.device_get_topology_common_ancestor == nullptr || devices_[a].handle == nullptr ||
          devices_[b].handle == nullptr ||
          f.device_get_topology_common_ancestor(devices_[a].handle, devices_[b].handle, &level) !=
              NVML_SUCCESS) {
        continue;
      }
      topology.common_ancestor[a][b] = topology.common_ancestor[b][a] = static_cast<int>(level);
    }
  }
  // NVLinks: the bus ids are read here rather than taken from the sampler's cache, which another
  // thread may be filling.
  std::vector<std::string> bus_ids(n);
  std::vector<NvLinkEnds> ends(n);
  for (std::size_t a = 0; a < n; ++a) {
    nvmlDevice_t h = devices_[a].handle;
    nvmlPciInfo_t pci{};
    if (h != nullptr && f.device_get_pci_info != nullptr &&
        f.device_get_pci_info(h, &pci) == NVML_SUCCESS) {
      bus_ids[a] = CanonicalBusId(CString(pci.busId, sizeof pci.busId));
    }
    ends[a] = ReadNvLinkEnds(f, h);
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      int links = 0;
      if (!bus_ids[b].empty()) {
        links = static_cast<int>(
            std::count(ends[a].gpu_bus_ids.begin(), ends[a].gpu_bus_ids.end(), bus_ids[b]));
      }
      links += std::min(ends[a].switch_links, ends[b].switch_links);
      topology.nvlinks[a][b] = links;
    }
  }
  // A link is seen from both ends; should the two disagree (a link read as down on one side),
  // the smaller count holds, so the matrix stays symmetric.
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      topology.nvlinks[a][b] = topology.nvlinks[b][a] =
          std::min(topology.nvlinks[a][b], topology.nvlinks[b][a]);
    }
  }
  return topology;
}

}  // namespace gpufleet::gpu
