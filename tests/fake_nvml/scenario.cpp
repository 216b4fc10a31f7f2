#include "scenario.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace fake_nvml {
namespace {

using nlohmann::json;

// Two GPUs with a small constant load, used when $FAKE_NVML_SCENARIO is unset.
constexpr std::string_view kDefaultScenario = R"({
  "driver_version": "550.54.15",
  "gpus": [
    {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "memory_reserved_mib": 512,
     "power_limit_w": 700, "gpm_supported": true,
     "timeline": [{"t": 0, "gpu_util": 5, "mem_util": 2, "memory_used_mib": 1024,
                   "temperature_c": 35, "memory_temperature_c": 40, "power_w": 90,
                   "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "clocks_event_reasons": 0,
                   "pcie_tx_kbps": 1000, "pcie_rx_kbps": 2000, "sm_activity": 4.0}],
     "processes": [{"pid": 1000, "used_memory_mib": 1024, "sm_util": 5, "mem_util": 2}]},
    {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "memory_reserved_mib": 512,
     "power_limit_w": 700, "gpm_supported": true,
     "timeline": [{"t": 0, "gpu_util": 5, "mem_util": 2, "memory_used_mib": 1024,
                   "temperature_c": 35, "memory_temperature_c": 40, "power_w": 90,
                   "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "clocks_event_reasons": 0,
                   "pcie_tx_kbps": 1000, "pcie_rx_kbps": 2000, "sm_activity": 4.0}],
     "processes": [{"pid": 1001, "used_memory_mib": 1024, "sm_util": 5, "mem_util": 2}]}
  ]
})";

constexpr std::array<std::string_view, kFeatureCount> kFeatureNames = {
    "power",         "temperature", "memory_temperature",
    "energy",        "clocks",      "clocks_event_reasons",
    "pcie",          "ecc",         "retired_pages",
    "remapped_rows", "processes",   "process_utilization",
    "mig",           "nvlink",      "gpm",
    "utilization",   "memory",      "events",
    "encoder",       "decoder",     "nvlink_throughput",
    "vgpu"};

constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS

[[noreturn]] void Fail(const std::string& path, const std::string& message) {
  throw ScenarioError((path.empty() ? std::string("(root)") : path) + ": " + message);
}

std::string Key(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string Index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Requires an object whose keys all appear in `allowed`.
void CheckObject(const json& j, const std::string& path,
                 std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) Fail(path, "expected an object");
  for (const auto& item : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      std::string list;
      for (std::string_view a : allowed) {
        if (!list.empty()) list += ", ";
        list += a;
      }
      Fail(Key(path, item.key()), "unknown key (expected one of: " + list + ")");
    }
  }
}

const json* Find(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const json& Require(const json& obj, const std::string& path, const char* key) {
  const json* v = Find(obj, key);
  if (v == nullptr) Fail(Key(path, key), "required key is missing");
  return *v;
}

double Number(const json& j, const std::string& path) {
  if (!j.is_number()) Fail(path, "expected a number");
  return j.get<double>();
}

double NumberIn(const json& j, const std::string& path, double lo, double hi) {
  double v = Number(j, path);
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << "expected a number in [" << lo << ", " << hi << "], got " << v;
    Fail(path, os.str());
  }
  return v;
}

unsigned long long UInt(const json& j, const std::string& path,
                        unsigned long long max = std::numeric_limits<unsigned long long>::max()) {
  unsigned long long v = 0;
  if (j.is_number_unsigned()) {
    v = j.get<unsigned long long>();
  } else if (j.is_number_integer()) {
    Fail(path, "expected a non-negative integer, got " + j.dump());
  } else if (j.is_number_float()) {
    double d = j.get<double>();
    if (d < 0 || d != std::floor(d) || d > 9.007199254740992e15) {
      Fail(path, "expected a non-negative integer, got " + j.dump());
    }
    v = static_cast<unsigned long long>(d);
  } else {
    Fail(path, "expected a non-negative integer");
  }
  if (v > max) Fail(path, "expected at most " + std::to_string(max) + ", got " + std::to_string(v));
  return v;
}

unsigned UInt32(const json& j, const std::string& path, unsigned max = 0xFFFFFFFFU) {
  return static_cast<unsigned>(UInt(j, path, max));
}

