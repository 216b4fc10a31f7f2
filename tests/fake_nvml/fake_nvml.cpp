// A fake libnvidia-ml.so.1 for tests: implements the NVML subset declared in gpu/nvml_api.h by
// playing back a JSON scenario (see README.md and scenario.h). Built twice: the full variant
// exports every entry point, the legacy variant (FAKE_NVML_LEGACY=1) only the pre-versioning
// names, so that callers' fallbacks get exercised.
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/nvml_api.h"
#include "scenario.h"

#ifndef FAKE_NVML_LEGACY
#define FAKE_NVML_LEGACY 0
#endif

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

// The objects behind NVML's opaque handles.
struct nvmlDevice_st {
  unsigned gpu = 0;
  int mig = -1;  // index into the GPU's mig_devices, -1 for the GPU itself
};

struct nvmlEventSet_st {
  std::vector<unsigned long long> masks;  // registered event types, per GPU
  std::vector<char> delivered;            // per scenario XID event
  bool alive = true;
};

struct nvmlGpmSample_st {
  bool filled = false;
  unsigned gpu = 0;
  double t = 0;
  std::array<double, fake_nvml::kIntegratedCount> integrals{};  // at time t
};

namespace fake_nvml {
namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;
constexpr unsigned kMaxMigDevices = 7;
constexpr double kProcessSampleWindowS = 100;  // process-utilization samples kept, in seconds

// ---- Call counts and self CPU time ----------------------------------------------------------

struct CallCounter {
  const char* name = nullptr;
  std::atomic<unsigned long long> count{0};
};
constexpr std::size_t kMaxCounters = 128;
std::array<CallCounter, kMaxCounters> g_counters;
std::atomic<std::size_t> g_counter_count{0};
std::mutex g_counter_mu;
std::atomic<unsigned long long> g_self_cpu_ns{0};
std::atomic<bool> g_scenario_failed{false};

CallCounter* RegisterCounter(const char* name) {
  std::lock_guard<std::mutex> lock(g_counter_mu);
  std::size_t n = g_counter_count.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < n; ++i) {
    if (std::strcmp(g_counters[i].name, name) == 0) return &g_counters[i];
  }
  if (n == kMaxCounters) {
    std::fputs("fake-nvml: too many entry points\n", stderr);
    std::abort();
  }
  g_counters[n].name = name;
  g_counter_count.store(n + 1, std::memory_order_release);
  return &g_counters[n];
}

void ResetCounters(CallCounter* keep_one) {
  std::size_t n = g_counter_count.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) g_counters[i].count.store(0, std::memory_order_relaxed);
  keep_one->count.store(1, std::memory_order_relaxed);
}

unsigned long long ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<unsigned long long>(ts.tv_nsec);
}

// Counts a call and adds the thread CPU time spent in it (less paused stretches) to the total.
class EntryGuard {
 public:
  explicit EntryGuard(CallCounter* counter) : start_(ThreadCpuNs()) {
    counter->count.fetch_add(1, std::memory_order_relaxed);
  }
  ~EntryGuard() {
    g_self_cpu_ns.fetch_add(spent_ + (ThreadCpuNs() - start_), std::memory_order_relaxed);
  }
  EntryGuard(const EntryGuard&) = delete;
  EntryGuard& operator=(const EntryGuard&) = delete;
  void Pause() { spent_ += ThreadCpuNs() - start_; }
  void Resume() { start_ = ThreadCpuNs(); }

 private:
  unsigned long long start_;
  unsigned long long spent_ = 0;
};

#define FAKE_ENTRY()                                                                            \
  static ::fake_nvml::CallCounter* const fake_counter = ::fake_nvml::RegisterCounter(__func__); \
  ::fake_nvml::EntryGuard fake_guard(fake_counter)

// ---- Library state ----------------------------------------------------------------------------

struct State {
  std::mutex mu;
  std::condition_variable cv;
  int refcount = 0;
  int waiters = 0;  // threads inside nvmlEventSetWait
  Scenario scenario;
  std::vector<nvmlDevice_st> gpu_handles;
  std::vector<nvmlDevice_st> mig_handles;     // all GPUs' MIG devices
  std::vector<std::size_t> mig_first;         // per GPU: its first entry in mig_handles
  std::vector<char> lost;                     // sticky once observed
  std::vector<char> process_fault_pending;    // faults.insufficient_size_first_call
  std::vector<unsigned long long> energy_mj;  // last value returned, keeps it monotone
  std::map<nvmlEventSet_st*, std::shared_ptr<nvmlEventSet_st>> event_sets;
  std::map<nvmlGpmSample_st*, std::unique_ptr<nvmlGpmSample_st>> gpm_samples;
  bool manual_clock = false;
  double manual_t = 0;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  // Wall-clock microseconds at scenario second 0: NVML's timestamps are CPU (wall) time in us,
  // and callers compute "the last N seconds" from their own clock.
  unsigned long long epoch_us = 0;
};

// Never destroyed: a thread may still wait in nvmlEventSetWait while the process exits, and
// destroying a condition variable with waiters is undefined. Final shutdown, and unloading while
// no thread waits, empty every container instead, so that nothing stays allocated behind it.
State& St() {
  alignas(State) static unsigned char storage[sizeof(State)];
  static State* const state = new (storage) State;
  return *state;
}

// Back to the uninitialized state. The state lock must be held.
void Reset(State& s) {
  s.refcount = 0;
  for (auto& entry : s.event_sets) entry.second->alive = false;
  s.event_sets.clear();
  s.gpm_samples.clear();
  s.scenario = Scenario{};
  std::vector<nvmlDevice_st>().swap(s.gpu_handles);
  std::vector<nvmlDevice_st>().swap(s.mig_handles);
  std::vector<std::size_t>().swap(s.mig_first);
  std::vector<char>().swap(s.lost);
  std::vector<char>().swap(s.process_fault_pending);
  std::vector<unsigned long long>().swap(s.energy_mj);
  s.cv.notify_all();
}

