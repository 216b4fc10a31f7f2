#pragma once
// What one reading of one GPU holds. Every measured field is a `Reading`: a value plus whether the
// driver supplied it, so "not supported on this GPU" is recorded rather than fatal, and a value
// that had to be clamped into range is still shown but flagged.
#include <cstdint>
#include <string>
#include <vector>

namespace gpufleet::gpu {

enum class ReadStatus : std::uint8_t {
  kMissing,       // never read (the backend has no such field, or the symbol is absent)
  kOk,            // read as reported by the driver
  kClamped,       // read, but out of range: clamped, and a flag says why
  kNotSupported,  // the driver says this GPU does not support it
  kFailed,        // the driver returned another error
};

template <typename T>
struct Reading {
  T value{};
  ReadStatus status = ReadStatus::kMissing;

  bool has_value() const { return status == ReadStatus::kOk || status == ReadStatus::kClamped; }
  void Set(T v) {
    value = v;
    status = ReadStatus::kOk;
  }
};

// A compute process using the GPU, with what we could learn about it from the OS.
struct GpuProcess {
  std::uint32_t pid = 0;
  Reading<std::uint64_t> used_memory_bytes;
  Reading<std::uint32_t> sm_util_pct;   // nvmlDeviceGetProcessUtilization, since the last sample
  Reading<std::uint32_t> mem_util_pct;  // idem
  std::int64_t uid = -1;                // -1 when the process could not be inspected
  std::string user;                     // uid's name, or the uid as text
  std::string command;                  // argv joined by spaces, shortened
  std::string job_id;                   // gpufleet job (environment marker or cgroup), or ""
};

struct MigDevice {
  std::string uuid;
  std::string name;
  Reading<std::uint64_t> memory_total_bytes;
  Reading<std::uint64_t> memory_used_bytes;
};

struct NvLinkState {
  unsigned link = 0;
  bool active = false;
  std::string remote_pci_bus_id;  // the peer's bus id, "" when unknown
};

// Health as the agent reports it: healthy unless something in `reasons` says otherwise.
struct GpuHealth {
  bool healthy = true;
  std::vector<std::string> reasons;  // e.g. "XID 79 (GPU has fallen off the bus)"
};

struct GpuSample {
  // Identity.
  int index = 0;
  std::string uuid;
  std::string name;
  std::string pci_bus_id;
  bool simulated = false;
  bool lost = false;  // the driver answered NVML_ERROR_GPU_IS_LOST: every reading below is stale
  std::string open_error;  // why the GPU could not be opened at all (e.g. no permission), or ""

  double time_s = 0;         // sampler clock (monotonic seconds) when read
  std::int64_t unix_ms = 0;  // wall-clock time when read, for export

  Reading<std::uint32_t> gpu_util_pct;
  Reading<std::uint32_t> mem_util_pct;
  Reading<std::uint64_t> fb_total_bytes;
  Reading<std::uint64_t> fb_used_bytes;
  Reading<std::uint64_t> fb_free_bytes;
  Reading<std::uint64_t> fb_reserved_bytes;
  Reading<std::uint32_t> temperature_c;
  Reading<std::uint32_t> memory_temperature_c;
  Reading<std::uint32_t> power_mw;
  Reading<std::uint32_t> power_limit_mw;
  Reading<std::uint64_t> energy_mj;  // total since the driver loaded
  Reading<std::uint32_t> sm_clock_mhz;
  Reading<std::uint32_t> mem_clock_mhz;
  Reading<std::uint64_t> clock_event_reasons;  // nvmlClocksEventReason* bit mask
  Reading<std::uint32_t> pcie_tx_kbps;
  Reading<std::uint32_t> pcie_rx_kbps;
  Reading<std::uint32_t> pcie_replay_count;
  Reading<std::uint64_t> ecc_corrected_volatile;
  Reading<std::uint64_t> ecc_uncorrected_volatile;
  Reading<std::uint64_t> ecc_corrected_total;
  Reading<std::uint64_t> ecc_uncorrected_total;
  Reading<std::uint32_t> retired_pages_single_bit;
  Reading<std::uint32_t> retired_pages_double_bit;
  Reading<std::uint32_t> remapped_rows_correctable;
  Reading<std::uint32_t> remapped_rows_uncorrectable;
  Reading<std::uint32_t> remapped_rows_pending;
  Reading<std::uint32_t> remapped_rows_failure;
  Reading<double> sm_activity;         // GPM SM activity, 0..1 (Hopper and later)
  Reading<double> gr_engine_activity;  // GPM graphics/compute engine activity, 0..1 (idem)
  Reading<double> tensor_activity;     // GPM any-tensor-pipe activity, 0..1 (idem)
  Reading<double> dram_activity;       // GPM DRAM bandwidth utilization, 0..1 (idem)
  Reading<std::uint32_t> encoder_util_pct;
  Reading<std::uint32_t> decoder_util_pct;
  Reading<std::uint64_t> nvlink_tx_kib;  // NVLink data sent, all links, since the driver loaded
  Reading<std::uint64_t> nvlink_rx_kib;  // NVLink data received, idem
  // 1 when every active vGPU instance on this GPU is licensed, 0 when one is not; not supported
  // when the GPU hosts no vGPU instance (bare metal, or no vGPU manager).
  Reading<std::uint32_t> vgpu_license_status;
  Reading<std::uint32_t> mig_mode;
  std::vector<MigDevice> mig_devices;
  std::vector<NvLinkState> nvlinks;  // only links the driver reports
  Reading<std::vector<GpuProcess>> processes;

  // Filled by the sampler from the event stream and its own history, not by the probe.
  std::uint64_t xid_count = 0;  // XID events seen since the agent started
  std::uint32_t last_xid = 0;
  GpuHealth health;
  std::vector<std::string> flags;  // anomalies: clamped values, counters going backwards
};

// A hardware event from the driver's event stream.
struct GpuEvent {
  int gpu_index = -1;
  enum class Kind : std::uint8_t { kXid, kSingleBitEcc, kDoubleBitEcc } kind = Kind::kXid;
  std::uint64_t data = 0;  // the XID number for kXid
};

// How every pair of GPUs is connected. Both matrices are square and indexed by GPU index.
struct GpuTopology {
  // Common-ancestor levels (nvmlGpuTopologyLevel_t values: 0 same board, 10 one PCIe switch, 20
  // several switches, 30 host bridge, 40 NUMA node, 50 system), -1 when unknown.
  std::vector<std::vector<int>> common_ancestor;
  // NVLinks between the two GPUs: active links whose far end is the other GPU, plus, when both
  // GPUs have active links into an NVSwitch fabric, the smaller of their two switch-link counts
  // (every GPU on the fabric reaches every other at its own link bandwidth). 0 on the diagonal,
  // and everywhere on GPUs without NVLink.
  std::vector<std::vector<int>> nvlinks;
};

}  // namespace gpufleet::gpu
