#pragma once
// `GpuProbe`: reads the GPUs of this machine. Two backends: NVML (the real driver, loaded with
// dlopen) and simulated (for machines without a driver; always labelled as such).
//
// Contract: `Sample` never throws and never aborts on driver errors; a field the driver cannot give
// is recorded in its `Reading` status, and a GPU that vanished comes back with `lost` set. `Sample`
// is called from one thread (the sampler); `WaitEvents` may be called concurrently from another.
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "gpu/gpu_sample.h"

namespace gpufleet::gpu {

class GpuProbe {
 public:
  virtual ~GpuProbe() = default;

  // "nvml" or "simulated".
  virtual std::string BackendName() const = 0;
  virtual bool IsSimulated() const = 0;
  // The driver version, or a description of the simulation.
  virtual std::string DriverVersion() const = 0;
  virtual int DeviceCount() const = 0;

  // Reads every field of GPU `index` (0 <= index < DeviceCount()). `now_s` is the caller's
  // monotonic clock, stored in the sample; the probe keeps per-GPU state between calls (the last
  // process-utilization timestamp, the previous GPM sample).
  virtual GpuSample Sample(int index, double now_s) = 0;

  // Waits up to `timeout_ms` for hardware events (XID, ECC) and returns those that arrived; an
  // empty result after the timeout is normal.
  virtual std::vector<GpuEvent> WaitEvents(int timeout_ms) = 0;

  virtual GpuTopology Topology() = 0;

  // The character device through which processes reach GPU `index` (`/dev/nvidiaN`, N the
  // driver's minor number, which need not equal the index), for confining each job to its own
  // GPUs; "" when there is none (simulated GPUs) or the driver does not say. The directory is
  // /dev, or $GPUFLEET_NVIDIA_DEVICE_DIR where set (tests give fake device nodes that way).
  virtual std::string DeviceNode(int /*index*/) const { return ""; }

  // One line per NVML entry point: which symbol was resolved (or "missing"). Empty for backends
  // that have no symbols.
  virtual std::vector<std::string> SymbolReport() const { return {}; }
};

struct ProbeOptions {
  // -1: use NVML, and fall back to simulated GPUs when no driver is found. N >= 0: N simulated
  // GPUs (0: none), without trying NVML.
  int simulated_gpus = -1;
  // The model simulated GPUs report: a GPU catalog name ("" : an H100 80GB); the memory is the
  // catalog's. Checked by the caller (core::GpuCatalog::Find).
  std::string simulated_model;
  // How many simulated GPUs to use when NVML is not available and none were asked for.
  int fallback_simulated_gpus = 4;
  // The library to dlopen; the plain soname searches the usual paths (and LD_LIBRARY_PATH).
  std::string nvml_library = "libnvidia-ml.so.1";
};

struct OpenedProbe {
  std::unique_ptr<GpuProbe> probe;
  // One line for the operator when NVML was not used, e.g. why the library did not load; "" when
  // NVML is in use.
  std::string notice;
};

// Opens the probe `options` asks for. When NVML cannot be loaded or initialized, falls back to
// `fallback_simulated_gpus` simulated GPUs and says why in `notice`.
OpenedProbe OpenProbe(const ProbeOptions& options);

}  // namespace gpufleet::gpu