// Releases what a caller that never called nvmlShutdown left behind, when the library is
// unloaded (dlclose or exit), so leak checkers stay quiet.
struct UnloadCleanup {
  UnloadCleanup() = default;
  UnloadCleanup(const UnloadCleanup&) = delete;
  UnloadCleanup& operator=(const UnloadCleanup&) = delete;
  ~UnloadCleanup() {
    State& s = St();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.waiters == 0) Reset(s);
  }
};
UnloadCleanup g_unload_cleanup;

double Now(const State& s) {
  if (s.manual_clock) return s.manual_t;
  std::chrono::duration<double> real = std::chrono::steady_clock::now() - s.origin;
  return real.count() * s.scenario.time_scale;
}

bool IsLost(State& s, unsigned gpu, double now) {
  if (s.lost[gpu] == 0 && now >= s.scenario.gpus[gpu].lost_at) s.lost[gpu] = 1;
  return s.lost[gpu] != 0;
}

template <typename T>
const T* InArray(const std::vector<T>& v, const void* p) {
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  auto begin = reinterpret_cast<std::uintptr_t>(v.data());
  if (v.empty() || addr < begin || addr >= begin + v.size() * sizeof(T)) return nullptr;
  if ((addr - begin) % sizeof(T) != 0) return nullptr;
  return &v[(addr - begin) / sizeof(T)];
}

struct Ctx {
  const Gpu* gpu = nullptr;
  unsigned index = 0;
  const MigDevice* mig = nullptr;
  double now = 0;
  [[nodiscard]] const TimelinePoint& Point() const { return gpu->At(now); }
};

constexpr Feature kNoFeature = Feature::kCount;

// Checks, in order: initialized, valid handle, arguments, GPU lost, MIG handle allowed, feature
// supported. The state lock must be held.
nvmlReturn_t Open(State& s, nvmlDevice_t device, bool args_ok, Feature feature, Ctx* ctx,
                  bool allow_mig = false) {
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  const nvmlDevice_st* d = InArray(s.gpu_handles, device);
  if (d == nullptr) d = InArray(s.mig_handles, device);
  if (d == nullptr || !args_ok) return NVML_ERROR_INVALID_ARGUMENT;
  ctx->index = d->gpu;
  ctx->gpu = &s.scenario.gpus[d->gpu];
  ctx->mig = d->mig >= 0 ? &ctx->gpu->mig_devices[static_cast<std::size_t>(d->mig)] : nullptr;
  ctx->now = Now(s);
  if (IsLost(s, d->gpu, ctx->now)) return NVML_ERROR_GPU_IS_LOST;
  if (ctx->mig != nullptr && !allow_mig) return NVML_ERROR_NOT_SUPPORTED;
  if (feature != kNoFeature && ctx->gpu->Unsupported(feature)) return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned length) {
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

void FillPci(const Gpu& g, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof *pci);
  unsigned bus = g.bus & 0xFFU;
  unsigned dev = g.device & 0x1FU;
  unsigned fn = g.function & 0x7U;
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", g.domain & 0xFFFFU,
                bus, dev, fn);
  std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", g.domain, bus, dev, fn);
  pci->domain = g.domain;
  pci->bus = bus;
  pci->device = dev;
  pci->pciDeviceId = 0x233010DEU;  // H100 SXM5, NVIDIA's vendor id in the low half
  pci->pciSubSystemId = 0x16C110DEU;
}

// ---- Shared implementations --------------------------------------------------------------------

nvmlReturn_t DoInit(CallCounter* self) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount > 0) {
    ++s.refcount;
    return NVML_SUCCESS;
  }
  ResetCounters(self);
  Scenario scenario;
  std::string error;
  if (!LoadScenario(&scenario, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    g_scenario_failed.store(true);
    return NVML_ERROR_UNKNOWN;
  }
  g_scenario_failed.store(false);
  if (scenario.init_error != 0) return scenario.init_error;

  s.scenario = std::move(scenario);
  const std::size_t n = s.scenario.gpus.size();
  s.gpu_handles.assign(n, nvmlDevice_st{});
  s.mig_handles.clear();
  s.mig_first.assign(n, 0);
  for (unsigned i = 0; i < n; ++i) {
    s.gpu_handles[i].gpu = i;
    s.mig_first[i] = s.mig_handles.size();
    for (std::size_t m = 0; m < s.scenario.gpus[i].mig_devices.size(); ++m) {
      s.mig_handles.push_back(nvmlDevice_st{i, static_cast<int>(m)});
    }
  }
  s.lost.assign(n, 0);
  s.process_fault_pending.assign(n, s.scenario.insufficient_size_first_call ? 1 : 0);
  s.energy_mj.assign(n, 0);
  s.origin = std::chrono::steady_clock::now();
  s.epoch_us =
      static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  s.refcount = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t DoGetCount(unsigned* count) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(s.scenario.gpus.size());
  return NVML_SUCCESS;
}

nvmlReturn_t DoGetHandleByIndex(unsigned index, nvmlDevice_t* device) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= s.gpu_handles.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (IsLost(s, index, Now(s))) return NVML_ERROR_GPU_IS_LOST;
  *device = &s.gpu_handles[index];
  return NVML_SUCCESS;
}

nvmlReturn_t DoGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, pci != nullptr, kNoFeature, &c)) return r;
  FillPci(*c.gpu, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t DoGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, memory != nullptr, Feature::kMemory, &c, true)) return r;
  if (c.mig != nullptr) {
    memory->total = c.mig->memory_total_mib * kMiB;
    memory->used = c.mig->memory_used_mib * kMiB;
  } else {
    // The unversioned call counts the driver's reservation as used, like the real one.
    memory->total = c.gpu->memory_total_mib * kMiB;
    memory->used = (c.Point().memory_used_mib + c.gpu->memory_reserved_mib) * kMiB;
  }
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t DoGetClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, reasons != nullptr, Feature::kClocksEventReasons, &c)) {
    return r;
  }
  *reasons = c.Point().clocks_event_reasons;
  return NVML_SUCCESS;
}