bool Bool(const json& j, const std::string& path) {
  if (!j.is_boolean()) Fail(path, "expected true or false");
  return j.get<bool>();
}

// 0/1 or false/true.
unsigned Flag(const json& j, const std::string& path) {
  if (j.is_boolean()) return j.get<bool>() ? 1U : 0U;
  return UInt32(j, path, 1);
}

std::string String(const json& j, const std::string& path, bool allow_empty = false) {
  if (!j.is_string()) Fail(path, "expected a string");
  std::string s = j.get<std::string>();
  if (!allow_empty && s.empty()) Fail(path, "expected a non-empty string");
  return s;
}

const json& Array(const json& j, const std::string& path) {
  if (!j.is_array()) Fail(path, "expected an array");
  return j;
}

std::uint64_t SplitMix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

// A deterministic UUID in NVIDIA's textual form, e.g. "GPU-1a2b3c4d-....".
std::string DerivedUuid(const char* prefix, std::uint64_t seed) {
  std::uint64_t hi = SplitMix(seed);
  std::uint64_t lo = SplitMix(hi ^ seed);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%08x-%04x-%04x-%04x-%012llx", prefix,
                static_cast<unsigned>(hi >> 32U), static_cast<unsigned>((hi >> 16U) & 0xFFFFU),
                static_cast<unsigned>(hi & 0xFFFFU), static_cast<unsigned>(lo >> 48U),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

bool ParseHex(std::string_view s, std::size_t min_digits, std::size_t max_digits, unsigned* out) {
  if (s.size() < min_digits || s.size() > max_digits) return false;
  unsigned v = 0;
  for (char c : s) {
    unsigned d = 0;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return false;
    }
    v = v * 16U + d;
  }
  *out = v;
  return true;
}

// "DDDDDDDD:BB:DD.F" (or a 4-digit domain).
void ParseBusId(const std::string& s, const std::string& path, Gpu* gpu) {
  std::size_t c1 = s.find(':');
  std::size_t c2 = c1 == std::string::npos ? c1 : s.find(':', c1 + 1);
  std::size_t dot = c2 == std::string::npos ? c2 : s.find('.', c2 + 1);
  std::string_view v(s);
  if (dot == std::string::npos || !ParseHex(v.substr(0, c1), 4, 8, &gpu->domain) ||
      !ParseHex(v.substr(c1 + 1, c2 - c1 - 1), 2, 2, &gpu->bus) ||
      !ParseHex(v.substr(c2 + 1, dot - c2 - 1), 2, 2, &gpu->device) ||
      !ParseHex(v.substr(dot + 1), 1, 1, &gpu->function) || gpu->device > 0x1F ||
      gpu->function > 7) {
    Fail(path, "expected a PCI bus id like \"00000000:18:00.0\", got \"" + s + "\"");
  }
}

