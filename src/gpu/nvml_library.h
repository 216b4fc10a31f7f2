#pragma once
// `NvmlLibrary`: `libnvidia-ml.so.1` opened with dlopen, and the entry points gpufleet uses,
// each resolved from its newest versioned symbol down to the oldest (`_v3` -> `_v2` -> plain).
// A missing entry point is a null pointer, never an error: callers treat it as "not supported".
// The library stays loaded (and NVML initialized) for the object's lifetime.
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "gpu/nvml_api.h"

namespace gpufleet::gpu {

struct NvmlFunctions {
  NvmlInitFn init = nullptr;
  NvmlShutdownFn shutdown = nullptr;
  NvmlErrorStringFn error_string = nullptr;
  NvmlSystemGetDriverVersionFn system_get_driver_version = nullptr;
  NvmlDeviceGetCountFn device_get_count = nullptr;
  NvmlDeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  NvmlDeviceGetStringFn device_get_name = nullptr;
  NvmlDeviceGetStringFn device_get_uuid = nullptr;
  NvmlDeviceGetPciInfoFn device_get_pci_info = nullptr;
  NvmlDeviceGetUintFn device_get_minor_number = nullptr;  // N of the GPU's /dev/nvidiaN
  NvmlDeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;
  NvmlDeviceGetMemoryInfoV2Fn device_get_memory_info_v2 = nullptr;
  NvmlDeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  NvmlDeviceGetTemperatureFn device_get_temperature = nullptr;
  NvmlDeviceGetFieldValuesFn device_get_field_values = nullptr;
  NvmlDeviceGetUintFn device_get_power_usage = nullptr;
  NvmlDeviceGetUintFn device_get_enforced_power_limit = nullptr;
  NvmlDeviceGetUllFn device_get_total_energy_consumption = nullptr;
  NvmlDeviceGetClockInfoFn device_get_clock_info = nullptr;
  NvmlDeviceGetUllFn device_get_clocks_event_reasons = nullptr;
  NvmlDeviceGetPcieThroughputFn device_get_pcie_throughput = nullptr;
  NvmlDeviceGetUintFn device_get_pcie_replay_counter = nullptr;
  NvmlDeviceGetTotalEccErrorsFn device_get_total_ecc_errors = nullptr;
  NvmlDeviceGetRetiredPagesFn device_get_retired_pages = nullptr;
  NvmlDeviceGetRemappedRowsFn device_get_remapped_rows = nullptr;
  // Exactly one of the two process-list entry points is set: the v2/v3 struct when available.
  NvmlDeviceGetProcessesFn device_get_compute_processes = nullptr;
  NvmlDeviceGetProcessesV1Fn device_get_compute_processes_v1 = nullptr;
  NvmlDeviceGetProcessUtilizationFn device_get_process_utilization = nullptr;
  NvmlDeviceGetMigModeFn device_get_mig_mode = nullptr;
  NvmlDeviceGetUintFn device_get_max_mig_device_count = nullptr;
  NvmlDeviceGetMigDeviceHandleByIndexFn device_get_mig_device_handle_by_index = nullptr;
  NvmlDeviceGetTopologyCommonAncestorFn device_get_topology_common_ancestor = nullptr;
  NvmlDeviceGetNvLinkStateFn device_get_nvlink_state = nullptr;
  NvmlDeviceGetNvLinkRemotePciInfoFn device_get_nvlink_remote_pci_info = nullptr;
  NvmlDeviceGetNvLinkRemoteDeviceTypeFn device_get_nvlink_remote_device_type = nullptr;
  NvmlEventSetCreateFn event_set_create = nullptr;
  NvmlDeviceRegisterEventsFn device_register_events = nullptr;
  NvmlEventSetWaitFn event_set_wait = nullptr;
  NvmlEventSetFreeFn event_set_free = nullptr;
  NvmlGpmQueryDeviceSupportFn gpm_query_device_support = nullptr;
  NvmlGpmSampleAllocFn gpm_sample_alloc = nullptr;
  NvmlGpmSampleFreeFn gpm_sample_free = nullptr;
  NvmlGpmSampleGetFn gpm_sample_get = nullptr;
  NvmlGpmMetricsGetFn gpm_metrics_get = nullptr;
  NvmlDeviceGetCodecUtilizationFn device_get_encoder_utilization = nullptr;
  NvmlDeviceGetCodecUtilizationFn device_get_decoder_utilization = nullptr;
  NvmlDeviceGetActiveVgpusFn device_get_active_vgpus = nullptr;
  NvmlVgpuInstanceGetLicenseStatusFn vgpu_instance_get_license_status = nullptr;
};

// True for the driver releases (535.43 to 535.86) whose nvmlDeviceGetComputeRunningProcesses_v3
// writes entries larger than the documented struct; `Open` then uses _v2 instead.
bool ProcessListV3IsBroken(const std::string& driver_version);

class NvmlLibrary {
 public:
  // dlopens `path` and resolves every entry point; then calls nvmlInit. Errors name the library
  // and dlerror()'s or NVML's reason, in one line.
  static core::Result<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& fn() const { return fn_; }
  // NVML's text for a return code ("Not Supported"), or the number when the library has none.
  std::string ErrorString(nvmlReturn_t code) const;
  // "entry point: resolved symbol" (or "missing") for every entry point, in a fixed order.
  const std::vector<std::string>& symbol_report() const { return symbol_report_; }

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  bool initialized_ = false;
  NvmlFunctions fn_;
  std::vector<std::string> symbol_report_;
};

}  // namespace gpufleet::gpu