template <typename Info>
nvmlReturn_t DoGetProcesses(nvmlDevice_t device, unsigned* count, Info* infos) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, count != nullptr, Feature::kProcesses, &c)) return r;
  std::vector<const Process*> visible;
  for (const Process& p : c.gpu->processes) {
    if (p.from <= c.now && c.now < p.until) visible.push_back(&p);
  }
  const auto needed = static_cast<unsigned>(visible.size());
  if (*count < needed || (infos == nullptr && needed > 0)) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (s.process_fault_pending[c.index] != 0) {
    s.process_fault_pending[c.index] = 0;
    *count = needed + 1;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < needed; ++i) {
    infos[i].pid = visible[i]->pid;
    infos[i].usedGpuMemory = visible[i]->used_memory_mib * kMiB;
    if constexpr (std::is_same_v<Info, nvmlProcessInfo_t>) {
      infos[i].gpuInstanceId = 0xFFFFFFFFU;
      infos[i].computeInstanceId = 0xFFFFFFFFU;
    }
  }
  *count = needed;
  return NVML_SUCCESS;
}

nvmlReturn_t DoEventWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeoutms,
                         bool full_record, EntryGuard& guard) {
  State& s = St();
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  auto it = s.event_sets.find(set);
  if (it == s.event_sets.end() || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::shared_ptr<nvmlEventSet_st> es = it->second;
  ++s.waiters;
  struct WaiterCount {
    int* n;
    ~WaiterCount() { --*n; }
  } waiter_count{&s.waiters};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
  for (;;) {
    if (!es->alive) return s.refcount == 0 ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
    const double now = Now(s);
    const auto& events = s.scenario.xid_events;
    for (std::size_t i = 0; i < events.size() && events[i].at <= now; ++i) {
      if (es->delivered[i] != 0 ||
          (es->masks[events[i].gpu] & nvmlEventTypeXidCriticalError) == 0) {
        continue;
      }
      es->delivered[i] = 1;
      data->device = &s.gpu_handles[events[i].gpu];
      data->eventType = nvmlEventTypeXidCriticalError;
      data->eventData = events[i].xid;
      if (full_record) {  // the unversioned call fills the older, shorter record only
        data->gpuInstanceId = 0xFFFFFFFFU;
        data->computeInstanceId = 0xFFFFFFFFU;
      }
      return NVML_SUCCESS;
    }
    const auto t = std::chrono::steady_clock::now();
    if (t >= deadline) return NVML_ERROR_TIMEOUT;
    // Sleep until the deadline or, on the real clock, until the next pending event is due;
    // fakeNvmlSetTime notifies the condition variable when the manual clock moves. No polling, so
    // an idle waiter costs nothing (the agent benchmark measures the process's CPU).
    auto wake = deadline;
    if (!s.manual_clock && s.scenario.time_scale > 0) {
      for (std::size_t i = 0; i < events.size(); ++i) {
        if (es->delivered[i] != 0 || events[i].at <= now ||
            (es->masks[events[i].gpu] & nvmlEventTypeXidCriticalError) == 0) {
          continue;
        }
        const auto due =
            s.origin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(events[i].at / s.scenario.time_scale));
        wake = std::min(wake, due + std::chrono::milliseconds(1));
        break;  // events are sorted by time
      }
    }
    guard.Pause();
    s.cv.wait_until(lock, wake);
    guard.Resume();
  }
}

nvmlReturn_t FindLink(State& s, nvmlDevice_t device, unsigned link, bool args_ok, Ctx* c,
                      const NvLink** out) {
  if (nvmlReturn_t r =
          Open(s, device, args_ok && link < NVML_NVLINK_MAX_LINKS, Feature::kNvlink, c)) {
    return r;
  }
  for (const NvLink& l : c->gpu->nvlinks) {
    if (l.link == link) {
      *out = &l;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

// Saturating conversion for counters computed in floating point.
unsigned long long ToUll(double v) {
  if (!(v > 0)) return 0;
  if (v >= 1.8e19) return 18'000'000'000'000'000'000ULL;
  return static_cast<unsigned long long>(v);
}

// An NVLink data counter (cumulative KiB) for one link or, with NVML_NVLINK_SCOPE_ALL_LINKS, all
// of them; the total is shared equally by the active links. Not supported on a GPU without
// active links, or one whose scenario says so.
nvmlReturn_t NvLinkThroughput(const Gpu& gpu, double now, unsigned field, unsigned scope,
                              nvmlFieldValue_t* out) {
  if (gpu.Unsupported(Feature::kNvlink) || gpu.Unsupported(Feature::kNvlinkThroughput)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  unsigned active = 0;
  bool scope_active = false;
  for (const NvLink& l : gpu.nvlinks) {
    active += l.active ? 1U : 0U;
    if (l.link == scope && l.active) scope_active = true;
  }
  if (active == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (scope != NVML_NVLINK_SCOPE_ALL_LINKS && !scope_active) return NVML_ERROR_NOT_SUPPORTED;
  const Integrated what = field == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? Integrated::kNvlinkTxKib
                                                                         : Integrated::kNvlinkRxKib;
  unsigned long long kib = ToUll(gpu.IntegralOf(what, now));
  if (scope != NVML_NVLINK_SCOPE_ALL_LINKS) kib /= active;
  out->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  out->value.ullVal = kib;
  return NVML_SUCCESS;
}

#if !FAKE_NVML_LEGACY
char g_percent[] = "%";
// The GPM metrics the fake serves, each the mean of a timeline value between two samples.
struct GpmMetricInfo {
  unsigned id;
  Integrated value;
  char* short_name;
  char* long_name;
};
char g_gr_short[] = "gr_util";
char g_gr_long[] = "Graphics utilization";
char g_sm_short[] = "sm_util";
char g_sm_long[] = "SM utilization";
char g_tensor_short[] = "any_tensor_util";
char g_tensor_long[] = "Any tensor utilization";
char g_dram_short[] = "dram_bw_util";
char g_dram_long[] = "DRAM bandwidth utilization";
const GpmMetricInfo kGpmMetrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, Integrated::kGrEngineActive, g_gr_short, g_gr_long},
    {NVML_GPM_METRIC_SM_UTIL, Integrated::kSmActivity, g_sm_short, g_sm_long},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, Integrated::kTensorActive, g_tensor_short, g_tensor_long},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, Integrated::kDramActive, g_dram_short, g_dram_long},
};
#endif

// Where a vGPU instance id lives: its GPU and its entry, or nullptr.
const VgpuInstance* FindVgpu(const Scenario& scenario, unsigned id, unsigned* gpu) {
  for (unsigned g = 0; g < scenario.gpus.size(); ++g) {
    for (const VgpuInstance& v : scenario.gpus[g].vgpu_instances) {
      if (v.id == id) {
        *gpu = g;
        return &v;
      }
    }
  }
  return nullptr;
}

nvmlReturn_t DoCodecUtilization(nvmlDevice_t device, unsigned* utilization, unsigned* period_us,
                                bool encoder) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = utilization != nullptr && period_us != nullptr;
  if (nvmlReturn_t r =
          Open(s, device, args_ok, encoder ? Feature::kEncoder : Feature::kDecoder, &c)) {
    return r;
  }
  *utilization = encoder ? c.Point().encoder_util : c.Point().decoder_util;
  *period_us = 167'000;  // what current drivers report for both engines
  return NVML_SUCCESS;
}

