#pragma once
// `NvmlProbe`: the GpuProbe backed by the real driver through `NvmlLibrary`.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/gpu_probe.h"
#include "gpu/nvml_library.h"
#include "gpu/process_info.h"

namespace gpufleet::gpu {

class NvmlProbe final : public GpuProbe {
 public:
  // Takes an initialized library; enumerates the GPUs and registers for their events.
  // `slow_refresh_every`: fields that change rarely (NVLink, MIG, retired pages, remapped rows,
  // power limit) are re-read every that many samples of a GPU, to keep the sampler cheap.
  explicit NvmlProbe(std::unique_ptr<NvmlLibrary> library, int slow_refresh_every = 30);
  ~NvmlProbe() override;

  std::string BackendName() const override { return "nvml"; }
  bool IsSimulated() const override { return false; }
  std::string DriverVersion() const override { return driver_version_; }
  int DeviceCount() const override { return static_cast<int>(devices_.size()); }
  GpuSample Sample(int index, double now_s) override;
  std::vector<GpuEvent> WaitEvents(int timeout_ms) override;
  GpuTopology Topology() override;
  std::string DeviceNode(int index) const override;
  std::vector<std::string> SymbolReport() const override { return lib_->symbol_report(); }

 private:
  struct ProcessUtil {
    std::uint32_t sm = 0;
    std::uint32_t mem = 0;
    unsigned long long timestamp_us = 0;
  };
  struct Device {
    nvmlDevice_t handle = nullptr;
    nvmlReturn_t open_rc = NVML_SUCCESS;  // nvmlDeviceGetHandleByIndex's answer
    std::string uuid, name, pci_bus_id;
    std::string device_node;  // "/dev/nvidiaN", or "" when the driver gave no minor number
    std::size_t process_capacity = 16;
    std::size_t process_util_capacity = 16;
    bool gpm_supported = false;
    nvmlGpmSample_t gpm_previous = nullptr;
    nvmlGpmSample_t gpm_current = nullptr;
    bool gpm_previous_valid = false;
    std::unique_ptr<nvmlGpmMetricsGet_t> gpm_request;  // reused: the struct is about 10 KB
    int samples_taken = 0;
    GpuSample slow;  // the slowly changing fields, as last read
  };

  void ReadIdentity(Device& device, GpuSample& sample);
  void ReadProcesses(Device& device, GpuSample& sample, double now_s);
  void ReadProcessUtilization(Device& device, GpuSample& sample);
  void ReadSlowFields(Device& device, GpuSample& sample);
  void ReadGpm(Device& device, GpuSample& sample);
  void ReadFieldValues(Device& device, GpuSample& sample);
  void ReadCodecs(Device& device, GpuSample& sample);
  void ReadVgpuLicense(Device& device, GpuSample& sample);

  std::unique_ptr<NvmlLibrary> lib_;
  int slow_refresh_every_;
  std::string driver_version_;
  std::vector<Device> devices_;
  nvmlEventSet_t event_set_ = nullptr;
  ProcessInspector inspector_;
};

}  // namespace gpufleet::gpu
