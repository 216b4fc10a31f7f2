#include "gpu/nvml_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <initializer_list>

namespace gpufleet::gpu {
namespace {

// Resolves the first of `names` the library exports into `out`, and records which one.
// The report names the entry point by `label`, which defaults to the newest symbol name.
template <typename Fn>
void Resolve(void* handle, std::initializer_list<const char*> names, Fn& out,
             std::vector<std::string>& report, const char* label = nullptr) {
  const std::string entry = label != nullptr ? label : *names.begin();
  for (const char* name : names) {
    if (void* sym = dlsym(handle, name)) {
      out = reinterpret_cast<Fn>(sym);
      report.push_back(entry + ": " + name);
      return;
    }
  }
  out = nullptr;
  report.push_back(entry + ": missing");
}

}  // namespace

bool ProcessListV3IsBroken(const std::string& driver_version) {
  unsigned major = 0, minor = 0;
  if (std::sscanf(driver_version.c_str(), "%u.%u", &major, &minor) != 2) return false;
  return major == 535 && minor >= 43 && minor <= 86;
}

core::Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  // RTLD_LOCAL keeps the driver's symbols out of the global namespace; RTLD_NOW surfaces a broken
  // library here instead of at the first call.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    // dlerror() already names the library.
    return core::Error{why != nullptr ? std::string(why) : "cannot load " + path};
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = handle;
  NvmlFunctions& f = lib->fn_;
  auto& r = lib->symbol_report_;
  Resolve(handle, {"nvmlInit_v2", "nvmlInit"}, f.init, r);
  Resolve(handle, {"nvmlShutdown"}, f.shutdown, r);
  Resolve(handle, {"nvmlErrorString"}, f.error_string, r);
  Resolve(handle, {"nvmlSystemGetDriverVersion"}, f.system_get_driver_version, r);
  Resolve(handle, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, f.device_get_count, r);
  Resolve(handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
          f.device_get_handle_by_index, r);
  Resolve(handle, {"nvmlDeviceGetName"}, f.device_get_name, r);
  Resolve(handle, {"nvmlDeviceGetUUID"}, f.device_get_uuid, r);
  Resolve(handle, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}, f.device_get_pci_info, r);
  Resolve(handle, {"nvmlDeviceGetMinorNumber"}, f.device_get_minor_number, r);
  Resolve(handle, {"nvmlDeviceGetUtilizationRates"}, f.device_get_utilization_rates, r);
  Resolve(handle, {"nvmlDeviceGetMemoryInfo_v2"}, f.device_get_memory_info_v2, r);
  Resolve(handle, {"nvmlDeviceGetMemoryInfo"}, f.device_get_memory_info, r);
  Resolve(handle, {"nvmlDeviceGetTemperature"}, f.device_get_temperature, r);
  Resolve(handle, {"nvmlDeviceGetFieldValues"}, f.device_get_field_values, r);
  Resolve(handle, {"nvmlDeviceGetPowerUsage"}, f.device_get_power_usage, r);
  Resolve(handle, {"nvmlDeviceGetEnforcedPowerLimit"}, f.device_get_enforced_power_limit, r);
  Resolve(handle, {"nvmlDeviceGetTotalEnergyConsumption"}, f.device_get_total_energy_consumption,
          r);
  Resolve(handle, {"nvmlDeviceGetClockInfo"}, f.device_get_clock_info, r);
  Resolve(handle,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
          f.device_get_clocks_event_reasons, r);
  Resolve(handle, {"nvmlDeviceGetPcieThroughput"}, f.device_get_pcie_throughput, r);
  Resolve(handle, {"nvmlDeviceGetPcieReplayCounter"}, f.device_get_pcie_replay_counter, r);
  Resolve(handle, {"nvmlDeviceGetTotalEccErrors"}, f.device_get_total_ecc_errors, r);
  Resolve(handle, {"nvmlDeviceGetRetiredPages"}, f.device_get_retired_pages, r);
  Resolve(handle, {"nvmlDeviceGetRemappedRows"}, f.device_get_remapped_rows, r);
  Resolve(handle,
          {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
          f.device_get_compute_processes, r);
  if (f.device_get_compute_processes == nullptr) {
    // Only the oldest ABI is left; it fills the shorter nvmlProcessInfo_v1_t.
    r.pop_back();
    Resolve(handle, {"nvmlDeviceGetComputeRunningProcesses"}, f.device_get_compute_processes_v1, r,
            "nvmlDeviceGetComputeRunningProcesses_v3");
  }
  Resolve(handle, {"nvmlDeviceGetProcessUtilization"}, f.device_get_process_utilization, r);
  Resolve(handle, {"nvmlDeviceGetMigMode"}, f.device_get_mig_mode, r);
  Resolve(handle, {"nvmlDeviceGetMaxMigDeviceCount"}, f.device_get_max_mig_device_count, r);
  Resolve(handle, {"nvmlDeviceGetMigDeviceHandleByIndex"}, f.device_get_mig_device_handle_by_index,
          r);
  Resolve(handle, {"nvmlDeviceGetTopologyCommonAncestor"}, f.device_get_topology_common_ancestor,
          r);
  Resolve(handle, {"nvmlDeviceGetNvLinkState"}, f.device_get_nvlink_state, r);
  Resolve(handle, {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"},
          f.device_get_nvlink_remote_pci_info, r);
  Resolve(handle, {"nvmlDeviceGetNvLinkRemoteDeviceType"}, f.device_get_nvlink_remote_device_type,
          r);
  Resolve(handle, {"nvmlEventSetCreate"}, f.event_set_create, r);
  Resolve(handle, {"nvmlDeviceRegisterEvents"}, f.device_register_events, r);
  Resolve(handle, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, f.event_set_wait, r);
  Resolve(handle, {"nvmlEventSetFree"}, f.event_set_free, r);
  Resolve(handle, {"nvmlGpmQueryDeviceSupport"}, f.gpm_query_device_support, r);
  Resolve(handle, {"nvmlGpmSampleAlloc"}, f.gpm_sample_alloc, r);
  Resolve(handle, {"nvmlGpmSampleFree"}, f.gpm_sample_free, r);
  Resolve(handle, {"nvmlGpmSampleGet"}, f.gpm_sample_get, r);
  Resolve(handle, {"nvmlGpmMetricsGet"}, f.gpm_metrics_get, r);
  Resolve(handle, {"nvmlDeviceGetEncoderUtilization"}, f.device_get_encoder_utilization, r);
  Resolve(handle, {"nvmlDeviceGetDecoderUtilization"}, f.device_get_decoder_utilization, r);
  Resolve(handle, {"nvmlDeviceGetActiveVgpus"}, f.device_get_active_vgpus, r);
  Resolve(handle, {"nvmlVgpuInstanceGetLicenseStatus"}, f.vgpu_instance_get_license_status, r);

  if (f.init == nullptr || f.device_get_count == nullptr ||
      f.device_get_handle_by_index == nullptr) {
    return core::Error{path + " lacks nvmlInit / nvmlDeviceGetCount / nvmlDeviceGetHandleByIndex;" +
                       " it is not a usable NVML library"};
  }
  const nvmlReturn_t rc = f.init();
  if (rc != NVML_SUCCESS) {
    return core::Error{"NVML did not initialize (" + lib->ErrorString(rc) +
                       "); is the NVIDIA driver loaded?"};
  }
  lib->initialized_ = true;
  if (f.system_get_driver_version != nullptr) {
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (f.system_get_driver_version(version, sizeof version) == NVML_SUCCESS &&
        ProcessListV3IsBroken(version)) {
      // These drivers write 32-byte entries from _v3, so every entry after the first would be
      // misread with the documented 24-byte struct; _v2 writes the documented layout.
      if (void* v2 = dlsym(handle, "nvmlDeviceGetComputeRunningProcesses_v2")) {
        f.device_get_compute_processes = reinterpret_cast<NvmlDeviceGetProcessesFn>(v2);
        for (std::string& line : r) {
          if (line.rfind("nvmlDeviceGetComputeRunningProcesses_v3:", 0) == 0) {
            line =
                "nvmlDeviceGetComputeRunningProcesses_v3: "
                "nvmlDeviceGetComputeRunningProcesses_v2 (driver " +
                std::string(version) + " has a broken _v3)";
          }
        }
      }
    }
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialized_ && fn_.shutdown != nullptr) fn_.shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::ErrorString(nvmlReturn_t code) const {
  if (fn_.error_string != nullptr) {
    if (const char* text = fn_.error_string(code)) return text;
  }
  return "NVML error " + std::to_string(code);
}

}  // namespace gpufleet::gpu