const char* ErrorText(nvmlReturn_t r) {
  switch (r) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 5:
      return "Already Initialized";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 8:
      return "Insufficient External Power";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 11:
      return "Interrupt Request Issue";
    case 12:
      return "NVML Shared Library Not Found";
    case 13:
      return "Function Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires reset";
    case 17:
      return "The operating system has blocked the request";
    case 18:
      return "RM has detected an NVML/RM version mismatch";
    case 19:
      return "In use by another client";
    case 20:
      return "Insufficient Memory";
    case 21:
      return "No data";
    case 25:
      return "Argument version mismatch";
    case 26:
      return "Deprecated";
    case 27:
      return "Not ready";
    case 999:
      return g_scenario_failed.load()
                 ? "Unknown Error (fake-nvml: the scenario could not be loaded; see stderr)"
                 : "Unknown Error";
    default:
      return "Unknown Error";
  }
}

}  // namespace
}  // namespace fake_nvml

using fake_nvml::Ctx;
using fake_nvml::Feature;
using fake_nvml::kNoFeature;
using fake_nvml::Open;
using fake_nvml::St;

// ---- Init, shutdown, system -----------------------------------------------------------------

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  FAKE_ENTRY();
  return fake_nvml::DoInit(fake_counter);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit() {
  FAKE_ENTRY();
  return fake_nvml::DoInit(fake_counter);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (--s.refcount > 0) return NVML_SUCCESS;
  fake_nvml::Reset(s);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  FAKE_ENTRY();
  return fake_nvml::ErrorText(result);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return fake_nvml::CopyString(s.scenario.driver_version, version, length);
}

// ---- Enumeration and identity -------------------------------------------------------------------

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  FAKE_ENTRY();
  return fake_nvml::DoGetCount(deviceCount);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  FAKE_ENTRY();
  return fake_nvml::DoGetHandleByIndex(index, device);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  FAKE_ENTRY();
  return fake_nvml::DoGetCount(deviceCount);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  FAKE_ENTRY();
  return fake_nvml::DoGetHandleByIndex(index, device);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, name != nullptr, kNoFeature, &c, true)) return r;
  return fake_nvml::CopyString(c.mig != nullptr ? c.mig->name : c.gpu->name, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, uuid != nullptr, kNoFeature, &c, true)) return r;
  return fake_nvml::CopyString(c.mig != nullptr ? c.mig->uuid : c.gpu->uuid, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, minor != nullptr, kNoFeature, &c)) return r;
  *minor = c.gpu->minor_number;
  return NVML_SUCCESS;
}

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_ENTRY();
  return fake_nvml::DoGetPciInfo(device, pci);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_ENTRY();
  return fake_nvml::DoGetPciInfo(device, pci);
}