void ParseTimeline(const json& j, const std::string& path, Gpu* gpu) {
  Array(j, path);
  if (j.empty()) Fail(path, "expected at least one entry (with \"t\": 0)");
  TimelinePoint prev;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    std::string p = Index(path, i);
    CheckObject(e, p,
                {"t",
                 "gpu_util",
                 "mem_util",
                 "memory_used_mib",
                 "temperature_c",
                 "memory_temperature_c",
                 "power_w",
                 "sm_clock_mhz",
                 "mem_clock_mhz",
                 "clocks_event_reasons",
                 "pcie_tx_kbps",
                 "pcie_rx_kbps",
                 "pcie_replay",
                 "ecc_corrected",
                 "ecc_uncorrected",
                 "sm_activity",
                 "gr_engine_active",
                 "tensor_active",
                 "dram_active",
                 "encoder_util",
                 "decoder_util",
                 "nvlink_tx_kibps",
                 "nvlink_rx_kibps"});
    TimelinePoint pt = prev;
    pt.t = Number(Require(e, p, "t"), Key(p, "t"));
    if (i == 0 && pt.t != 0) Fail(Key(p, "t"), "the first timeline entry must have t = 0");
    if (i > 0 && pt.t <= prev.t) Fail(Key(p, "t"), "timeline times must be strictly increasing");
    auto u32 = [&](const char* key, unsigned* dst, unsigned max) {
      if (const json* v = Find(e, key)) *dst = UInt32(*v, Key(p, key), max);
    };
    auto u64 = [&](const char* key, unsigned long long* dst) {
      if (const json* v = Find(e, key)) *dst = UInt(*v, Key(p, key));
    };
    u32("gpu_util", &pt.gpu_util, 100);
    u32("mem_util", &pt.mem_util, 100);
    u64("memory_used_mib", &pt.memory_used_mib);
    u32("temperature_c", &pt.temperature_c, 1000);
    u32("memory_temperature_c", &pt.memory_temperature_c, 1000);
    if (const json* v = Find(e, "power_w")) pt.power_w = NumberIn(*v, Key(p, "power_w"), 0, 1e6);
    u32("sm_clock_mhz", &pt.sm_clock_mhz, 0xFFFFFFFFU);
    u32("mem_clock_mhz", &pt.mem_clock_mhz, 0xFFFFFFFFU);
    u64("clocks_event_reasons", &pt.clocks_event_reasons);
    u32("pcie_tx_kbps", &pt.pcie_tx_kbps, 0xFFFFFFFFU);
    u32("pcie_rx_kbps", &pt.pcie_rx_kbps, 0xFFFFFFFFU);
    u32("pcie_replay", &pt.pcie_replay, 0xFFFFFFFFU);
    u64("ecc_corrected", &pt.ecc_corrected);
    u64("ecc_uncorrected", &pt.ecc_uncorrected);
    auto number = [&](const char* key, double* dst, double max) {
      if (const json* v = Find(e, key)) *dst = NumberIn(*v, Key(p, key), 0, max);
    };
    number("sm_activity", &pt.sm_activity, 100);
    number("gr_engine_active", &pt.gr_engine_active, 100);
    number("tensor_active", &pt.tensor_active, 100);
    number("dram_active", &pt.dram_active, 100);
    u32("encoder_util", &pt.encoder_util, 100);
    u32("decoder_util", &pt.decoder_util, 100);
    number("nvlink_tx_kibps", &pt.nvlink_tx_kibps, 1e12);
    number("nvlink_rx_kibps", &pt.nvlink_rx_kibps, 1e12);
    if (pt.memory_used_mib + gpu->memory_reserved_mib > gpu->memory_total_mib) {
      Fail(Key(p, "memory_used_mib"),
           "memory_used_mib + memory_reserved_mib exceeds memory_total_mib (" +
               std::to_string(pt.memory_used_mib) + " + " +
               std::to_string(gpu->memory_reserved_mib) + " > " +
               std::to_string(gpu->memory_total_mib) + ")");
    }
    gpu->timeline.push_back(pt);
    prev = pt;
  }
}

void ParseProcesses(const json& j, const std::string& path, Gpu* gpu) {
  Array(j, path);
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    std::string p = Index(path, i);
    CheckObject(e, p, {"pid", "used_memory_mib", "sm_util", "mem_util", "from", "until"});
    Process proc;
    proc.pid = UInt32(Require(e, p, "pid"), Key(p, "pid"));
    if (proc.pid == 0) Fail(Key(p, "pid"), "expected a pid > 0");
    if (const json* v = Find(e, "used_memory_mib")) {
      proc.used_memory_mib = UInt(*v, Key(p, "used_memory_mib"));
    }
    if (const json* v = Find(e, "sm_util")) proc.sm_util = UInt32(*v, Key(p, "sm_util"), 100);
    if (const json* v = Find(e, "mem_util")) proc.mem_util = UInt32(*v, Key(p, "mem_util"), 100);
    if (const json* v = Find(e, "from")) proc.from = Number(*v, Key(p, "from"));
    if (const json* v = Find(e, "until")) proc.until = Number(*v, Key(p, "until"));
    if (proc.until <= proc.from) Fail(Key(p, "until"), "expected until > from");
    gpu->processes.push_back(proc);
  }
}

