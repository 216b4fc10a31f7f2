#pragma once
// The scenario a fake NVML library plays back: GPUs whose readings follow a step-function
// timeline, processes, and faults. Parsed from JSON (see README.md); every key is checked, so a
// typo is an error that names the file and the JSON path rather than a silently ignored field.
#include <array>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fake_nvml {

inline constexpr int kMaxNvSwitches = 64;
inline constexpr double kForever = std::numeric_limits<double>::infinity();

// Capabilities a GPU can declare unsupported with its "not_supported" list.
enum class Feature : std::size_t {
  kPower,
  kTemperature,
  kMemoryTemperature,
  kEnergy,
  kClocks,
  kClocksEventReasons,
  kPcie,
  kEcc,
  kRetiredPages,
  kRemappedRows,
  kProcesses,
  kProcessUtilization,
  kMig,
  kNvlink,
  kGpm,
  kUtilization,
  kMemory,
  kEvents,
  kEncoder,
  kDecoder,
  kNvlinkThroughput,
  kVgpu,
  kCount,
};
inline constexpr std::size_t kFeatureCount = static_cast<std::size_t>(Feature::kCount);

// One timeline entry with every value resolved (a key missing from the JSON entry keeps the
// previous entry's value).
struct TimelinePoint {
  double t = 0;
  unsigned gpu_util = 0;
  unsigned mem_util = 0;
  unsigned long long memory_used_mib = 0;
  unsigned temperature_c = 30;
  unsigned memory_temperature_c = 35;
  double power_w = 70;
  unsigned sm_clock_mhz = 345;
  unsigned mem_clock_mhz = 2619;
  unsigned long long clocks_event_reasons = 1;  // GPU idle
  unsigned pcie_tx_kbps = 0;
  unsigned pcie_rx_kbps = 0;
  unsigned pcie_replay = 0;
  unsigned long long ecc_corrected = 0;
  unsigned long long ecc_uncorrected = 0;
  double sm_activity = 0;       // percent, 0..100
  double gr_engine_active = 0;  // percent, 0..100: GPM's GRAPHICS_UTIL
  double tensor_active = 0;     // percent, 0..100: GPM's ANY_TENSOR_UTIL
  double dram_active = 0;       // percent, 0..100: GPM's DRAM_BW_UTIL
  unsigned encoder_util = 0;    // percent
  unsigned decoder_util = 0;    // percent
  double nvlink_tx_kibps = 0;   // NVLink data sent per second, all links together, in KiB
  double nvlink_rx_kibps = 0;   // idem, received
};

// The timeline values whose integrals the fake serves (GPM ratios, NVLink counters).
enum class Integrated : std::size_t {
  kSmActivity,
  kGrEngineActive,
  kTensorActive,
  kDramActive,
  kNvlinkTxKib,
  kNvlinkRxKib,
  kCount,
};
inline constexpr std::size_t kIntegratedCount = static_cast<std::size_t>(Integrated::kCount);

// The value of `what` in one timeline entry (the rate whose integral the fake serves).
double IntegratedValue(const TimelinePoint& pt, Integrated what);

struct Process {
  unsigned pid = 0;
  unsigned long long used_memory_mib = 0;
  unsigned sm_util = 0;
  unsigned mem_util = 0;
  double from = 0;
  double until = kForever;
};

struct MigDevice {
  std::string uuid;
  std::string name;
  unsigned long long memory_total_mib = 0;
  unsigned long long memory_used_mib = 0;
};

struct VgpuInstance {
  unsigned id = 0;
  bool licensed = true;
};

struct NvLink {
  unsigned link = 0;
  bool active = true;
  int peer_gpu = -1;     // -1: no peer GPU given
  int peer_switch = -1;  // an NVSwitch (0..kMaxNvSwitches-1) instead of a GPU; -1: none
};

struct Gpu {
  std::string name;
  std::string uuid;
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  unsigned minor_number = 0;  // the /dev/nvidiaN device's N; default: the GPU's index
  unsigned long long memory_total_mib = 81559;
  unsigned long long memory_reserved_mib = 0;
  double power_limit_w = 700;
  std::array<bool, kFeatureCount> not_supported{};
  std::vector<TimelinePoint> timeline;  // sorted by t, timeline[0].t == 0
  std::vector<Process> processes;
  unsigned retired_single_bit = 0;
  unsigned retired_double_bit = 0;
  unsigned remapped_correctable = 0;
  unsigned remapped_uncorrectable = 0;
  unsigned remapped_pending = 0;
  unsigned remapped_failure = 0;
  unsigned mig_mode = 0;
  std::vector<MigDevice> mig_devices;
  std::vector<NvLink> nvlinks;
  bool gpm_supported = false;
  std::vector<VgpuInstance> vgpu_instances;  // empty: no vGPU manager on this GPU
  double lost_at = kForever;                 // earliest faults.gpu_lost time for this GPU

  // Integrals of the timeline from t=0, one per timeline entry (at that entry's t).
  std::vector<double> energy_j_at;
  std::vector<double> sm_activity_integral_at;
  // Per timeline entry, the integral of each `Integrated` value from t=0 to that entry's t.
  std::vector<std::array<double, kIntegratedCount>> integrals_at;

  [[nodiscard]] bool Unsupported(Feature f) const {
    return not_supported[static_cast<std::size_t>(f)];
  }
  // The timeline entry in force at scenario time t (the first one for t < 0).
  [[nodiscard]] const TimelinePoint& At(double t) const;
  // Joules consumed from scenario time 0 to t (0 for t <= 0).
  [[nodiscard]] double EnergyJoules(double t) const;
  // Integral of sm_activity (percent * seconds) from 0 to t.
  [[nodiscard]] double SmActivityIntegral(double t) const;
  // Integral of the given timeline value from 0 to t (percent*seconds, or KiB for NVLink).
  [[nodiscard]] double IntegralOf(Integrated what, double t) const;
};

struct XidEvent {
  unsigned gpu = 0;
  double at = 0;
  unsigned long long xid = 0;
};

struct Scenario {
  std::string driver_version = "550.54.15";
  double time_scale = 1.0;
  std::vector<Gpu> gpus;
  std::vector<std::vector<unsigned>> topology;  // gpus.size() squared, always filled
  bool insufficient_size_first_call = false;
  std::vector<XidEvent> xid_events;  // sorted by at
  int init_error = 0;
};

// "json.path: what is wrong" (the file name is added by LoadScenario).
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses scenario JSON text (comments allowed). Throws ScenarioError.
Scenario ParseScenario(std::string_view text);

// Loads the scenario named by $FAKE_NVML_SCENARIO, or the built-in default when it is unset or
// empty. On failure returns false and sets *error to one line: "fake-nvml: FILE: PATH: message".
bool LoadScenario(Scenario* out, std::string* error);

}  // namespace fake_nvml