// ---- Readings ----------------------------------------------------------------------------------

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, utilization != nullptr, Feature::kUtilization, &c)) {
    return r;
  }
  utilization->gpu = c.Point().gpu_util;
  utilization->memory = c.Point().mem_util;
  return NVML_SUCCESS;
}

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                         nvmlMemory_v2_t* memory) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, memory != nullptr, Feature::kMemory, &c, true)) return r;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (c.mig != nullptr) {
    memory->total = c.mig->memory_total_mib * fake_nvml::kMiB;
    memory->reserved = 0;
    memory->used = c.mig->memory_used_mib * fake_nvml::kMiB;
  } else {
    memory->total = c.gpu->memory_total_mib * fake_nvml::kMiB;
    memory->reserved = c.gpu->memory_reserved_mib * fake_nvml::kMiB;
    memory->used = c.Point().memory_used_mib * fake_nvml::kMiB;
  }
  memory->free = memory->total - memory->reserved - memory->used;
  return NVML_SUCCESS;
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_ENTRY();
  return fake_nvml::DoGetMemoryInfo(device, memory);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType,
                                                       unsigned int* temp) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = temp != nullptr && sensorType == NVML_TEMPERATURE_GPU;
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kTemperature, &c)) return r;
  *temp = c.Point().temperature_c;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                       nvmlFieldValue_t* values) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = valuesCount >= 0 && (values != nullptr || valuesCount == 0);
  if (nvmlReturn_t r = Open(s, device, args_ok, kNoFeature, &c)) return r;
  const auto timestamp = static_cast<long long>(s.epoch_us) + static_cast<long long>(c.now * 1e6);
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = timestamp;
    v.latencyUsec = 0;
    if (v.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ||
        v.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX) {
      v.nvmlReturn = fake_nvml::NvLinkThroughput(*c.gpu, c.now, v.fieldId, v.scopeId, &v);
      continue;
    }
    if (v.fieldId != NVML_FI_DEV_MEMORY_TEMP || c.gpu->Unsupported(Feature::kMemoryTemperature)) {
      v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v.value.uiVal = c.Point().memory_temperature_c;
    v.nvmlReturn = NVML_SUCCESS;
  }
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, power != nullptr, Feature::kPower, &c)) return r;
  *power = static_cast<unsigned>(std::llround(c.Point().power_w * 1000.0));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                              unsigned int* limit) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, limit != nullptr, Feature::kPower, &c)) return r;
  *limit = static_cast<unsigned>(std::llround(c.gpu->power_limit_w * 1000.0));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                  unsigned long long* energy) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, energy != nullptr, Feature::kEnergy, &c)) return r;
  const unsigned long long mj = fake_nvml::ToUll(c.gpu->EnergyJoules(c.now) * 1000.0);
  unsigned long long& last = s.energy_mj[c.index];
  last = std::max(last, mj);
  *energy = last;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type,
                                                     unsigned int* clock) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = clock != nullptr && type <= 3;  // graphics, SM, memory, video
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kClocks, &c)) return r;
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      *clock = c.Point().sm_clock_mhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
      *clock = c.Point().mem_clock_mhz;
      return NVML_SUCCESS;
    default:
      return NVML_ERROR_NOT_SUPPORTED;
  }
}

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                     unsigned long long* reasons) {
  FAKE_ENTRY();
  return fake_nvml::DoGetClocksEventReasons(device, reasons);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* reasons) {
  FAKE_ENTRY();
  return fake_nvml::DoGetClocksEventReasons(device, reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                                          unsigned int* value) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = value != nullptr &&
                 (counter == NVML_PCIE_UTIL_TX_BYTES || counter == NVML_PCIE_UTIL_RX_BYTES);
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kPcie, &c)) return r;
  *value = counter == NVML_PCIE_UTIL_TX_BYTES ? c.Point().pcie_tx_kbps : c.Point().pcie_rx_kbps;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device,
                                                             unsigned int* value) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, value != nullptr, Feature::kPcie, &c)) return r;
  *value = c.Point().pcie_replay;
  return NVML_SUCCESS;
}

// ---- Memory errors ----------------------------------------------------------------------------

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                          unsigned int errorType,
                                                          unsigned int counterType,
                                                          unsigned long long* eccCounts) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = eccCounts != nullptr &&
                 (errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ||
                  errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) &&
                 (counterType == NVML_VOLATILE_ECC || counterType == NVML_AGGREGATE_ECC);
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kEcc, &c)) return r;
  *eccCounts = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? c.Point().ecc_corrected
                                                             : c.Point().ecc_uncorrected;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, unsigned int cause,
                                                        unsigned int* pageCount,
                                                        unsigned long long* addresses) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = pageCount != nullptr &&
                 (cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS ||
                  cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR) &&
                 (addresses != nullptr || *pageCount == 0);
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kRetiredPages, &c)) return r;
  const unsigned needed = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
                              ? c.gpu->retired_double_bit
                              : c.gpu->retired_single_bit;
  if (*pageCount < needed) {
    *pageCount = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < needed; ++i) {  // made-up, distinct page addresses
    addresses[i] = 0x100000000ULL * (cause + 1ULL) + 0x1000ULL * (c.index * 4096ULL + i);
  }
  *pageCount = needed;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                        unsigned int* uncRows,
                                                        unsigned int* isPending,
                                                        unsigned int* failureOccurred) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = corrRows != nullptr && uncRows != nullptr && isPending != nullptr &&
                 failureOccurred != nullptr;
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kRemappedRows, &c)) return r;
  *corrRows = c.gpu->remapped_correctable;
  *uncRows = c.gpu->remapped_uncorrectable;
  *isPending = c.gpu->remapped_pending;
  *failureOccurred = c.gpu->remapped_failure;
  return NVML_SUCCESS;
}

// ---- Processes ----------------------------------------------------------------------------------

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  FAKE_ENTRY();
  return fake_nvml::DoGetProcesses(device, infoCount, infos);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  FAKE_ENTRY();
  return fake_nvml::DoGetProcesses(device, infoCount, infos);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                   unsigned int* infoCount,
                                                                   nvmlProcessInfo_v1_t* infos) {
  FAKE_ENTRY();
  return fake_nvml::DoGetProcesses(device, infoCount, infos);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
    unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r =
          Open(s, device, processSamplesCount != nullptr, Feature::kProcessUtilization, &c)) {
    return r;
  }
  // One sample per process per whole scenario second in [from, until), up to now, within the
  // last kProcessSampleWindowS seconds, newer than lastSeenTimeStamp.
  std::vector<nvmlProcessUtilizationSample_t> samples;
  if (c.now >= 0) {
    const auto last_second = static_cast<long long>(std::floor(c.now));
    long long first_second =
        std::max(0LL, last_second - static_cast<long long>(fake_nvml::kProcessSampleWindowS) + 1);
    if (lastSeenTimeStamp >= s.epoch_us) {
      first_second =
          std::max(first_second,
                   static_cast<long long>((lastSeenTimeStamp - s.epoch_us) / 1'000'000ULL) + 1);
    }
    for (const fake_nvml::Process& p : c.gpu->processes) {
      long long lo = std::max(first_second,
                              static_cast<long long>(std::ceil(std::clamp(p.from, -1e13, 1e13))));
      long long hi = last_second;
      hi = std::min(hi, static_cast<long long>(std::ceil(std::clamp(p.until, -1e13, 1e13))) - 1);
      for (long long sec = lo; sec <= hi; ++sec) {
        nvmlProcessUtilizationSample_t smp{};
        smp.pid = p.pid;
        smp.timeStamp = s.epoch_us + static_cast<unsigned long long>(sec) * 1'000'000ULL;
        smp.smUtil = p.sm_util;
        smp.memUtil = p.mem_util;
        samples.push_back(smp);
      }
    }
    std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
      return a.timeStamp != b.timeStamp ? a.timeStamp < b.timeStamp : a.pid < b.pid;
    });
  }
  const auto n = static_cast<unsigned>(samples.size());
  if (n == 0) {
    *processSamplesCount = 0;
    return NVML_ERROR_NOT_FOUND;
  }
  if (utilization == nullptr || *processSamplesCount < n) {
    *processSamplesCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(samples.begin(), samples.end(), utilization);
  *processSamplesCount = n;
  return NVML_SUCCESS;
}