Gpu ParseGpu(const json& j, const std::string& p, std::size_t index) {
  CheckObject(
      j, p,
      {"name", "uuid", "pci_bus_id", "minor_number", "memory_total_mib", "memory_reserved_mib",
       "power_limit_w", "not_supported", "timeline", "processes", "retired_pages", "remapped_rows",
       "mig_mode", "mig_devices", "nvlinks", "gpm_supported", "vgpu_instances"});
  Gpu gpu;
  gpu.name = "NVIDIA H100 80GB HBM3";
  if (const json* v = Find(j, "name")) gpu.name = String(*v, Key(p, "name"));
  gpu.uuid = DerivedUuid("GPU", 0x6E766D6C00000000ULL + index);
  if (const json* v = Find(j, "uuid")) gpu.uuid = String(*v, Key(p, "uuid"));
  unsigned slot = 0x18U + static_cast<unsigned>(index);
  gpu.domain = slot >> 8U;
  gpu.bus = slot & 0xFFU;
  if (const json* v = Find(j, "pci_bus_id")) {
    ParseBusId(String(*v, Key(p, "pci_bus_id")), Key(p, "pci_bus_id"), &gpu);
  }
  gpu.minor_number = static_cast<unsigned>(index);
  if (const json* v = Find(j, "minor_number")) {
    gpu.minor_number = UInt32(*v, Key(p, "minor_number"), 255);
  }
  if (const json* v = Find(j, "memory_total_mib")) {
    gpu.memory_total_mib = UInt(*v, Key(p, "memory_total_mib"));
  }
  if (const json* v = Find(j, "memory_reserved_mib")) {
    gpu.memory_reserved_mib = UInt(*v, Key(p, "memory_reserved_mib"));
    if (gpu.memory_reserved_mib > gpu.memory_total_mib) {
      Fail(Key(p, "memory_reserved_mib"), "exceeds memory_total_mib");
    }
  }
  if (const json* v = Find(j, "power_limit_w")) {
    gpu.power_limit_w = NumberIn(*v, Key(p, "power_limit_w"), 0, 1e6);
  }
  if (const json* v = Find(j, "not_supported")) {
    std::string np = Key(p, "not_supported");
    Array(*v, np);
    for (std::size_t i = 0; i < v->size(); ++i) {
      std::string name = String((*v)[i], Index(np, i));
      auto it = std::find(kFeatureNames.begin(), kFeatureNames.end(), name);
      if (it == kFeatureNames.end()) {
        std::string list;
        for (std::string_view f : kFeatureNames) {
          if (!list.empty()) list += ", ";
          list += f;
        }
        Fail(Index(np, i), "unknown feature \"" + name + "\" (expected one of: " + list + ")");
      }
      gpu.not_supported[static_cast<std::size_t>(it - kFeatureNames.begin())] = true;
    }
  }
  if (const json* v = Find(j, "timeline")) {
    ParseTimeline(*v, Key(p, "timeline"), &gpu);
  } else {
    gpu.timeline.emplace_back();
  }
  if (const json* v = Find(j, "processes")) ParseProcesses(*v, Key(p, "processes"), &gpu);
  if (const json* v = Find(j, "retired_pages")) {
    std::string rp = Key(p, "retired_pages");
    CheckObject(*v, rp, {"single_bit", "double_bit"});
    if (const json* w = Find(*v, "single_bit")) {
      gpu.retired_single_bit = UInt32(*w, Key(rp, "single_bit"), 1U << 20U);
    }
    if (const json* w = Find(*v, "double_bit")) {
      gpu.retired_double_bit = UInt32(*w, Key(rp, "double_bit"), 1U << 20U);
    }
  }
  if (const json* v = Find(j, "remapped_rows")) {
    std::string rr = Key(p, "remapped_rows");
    CheckObject(*v, rr, {"correctable", "uncorrectable", "pending", "failure"});
    if (const json* w = Find(*v, "correctable")) {
      gpu.remapped_correctable = UInt32(*w, Key(rr, "correctable"));
    }
    if (const json* w = Find(*v, "uncorrectable")) {
      gpu.remapped_uncorrectable = UInt32(*w, Key(rr, "uncorrectable"));
    }
    if (const json* w = Find(*v, "pending")) gpu.remapped_pending = Flag(*w, Key(rr, "pending"));
    if (const json* w = Find(*v, "failure")) gpu.remapped_failure = Flag(*w, Key(rr, "failure"));
  }
  if (const json* v = Find(j, "mig_mode")) gpu.mig_mode = Flag(*v, Key(p, "mig_mode"));
  if (const json* v = Find(j, "mig_devices")) {
    std::string mp = Key(p, "mig_devices");
    Array(*v, mp);
    if (!v->empty() && gpu.mig_mode == 0) Fail(mp, "MIG devices need \"mig_mode\": 1");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      std::string ep = Index(mp, i);
      CheckObject(e, ep, {"uuid", "name", "memory_total_mib", "memory_used_mib"});
      MigDevice mig;
      mig.uuid = DerivedUuid("MIG", 0x6D69670000000000ULL + (index << 16U) + i);
      if (const json* w = Find(e, "uuid")) mig.uuid = String(*w, Key(ep, "uuid"));
      mig.name = gpu.name + " MIG " + std::to_string(i);
      if (const json* w = Find(e, "name")) mig.name = String(*w, Key(ep, "name"));
      mig.memory_total_mib = gpu.memory_total_mib / 8;
      if (const json* w = Find(e, "memory_total_mib")) {
        mig.memory_total_mib = UInt(*w, Key(ep, "memory_total_mib"));
      }
      if (const json* w = Find(e, "memory_used_mib")) {
        mig.memory_used_mib = UInt(*w, Key(ep, "memory_used_mib"));
        if (mig.memory_used_mib > mig.memory_total_mib) {
          Fail(Key(ep, "memory_used_mib"), "exceeds memory_total_mib");
        }
      }
      gpu.mig_devices.push_back(mig);
    }
  }
  if (const json* v = Find(j, "nvlinks")) {
    std::string np = Key(p, "nvlinks");
    Array(*v, np);
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      std::string ep = Index(np, i);
      CheckObject(e, ep, {"link", "active", "peer_gpu", "peer_switch"});
      NvLink link;
      link.link = UInt32(Require(e, ep, "link"), Key(ep, "link"), kMaxNvLinks - 1);
      for (const NvLink& other : gpu.nvlinks) {
        if (other.link == link.link) Fail(Key(ep, "link"), "duplicate link number");
      }
      if (const json* w = Find(e, "active")) link.active = Bool(*w, Key(ep, "active"));
      if (const json* w = Find(e, "peer_gpu")) {
        link.peer_gpu = static_cast<int>(UInt32(*w, Key(ep, "peer_gpu"), 0x7FFFFFFF));
      }
      if (const json* w = Find(e, "peer_switch")) {
        if (link.peer_gpu >= 0) Fail(Key(ep, "peer_switch"), "a link has one far end: not both");
        link.peer_switch = static_cast<int>(UInt32(*w, Key(ep, "peer_switch"), kMaxNvSwitches - 1));
      }
      gpu.nvlinks.push_back(link);
    }
  }
  if (const json* v = Find(j, "gpm_supported")) {
    gpu.gpm_supported = Bool(*v, Key(p, "gpm_supported"));
  }
  if (const json* v = Find(j, "vgpu_instances")) {
    std::string vp = Key(p, "vgpu_instances");
    Array(*v, vp);
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      std::string ep = Index(vp, i);
      CheckObject(e, ep, {"id", "licensed"});
      VgpuInstance instance;
      instance.id = UInt32(Require(e, ep, "id"), Key(ep, "id"));
      for (const VgpuInstance& other : gpu.vgpu_instances) {
        if (other.id == instance.id) Fail(Key(ep, "id"), "duplicate vGPU instance id");
      }
      if (const json* w = Find(e, "licensed")) instance.licensed = Bool(*w, Key(ep, "licensed"));
      gpu.vgpu_instances.push_back(instance);
    }
  }

  // Integrals of the step functions, exact at every entry's start.
  gpu.energy_j_at.assign(gpu.timeline.size(), 0.0);
  gpu.sm_activity_integral_at.assign(gpu.timeline.size(), 0.0);
  gpu.integrals_at.assign(gpu.timeline.size(), {});
  for (std::size_t i = 1; i < gpu.timeline.size(); ++i) {
    double dt = gpu.timeline[i].t - gpu.timeline[i - 1].t;
    const TimelinePoint& before = gpu.timeline[i - 1];
    gpu.energy_j_at[i] = gpu.energy_j_at[i - 1] + before.power_w * dt;
    gpu.sm_activity_integral_at[i] = gpu.sm_activity_integral_at[i - 1] + before.sm_activity * dt;
    for (std::size_t k = 0; k < kIntegratedCount; ++k) {
      gpu.integrals_at[i][k] =
          gpu.integrals_at[i - 1][k] + IntegratedValue(before, static_cast<Integrated>(k)) * dt;
    }
  }
  return gpu;
}

}  // namespace

