#include "gpu/health.h"

#include <algorithm>
#include <string>
#include <utility>

#include "gpu/nvml_api.h"

namespace gpufleet::gpu {
namespace {

struct KnownXid {
  std::uint64_t xid;
  bool critical;
  const char* description;
};

// From NVIDIA's public XID catalogue: the ones operators meet most, and whether the GPU itself
// (rather than the application) is the likely culprit.
constexpr KnownXid kKnownXids[] = {
    {13, false, "graphics engine exception (often an application fault)"},
    {31, false, "GPU memory page fault (often an application fault)"},
    {43, false, "GPU stopped processing (application fault)"},
    {45, false, "preemptive cleanup after a previous error"},
    {48, true, "double-bit ECC error"},
    {61, true, "internal micro-controller breakpoint"},
    {62, true, "internal micro-controller halt"},
    {63, true, "ECC page retirement or row remapping recorded"},
    {64, true, "ECC page retirement or row remapping failed"},
    {68, true, "video processor exception"},
    {69, true, "graphics engine class error"},
    {74, true, "NVLink error"},
    {79, true, "GPU has fallen off the bus"},
    {92, true, "high single-bit ECC error rate"},
    {94, true, "contained ECC error"},
    {95, true, "uncontained ECC error"},
    {119, true, "GSP RPC timeout"},
    {120, true, "GSP error"},
    {140, true, "unrecovered ECC error"},
};

template <typename T>
void ClampPercent(Reading<T>& reading, const char* what, GpuSample& sample) {
  if (reading.has_value() && reading.value > 100) {
    sample.flags.push_back(std::string(what) + " " + std::to_string(reading.value) +
                           " is out of range; clamped to 100");
    reading.value = 100;
    reading.status = ReadStatus::kClamped;
  }
}

template <typename T>
void FlagBackwards(const Reading<T>& now, const Reading<T>& before, const char* what,
                   GpuSample& sample) {
  if (now.has_value() && before.has_value() && now.value < before.value) {
    sample.flags.push_back(std::string(what) + " went backwards (" + std::to_string(before.value) +
                           " -> " + std::to_string(now.value) + ")");
  }
}

}  // namespace

std::string_view XidDescription(std::uint64_t xid) {
  for (const KnownXid& known : kKnownXids) {
    if (known.xid == xid) return known.description;
  }
  return {};
}

bool IsCriticalXid(std::uint64_t xid) {
  for (const KnownXid& known : kKnownXids) {
    if (known.xid == xid) return known.critical;
  }
  // An XID we do not know: better to have a person look than to keep placing jobs on it.
  return true;
}

void SanitizeSample(GpuSample& s, const GpuSample* previous) {
  ClampPercent(s.gpu_util_pct, "gpu_util_pct", s);
  ClampPercent(s.mem_util_pct, "mem_util_pct", s);
  ClampPercent(s.encoder_util_pct, "encoder_util_pct", s);
  ClampPercent(s.decoder_util_pct, "decoder_util_pct", s);
  if (s.processes.has_value()) {
    for (GpuProcess& p : s.processes.value) {
      ClampPercent(p.sm_util_pct, "process sm_util_pct", s);
      ClampPercent(p.mem_util_pct, "process mem_util_pct", s);
    }
  }
  if (s.fb_used_bytes.has_value() && s.fb_total_bytes.has_value() &&
      s.fb_used_bytes.value > s.fb_total_bytes.value) {
    s.flags.push_back("fb_used_bytes exceeds fb_total_bytes; clamped");
    s.fb_used_bytes.value = s.fb_total_bytes.value;
    s.fb_used_bytes.status = ReadStatus::kClamped;
  }
  const std::pair<Reading<double>*, const char*> ratios[] = {
      {&s.sm_activity, "sm_activity"},
      {&s.gr_engine_activity, "gr_engine_activity"},
      {&s.tensor_activity, "tensor_activity"},
      {&s.dram_activity, "dram_activity"}};
  for (const auto& [ratio, name] : ratios) {
    if (ratio->has_value() && (ratio->value < 0 || ratio->value > 1)) {
      s.flags.push_back(std::string(name) + " " + std::to_string(ratio->value) +
                        " is out of range; clamped to [0, 1]");
      ratio->value = std::clamp(ratio->value, 0.0, 1.0);
      ratio->status = ReadStatus::kClamped;
    }
  }
  for (Reading<std::uint32_t>* temp : {&s.temperature_c, &s.memory_temperature_c}) {
    if (temp->has_value() && temp->value > 200) {
      s.flags.push_back("temperature " + std::to_string(temp->value) + " C is not plausible");
      temp->status = ReadStatus::kFailed;
    }
  }
  if (previous == nullptr) return;
  if (s.time_s < previous->time_s) s.flags.push_back("sample time went backwards");
  FlagBackwards(s.energy_mj, previous->energy_mj, "energy_mj", s);
  FlagBackwards(s.pcie_replay_count, previous->pcie_replay_count, "pcie_replay_count", s);
  FlagBackwards(s.ecc_uncorrected_total, previous->ecc_uncorrected_total, "ecc_uncorrected_total",
                s);
}

void HealthTracker::OnEvent(const GpuEvent& event) {
  PerGpu& gpu = gpus_[event.gpu_index];
  switch (event.kind) {
    case GpuEvent::Kind::kXid: {
      ++gpu.xid_count;
      gpu.last_xid = static_cast<std::uint32_t>(event.data);
      if (!IsCriticalXid(event.data)) break;
      const std::string_view what = XidDescription(event.data);
      std::string reason = "XID " + std::to_string(event.data);
      if (!what.empty()) reason += " (" + std::string(what) + ")";
      if (std::find(gpu.sticky_reasons.begin(), gpu.sticky_reasons.end(), reason) ==
          gpu.sticky_reasons.end()) {
        gpu.sticky_reasons.push_back(std::move(reason));
      }
      break;
    }
    case GpuEvent::Kind::kDoubleBitEcc: {
      const std::string reason = "double-bit ECC error event";
      if (std::find(gpu.sticky_reasons.begin(), gpu.sticky_reasons.end(), reason) ==
          gpu.sticky_reasons.end()) {
        gpu.sticky_reasons.push_back(reason);
      }
      break;
    }
    case GpuEvent::Kind::kSingleBitEcc:
      break;  // corrected by the hardware; counted in the ECC counters
  }
}

void HealthTracker::Evaluate(GpuSample& s) const {
  GpuHealth health;
  if (auto it = gpus_.find(s.index); it != gpus_.end()) {
    s.xid_count = it->second.xid_count;
    s.last_xid = it->second.last_xid;
    health.reasons = it->second.sticky_reasons;
  }
  if (!s.open_error.empty()) health.reasons.push_back("cannot open the GPU: " + s.open_error);
  if (s.lost) {
    health.reasons.push_back(
        "GPU is lost (NVML_ERROR_GPU_IS_LOST); it may have fallen off the bus");
  }
  if (s.clock_event_reasons.has_value()) {
    const std::uint64_t r = s.clock_event_reasons.value;
    if (r & nvmlClocksEventReasonHwThermalSlowdown) {
      health.reasons.push_back("thermal slowdown (hardware): clocks reduced");
    } else if (r & nvmlClocksEventReasonSwThermalSlowdown) {
      health.reasons.push_back("thermal slowdown (software): clocks reduced");
    }
  }
  if (s.ecc_uncorrected_volatile.has_value() && s.ecc_uncorrected_volatile.value > 0) {
    // Fixed text: the reason is a metric label, and the count is exported on its own.
    health.reasons.push_back("uncorrectable (double-bit) ECC errors since the driver loaded");
  }
  if (s.remapped_rows_failure.has_value() && s.remapped_rows_failure.value > 0) {
    health.reasons.push_back("row remapping failed: the GPU needs service");
  }
  if (s.remapped_rows_pending.has_value() && s.remapped_rows_pending.value > 0) {
    health.reasons.push_back("row remapping pending: reset the GPU");
  }
  health.healthy = health.reasons.empty();
  s.health = std::move(health);
}

}  // namespace gpufleet::gpu