// ---- Video engines and vGPU --------------------------------------------------------------------

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device,
                                                              unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  FAKE_ENTRY();
  return fake_nvml::DoCodecUtilization(device, utilization, samplingPeriodUs, true);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device,
                                                              unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  FAKE_ENTRY();
  return fake_nvml::DoCodecUtilization(device, utilization, samplingPeriodUs, false);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetActiveVgpus(nvmlDevice_t device, unsigned int* vgpuCount,
                                                       nvmlVgpuInstance_t* vgpuInstances) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, vgpuCount != nullptr, Feature::kVgpu, &c)) return r;
  // A GPU without vGPU instances has no vGPU manager here: the real driver says NOT_SUPPORTED.
  if (c.gpu->vgpu_instances.empty()) return NVML_ERROR_NOT_SUPPORTED;
  const auto needed = static_cast<unsigned>(c.gpu->vgpu_instances.size());
  if (*vgpuCount < needed || vgpuInstances == nullptr) {
    *vgpuCount = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < needed; ++i) vgpuInstances[i] = c.gpu->vgpu_instances[i].id;
  *vgpuCount = needed;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlVgpuInstanceGetLicenseStatus(nvmlVgpuInstance_t vgpuInstance,
                                                               unsigned int* licensed) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  unsigned gpu = 0;
  const fake_nvml::VgpuInstance* v = fake_nvml::FindVgpu(s.scenario, vgpuInstance, &gpu);
  if (v == nullptr || licensed == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (fake_nvml::IsLost(s, gpu, fake_nvml::Now(s))) return NVML_ERROR_GPU_IS_LOST;
  *licensed = v->licensed ? 1U : 0U;
  return NVML_SUCCESS;
}

// ---- MIG
// ------------------------------------------------------------------------------------------

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                   unsigned int* pendingMode) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = currentMode != nullptr && pendingMode != nullptr;
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kMig, &c)) return r;
  *currentMode = c.gpu->mig_mode;
  *pendingMode = c.gpu->mig_mode;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                             unsigned int* count) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, count != nullptr, Feature::kMig, &c)) return r;
  *count = std::max(fake_nvml::kMaxMigDevices, static_cast<unsigned>(c.gpu->mig_devices.size()));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                  unsigned int index,
                                                                  nvmlDevice_t* migDevice) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, migDevice != nullptr, Feature::kMig, &c)) return r;
  const std::size_t n = c.gpu->mig_devices.size();
  if (index >= std::max<std::size_t>(fake_nvml::kMaxMigDevices, n)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (index >= n) return NVML_ERROR_NOT_FOUND;
  *migDevice = &s.mig_handles[s.mig_first[c.index] + index];
  return NVML_SUCCESS;
}

// ---- Topology and NVLink ------------------------------------------------------------------------

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1,
                                                                  nvmlDevice_t device2,
                                                                  unsigned int* pathInfo) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c1;
  Ctx c2;
  if (nvmlReturn_t r = Open(s, device1, pathInfo != nullptr, kNoFeature, &c1)) return r;
  if (nvmlReturn_t r = Open(s, device2, true, kNoFeature, &c2)) return r;
  *pathInfo = s.scenario.topology[c1.index][c2.index];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                       unsigned int* isActive) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  const fake_nvml::NvLink* l = nullptr;
  if (nvmlReturn_t r = fake_nvml::FindLink(s, device, link, isActive != nullptr, &c, &l)) return r;
  *isActive = l->active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                  unsigned int link,
                                                                  nvmlPciInfo_t* pci) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  const fake_nvml::NvLink* l = nullptr;
  if (nvmlReturn_t r = fake_nvml::FindLink(s, device, link, pci != nullptr, &c, &l)) return r;
  if (l->peer_switch >= 0) {
    // NVSwitches live in PCI domain 1 here, apart from every GPU of a scenario's defaults.
    fake_nvml::Gpu nvswitch;
    nvswitch.domain = 1;
    nvswitch.bus = static_cast<unsigned>(l->peer_switch);
    fake_nvml::FillPci(nvswitch, pci);
    return NVML_SUCCESS;
  }
  if (l->peer_gpu < 0) return NVML_ERROR_NOT_SUPPORTED;
  fake_nvml::FillPci(s.scenario.gpus[static_cast<std::size_t>(l->peer_gpu)], pci);
  return NVML_SUCCESS;
}

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device,
                                                                  unsigned int link,
                                                                  unsigned int* type) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  const fake_nvml::NvLink* l = nullptr;
  if (nvmlReturn_t r = fake_nvml::FindLink(s, device, link, type != nullptr, &c, &l)) return r;
  *type = l->peer_switch >= 0 ? NVML_NVLINK_DEVICE_TYPE_SWITCH
          : l->peer_gpu >= 0  ? NVML_NVLINK_DEVICE_TYPE_GPU
                              : NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  return NVML_SUCCESS;
}
#endif

// ---- Events -------------------------------------------------------------------------------------

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto es = std::make_shared<nvmlEventSet_st>();
  es->masks.assign(s.scenario.gpus.size(), 0);
  es->delivered.assign(s.scenario.xid_events.size(), 0);
  *set = es.get();
  s.event_sets.emplace(es.get(), std::move(es));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                       unsigned long long eventTypes,
                                                       nvmlEventSet_t set) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  auto it = s.event_sets.find(set);
  bool args_ok = it != s.event_sets.end();
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kEvents, &c)) return r;
  constexpr unsigned long long kKnown = nvmlEventTypeSingleBitEccError |
                                        nvmlEventTypeDoubleBitEccError |
                                        nvmlEventTypeXidCriticalError;
  if ((eventTypes & ~kKnown) != 0) return NVML_ERROR_NOT_SUPPORTED;
  it->second->masks[c.index] |= eventTypes;
  return NVML_SUCCESS;
}

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeoutms) {
  FAKE_ENTRY();
  return fake_nvml::DoEventWait(set, data, timeoutms, true, fake_guard);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                                               unsigned int timeoutms) {
  FAKE_ENTRY();
  return fake_nvml::DoEventWait(set, data, timeoutms, false, fake_guard);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  auto it = s.event_sets.find(set);
  if (it == s.event_sets.end()) return NVML_ERROR_INVALID_ARGUMENT;
  it->second->alive = false;
  s.event_sets.erase(it);
  s.cv.notify_all();
  return NVML_SUCCESS;
}

