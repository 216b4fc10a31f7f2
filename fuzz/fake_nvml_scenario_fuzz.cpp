// Fuzzes the fake NVML's scenario reader (tests/fake_nvml/scenario.h). Its errors are
// ScenarioError exceptions; any other exception escaping ParseScenario is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "fake_nvml/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fake_nvml::Scenario scenario;
  try {
    scenario = fake_nvml::ParseScenario(text);
  } catch (const fake_nvml::ScenarioError&) {
    return 0;
  }
  GPUFLEET_CHECK(scenario.topology.size() == scenario.gpus.size());
  for (const auto& row : scenario.topology) GPUFLEET_CHECK(row.size() == scenario.gpus.size());
  for (const fake_nvml::Gpu& gpu : scenario.gpus) {
    GPUFLEET_CHECK(!gpu.timeline.empty() && gpu.timeline[0].t == 0);
    for (size_t i = 1; i < gpu.timeline.size(); ++i) {
      GPUFLEET_CHECK(gpu.timeline[i - 1].t <= gpu.timeline[i].t);
    }
    // The readers the library serves from, at a few times.
    for (double t : {-1.0, 0.0, 0.5, 1e3, 1e12}) {
      (void)gpu.At(t);
      (void)gpu.EnergyJoules(t);
      (void)gpu.SmActivityIntegral(t);
      for (std::size_t k = 0; k < fake_nvml::kIntegratedCount; ++k) {
        GPUFLEET_CHECK(!std::isnan(gpu.IntegralOf(static_cast<fake_nvml::Integrated>(k), t)));
      }
    }
  }
  for (size_t i = 1; i < scenario.xid_events.size(); ++i) {
    GPUFLEET_CHECK(scenario.xid_events[i - 1].at <= scenario.xid_events[i].at);
  }
  return 0;
}