double IntegratedValue(const TimelinePoint& pt, Integrated what) {
  switch (what) {
    case Integrated::kSmActivity:
      return pt.sm_activity;
    case Integrated::kGrEngineActive:
      return pt.gr_engine_active;
    case Integrated::kTensorActive:
      return pt.tensor_active;
    case Integrated::kDramActive:
      return pt.dram_active;
    case Integrated::kNvlinkTxKib:
      return pt.nvlink_tx_kibps;
    case Integrated::kNvlinkRxKib:
      return pt.nvlink_rx_kibps;
    case Integrated::kCount:
      break;
  }
  return 0;
}

namespace {

unsigned GpuIndex(const json& j, const std::string& path, std::size_t gpu_count) {
  unsigned index = UInt32(j, path);
  if (index >= gpu_count) {
    Fail(path, "no GPU with index " + std::to_string(index) + " (the scenario has " +
                   std::to_string(gpu_count) + ")");
  }
  return index;
}

void ParseFaults(const json& j, const std::string& p, Scenario* s) {
  CheckObject(j, p, {"gpu_lost", "insufficient_size_first_call", "xid_events", "init_error"});
  if (const json* v = Find(j, "gpu_lost")) {
    std::string lp = Key(p, "gpu_lost");
    Array(*v, lp);
    for (std::size_t i = 0; i < v->size(); ++i) {
      std::string ep = Index(lp, i);
      CheckObject((*v)[i], ep, {"gpu", "at"});
      unsigned gpu = GpuIndex(Require((*v)[i], ep, "gpu"), Key(ep, "gpu"), s->gpus.size());
      double at = Number(Require((*v)[i], ep, "at"), Key(ep, "at"));
      s->gpus[gpu].lost_at = std::min(s->gpus[gpu].lost_at, at);
    }
  }
  if (const json* v = Find(j, "insufficient_size_first_call")) {
    s->insufficient_size_first_call = Bool(*v, Key(p, "insufficient_size_first_call"));
  }
  if (const json* v = Find(j, "xid_events")) {
    std::string xp = Key(p, "xid_events");
    Array(*v, xp);
    for (std::size_t i = 0; i < v->size(); ++i) {
      std::string ep = Index(xp, i);
      const json& e = (*v)[i];
      CheckObject(e, ep, {"gpu", "at", "xid"});
      XidEvent ev;
      ev.gpu = GpuIndex(Require(e, ep, "gpu"), Key(ep, "gpu"), s->gpus.size());
      ev.at = Number(Require(e, ep, "at"), Key(ep, "at"));
      ev.xid = UInt(Require(e, ep, "xid"), Key(ep, "xid"));
      s->xid_events.push_back(ev);
    }
    std::stable_sort(s->xid_events.begin(), s->xid_events.end(),
                     [](const XidEvent& a, const XidEvent& b) { return a.at < b.at; });
  }
  if (const json* v = Find(j, "init_error")) {
    std::string ip = Key(p, "init_error");
    if (!v->is_number_integer() || v->get<long long>() <= 0 || v->get<long long>() > 0x7FFFFFFF) {
      Fail(ip, "expected a positive integer NVML error code");
    }
    s->init_error = static_cast<int>(v->get<long long>());
  }
}

}  // namespace