// ---- GPM
// ------------------------------------------------------------------------------------------

#if !FAKE_NVML_LEGACY
FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                        nvmlGpmSupport_t* gpmSupport) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  if (nvmlReturn_t r = Open(s, device, gpmSupport != nullptr, Feature::kGpm, &c)) return r;
  if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  gpmSupport->isSupportedDevice = c.gpu->gpm_supported ? 1U : 0U;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto sample = std::make_unique<nvmlGpmSample_st>();
  *gpmSample = sample.get();
  s.gpm_samples.emplace(sample.get(), std::move(sample));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (s.gpm_samples.erase(gpmSample) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  Ctx c;
  bool args_ok = s.gpm_samples.count(gpmSample) != 0;
  if (nvmlReturn_t r = Open(s, device, args_ok, Feature::kGpm, &c)) return r;
  if (!c.gpu->gpm_supported) return NVML_ERROR_NOT_SUPPORTED;
  gpmSample->filled = true;
  gpmSample->gpu = c.index;
  gpmSample->t = c.now;
  for (std::size_t k = 0; k < fake_nvml::kIntegratedCount; ++k) {
    gpmSample->integrals[k] = c.gpu->IntegralOf(static_cast<fake_nvml::Integrated>(k), c.now);
  }
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  FAKE_ENTRY();
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (metricsGet == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  const nvmlGpmSample_st* a = metricsGet->sample1;
  const nvmlGpmSample_st* b = metricsGet->sample2;
  if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX ||
      s.gpm_samples.count(metricsGet->sample1) == 0 ||
      s.gpm_samples.count(metricsGet->sample2) == 0 || !a->filled || !b->filled ||
      a->gpu != b->gpu) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const double now = fake_nvml::Now(s);
  if (fake_nvml::IsLost(s, a->gpu, now)) return NVML_ERROR_GPU_IS_LOST;
  const fake_nvml::Gpu& gpu = s.scenario.gpus[a->gpu];
  if (b->t < a->t) std::swap(a, b);
  const double dt = b->t - a->t;
  for (unsigned i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& m = metricsGet->metrics[i];
    const fake_nvml::GpmMetricInfo* info = nullptr;
    for (const fake_nvml::GpmMetricInfo& known : fake_nvml::kGpmMetrics) {
      if (known.id == m.metricId) info = &known;
    }
    if (info == nullptr) {
      m.nvmlReturn =
          m.metricId < NVML_GPM_METRIC_MAX ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
      m.value = 0;
      m.metricInfo.shortName = nullptr;
      m.metricInfo.longName = nullptr;
      m.metricInfo.unit = nullptr;
      continue;
    }
    const auto k = static_cast<std::size_t>(info->value);
    m.nvmlReturn = NVML_SUCCESS;
    m.value = dt > 0 ? (b->integrals[k] - a->integrals[k]) / dt
                     : fake_nvml::IntegratedValue(gpu.At(b->t), info->value);
    m.metricInfo.shortName = info->short_name;
    m.metricInfo.longName = info->long_name;
    m.metricInfo.unit = fake_nvml::g_percent;
  }
  return NVML_SUCCESS;
}
#endif

// ---- Test-only hooks (not NVML) ---------------------------------------------------------------

FAKE_NVML_EXPORT void fakeNvmlSetTime(double seconds) {
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  s.manual_clock = true;
  // Bounded (about 30,000 years) so that every derived counter stays representable.
  s.manual_t = std::isnan(seconds) ? 0.0 : std::clamp(seconds, -1e12, 1e12);
  s.cv.notify_all();
}

FAKE_NVML_EXPORT void fakeNvmlUseRealTime() {
  auto& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  s.manual_clock = false;
  s.cv.notify_all();
}

FAKE_NVML_EXPORT unsigned long long fakeNvmlCallCount(const char* symbol) {
  if (symbol == nullptr) return 0;
  std::size_t n = fake_nvml::g_counter_count.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    if (std::strcmp(fake_nvml::g_counters[i].name, symbol) == 0) {
      return fake_nvml::g_counters[i].count.load(std::memory_order_relaxed);
    }
  }
  return 0;
}

FAKE_NVML_EXPORT unsigned long long fakeNvmlSelfCpuNs() {
  return fake_nvml::g_self_cpu_ns.load(std::memory_order_relaxed);
}

// ---- Every entry point has exactly the signature gpufleet calls it through ----------------------

namespace api = gpufleet::gpu;
template <typename Fn, typename Expected>
constexpr bool kSame = std::is_same_v<Fn, Expected>;
static_assert(kSame<decltype(&nvmlInit), api::NvmlInitFn>);
static_assert(kSame<decltype(&nvmlShutdown), api::NvmlShutdownFn>);
static_assert(kSame<decltype(&nvmlErrorString), api::NvmlErrorStringFn>);
static_assert(kSame<decltype(&nvmlSystemGetDriverVersion), api::NvmlSystemGetDriverVersionFn>);
static_assert(kSame<decltype(&nvmlDeviceGetCount), api::NvmlDeviceGetCountFn>);
static_assert(kSame<decltype(&nvmlDeviceGetHandleByIndex), api::NvmlDeviceGetHandleByIndexFn>);
static_assert(kSame<decltype(&nvmlDeviceGetName), api::NvmlDeviceGetStringFn>);
static_assert(kSame<decltype(&nvmlDeviceGetUUID), api::NvmlDeviceGetStringFn>);
static_assert(kSame<decltype(&nvmlDeviceGetPciInfo_v2), api::NvmlDeviceGetPciInfoFn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetUtilizationRates), api::NvmlDeviceGetUtilizationRatesFn>);
static_assert(kSame<decltype(&nvmlDeviceGetMemoryInfo), api::NvmlDeviceGetMemoryInfoFn>);
static_assert(kSame<decltype(&nvmlDeviceGetTemperature), api::NvmlDeviceGetTemperatureFn>);
static_assert(kSame<decltype(&nvmlDeviceGetFieldValues), api::NvmlDeviceGetFieldValuesFn>);
static_assert(kSame<decltype(&nvmlDeviceGetPowerUsage), api::NvmlDeviceGetUintFn>);
static_assert(kSame<decltype(&nvmlDeviceGetMinorNumber), api::NvmlDeviceGetUintFn>);
static_assert(kSame<decltype(&nvmlDeviceGetEnforcedPowerLimit), api::NvmlDeviceGetUintFn>);
static_assert(kSame<decltype(&nvmlDeviceGetTotalEnergyConsumption), api::NvmlDeviceGetUllFn>);
static_assert(kSame<decltype(&nvmlDeviceGetClockInfo), api::NvmlDeviceGetClockInfoFn>);
static_assert(kSame<decltype(&nvmlDeviceGetCurrentClocksThrottleReasons), api::NvmlDeviceGetUllFn>);
static_assert(kSame<decltype(&nvmlDeviceGetPcieThroughput), api::NvmlDeviceGetPcieThroughputFn>);
static_assert(kSame<decltype(&nvmlDeviceGetPcieReplayCounter), api::NvmlDeviceGetUintFn>);
static_assert(kSame<decltype(&nvmlDeviceGetTotalEccErrors), api::NvmlDeviceGetTotalEccErrorsFn>);
static_assert(kSame<decltype(&nvmlDeviceGetRetiredPages), api::NvmlDeviceGetRetiredPagesFn>);
static_assert(kSame<decltype(&nvmlDeviceGetRemappedRows), api::NvmlDeviceGetRemappedRowsFn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetComputeRunningProcesses), api::NvmlDeviceGetProcessesV1Fn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetProcessUtilization), api::NvmlDeviceGetProcessUtilizationFn>);
static_assert(kSame<decltype(&nvmlDeviceGetMigMode), api::NvmlDeviceGetMigModeFn>);
static_assert(kSame<decltype(&nvmlDeviceGetMaxMigDeviceCount), api::NvmlDeviceGetUintFn>);
static_assert(kSame<decltype(&nvmlDeviceGetMigDeviceHandleByIndex),
                    api::NvmlDeviceGetMigDeviceHandleByIndexFn>);
static_assert(kSame<decltype(&nvmlDeviceGetTopologyCommonAncestor),
                    api::NvmlDeviceGetTopologyCommonAncestorFn>);
static_assert(kSame<decltype(&nvmlDeviceGetNvLinkState), api::NvmlDeviceGetNvLinkStateFn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetNvLinkRemotePciInfo_v2), api::NvmlDeviceGetNvLinkRemotePciInfoFn>);
static_assert(kSame<decltype(&nvmlEventSetCreate), api::NvmlEventSetCreateFn>);
static_assert(kSame<decltype(&nvmlDeviceRegisterEvents), api::NvmlDeviceRegisterEventsFn>);
static_assert(kSame<decltype(&nvmlEventSetWait), api::NvmlEventSetWaitFn>);
static_assert(kSame<decltype(&nvmlEventSetFree), api::NvmlEventSetFreeFn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetEncoderUtilization), api::NvmlDeviceGetCodecUtilizationFn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetDecoderUtilization), api::NvmlDeviceGetCodecUtilizationFn>);
static_assert(kSame<decltype(&nvmlDeviceGetActiveVgpus), api::NvmlDeviceGetActiveVgpusFn>);
static_assert(
    kSame<decltype(&nvmlVgpuInstanceGetLicenseStatus), api::NvmlVgpuInstanceGetLicenseStatusFn>);
#if !FAKE_NVML_LEGACY
static_assert(kSame<decltype(&nvmlInit_v2), api::NvmlInitFn>);
static_assert(kSame<decltype(&nvmlDeviceGetCount_v2), api::NvmlDeviceGetCountFn>);
static_assert(kSame<decltype(&nvmlDeviceGetHandleByIndex_v2), api::NvmlDeviceGetHandleByIndexFn>);
static_assert(kSame<decltype(&nvmlDeviceGetPciInfo_v3), api::NvmlDeviceGetPciInfoFn>);
static_assert(kSame<decltype(&nvmlDeviceGetMemoryInfo_v2), api::NvmlDeviceGetMemoryInfoV2Fn>);
static_assert(kSame<decltype(&nvmlDeviceGetCurrentClocksEventReasons), api::NvmlDeviceGetUllFn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetComputeRunningProcesses_v3), api::NvmlDeviceGetProcessesFn>);
static_assert(
    kSame<decltype(&nvmlDeviceGetComputeRunningProcesses_v2), api::NvmlDeviceGetProcessesFn>);
static_assert(kSame<decltype(&nvmlEventSetWait_v2), api::NvmlEventSetWaitFn>);
static_assert(kSame<decltype(&nvmlGpmQueryDeviceSupport), api::NvmlGpmQueryDeviceSupportFn>);
static_assert(kSame<decltype(&nvmlGpmSampleAlloc), api::NvmlGpmSampleAllocFn>);
static_assert(kSame<decltype(&nvmlGpmSampleFree), api::NvmlGpmSampleFreeFn>);
static_assert(kSame<decltype(&nvmlGpmSampleGet), api::NvmlGpmSampleGetFn>);
static_assert(kSame<decltype(&nvmlGpmMetricsGet), api::NvmlGpmMetricsGetFn>);
static_assert(kSame<decltype(&nvmlDeviceGetNvLinkRemoteDeviceType),
                    api::NvmlDeviceGetNvLinkRemoteDeviceTypeFn>);
#endif