const TimelinePoint& Gpu::At(double t) const {
  auto it = std::upper_bound(timeline.begin(), timeline.end(), t,
                             [](double v, const TimelinePoint& pt) { return v < pt.t; });
  return it == timeline.begin() ? timeline.front() : *(it - 1);
}

double Gpu::EnergyJoules(double t) const {
  if (t <= 0) return 0;
  const TimelinePoint& pt = At(t);
  std::size_t i = static_cast<std::size_t>(&pt - timeline.data());
  return energy_j_at[i] + pt.power_w * (t - pt.t);
}

double Gpu::SmActivityIntegral(double t) const {
  if (t <= 0) return 0;
  const TimelinePoint& pt = At(t);
  std::size_t i = static_cast<std::size_t>(&pt - timeline.data());
  return sm_activity_integral_at[i] + pt.sm_activity * (t - pt.t);
}

double Gpu::IntegralOf(Integrated what, double t) const {
  if (t <= 0) return 0;
  const TimelinePoint& pt = At(t);
  std::size_t i = static_cast<std::size_t>(&pt - timeline.data());
  return integrals_at[i][static_cast<std::size_t>(what)] + IntegratedValue(pt, what) * (t - pt.t);
}

Scenario ParseScenario(std::string_view text) {
  json root;
  try {
    root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true,
                       /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ..."; a number
    // too large for a double is an out_of_range error (406), also thrown by the parser.
    std::string what = e.what();
    std::size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what.erase(0, bracket + 2);
    std::replace(what.begin(), what.end(), '\n', ' ');
    throw ScenarioError("invalid JSON: " + what);
  }
  CheckObject(root, "", {"driver_version", "time_scale", "gpus", "topology", "faults"});
  Scenario s;
  if (const json* v = Find(root, "driver_version")) {
    s.driver_version = String(*v, "driver_version");
  }
  if (const json* v = Find(root, "time_scale")) {
    s.time_scale = Number(*v, "time_scale");
    if (!(s.time_scale > 0)) Fail("time_scale", "expected a number > 0");
  }
  if (const json* v = Find(root, "gpus")) {
    Array(*v, "gpus");
    std::set<std::string> uuids;
    std::set<std::string> bus_ids;
    for (std::size_t i = 0; i < v->size(); ++i) {
      std::string p = Index("gpus", i);
      s.gpus.push_back(ParseGpu((*v)[i], p, i));
      const Gpu& g = s.gpus.back();
      if (!uuids.insert(g.uuid).second) Fail(Key(p, "uuid"), "duplicate uuid " + g.uuid);
      for (const MigDevice& m : g.mig_devices) {
        if (!uuids.insert(m.uuid).second) Fail(Key(p, "mig_devices"), "duplicate uuid " + m.uuid);
      }
      char bus[32];
      std::snprintf(bus, sizeof bus, "%08x:%02x:%02x.%x", g.domain, g.bus, g.device, g.function);
      if (!bus_ids.insert(bus).second) Fail(Key(p, "pci_bus_id"), "duplicate PCI bus id");
    }
    for (std::size_t i = 0; i < s.gpus.size(); ++i) {
      for (std::size_t k = 0; k < s.gpus[i].nvlinks.size(); ++k) {
        int peer = s.gpus[i].nvlinks[k].peer_gpu;
        if (peer >= 0 && (static_cast<std::size_t>(peer) >= s.gpus.size() ||
                          static_cast<std::size_t>(peer) == i)) {
          Fail(Key(Index(Key(Index("gpus", i), "nvlinks"), k), "peer_gpu"),
               "expected the index of another GPU");
        }
      }
    }
  }
  const std::size_t n = s.gpus.size();
  s.topology.assign(n, std::vector<unsigned>(n, 50));        // NVML_TOPOLOGY_SYSTEM
  for (std::size_t i = 0; i < n; ++i) s.topology[i][i] = 0;  // NVML_TOPOLOGY_INTERNAL
  if (const json* v = Find(root, "topology")) {
    Array(*v, "topology");
    if (v->size() != n) Fail("topology", "expected " + std::to_string(n) + " rows (one per GPU)");
    for (std::size_t i = 0; i < n; ++i) {
      std::string rp = Index("topology", i);
      Array((*v)[i], rp);
      if ((*v)[i].size() != n) Fail(rp, "expected " + std::to_string(n) + " columns");
      for (std::size_t k = 0; k < n; ++k) {
        unsigned level = UInt32((*v)[i][k], Index(rp, k), 50);
        if (level % 10 != 0) Fail(Index(rp, k), "expected one of 0, 10, 20, 30, 40, 50");
        s.topology[i][k] = level;
      }
    }
  }
  if (const json* v = Find(root, "faults")) ParseFaults(*v, "faults", &s);
  return s;
}

bool LoadScenario(Scenario* out, std::string* error) {
  const char* path = std::getenv("FAKE_NVML_SCENARIO");
  std::string name = path != nullptr && *path != '\0' ? path : "<built-in default>";
  try {
    if (path == nullptr || *path == '\0') {
      *out = ParseScenario(kDefaultScenario);
      return true;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      *error = "fake-nvml: " + name + ": cannot open: " + std::strerror(errno);
      return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    *out = ParseScenario(text.str());
    return true;
  } catch (const ScenarioError& e) {
    *error = "fake-nvml: " + name + ": " + e.what();
  } catch (const std::exception& e) {
    *error = "fake-nvml: " + name + ": " + e.what();
  }
  return false;
}

}  // namespace fake_nvml
