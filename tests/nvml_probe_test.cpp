// The NVML backend against the fake libnvidia-ml.so.1 (tests/fake_nvml), loaded through the real
// dlopen path: symbol fallbacks, every sampled field, growing buffers, events, a GPU lost mid-run,
// and a malformed scenario.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpu/gpu_probe.h"
#include "gpu/nvml_api.h"
#include "gpu/sampler.h"
#include "gpu/topology_links.h"
#include "testing/builders.h"
#include "testing/gpu_topologies.h"

namespace gpufleet {
namespace {

constexpr std::uint64_t kMiB = 1024ULL * 1024ULL;

// The fake's test hooks, from the copy NvmlLibrary loaded (RTLD_NOLOAD finds it, never loads).
struct FakeHooks {
  explicit FakeHooks(const char* path) : handle(dlopen(path, RTLD_NOW | RTLD_NOLOAD)) {
    GPUFLEET_CHECK(handle != nullptr);
    set_time = reinterpret_cast<void (*)(double)>(dlsym(handle, "fakeNvmlSetTime"));
    call_count =
        reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(handle, "fakeNvmlCallCount"));
    GPUFLEET_CHECK(set_time != nullptr && call_count != nullptr);
  }
  ~FakeHooks() { dlclose(handle); }
  void* handle;
  void (*set_time)(double) = nullptr;
  unsigned long long (*call_count)(const char*) = nullptr;
};

gpu::OpenedProbe OpenFake(const char* library, const std::string& scenario) {
  setenv("FAKE_NVML_SCENARIO", scenario.c_str(), 1);
  gpu::ProbeOptions options;
  options.nvml_library = library;
  return gpu::OpenProbe(options);
}

bool HasLine(const std::vector<std::string>& lines, const std::string& line) {
  for (const std::string& l : lines) {
    if (l == line) return true;
  }
  return false;
}

TEST(NvmlProbe, ReadsEveryFieldFromTheFullLibrary) {
  gpu::OpenedProbe opened = OpenFake(FAKE_NVML_FULL, SAMPLE_SCENARIO);
  ASSERT_EQ(opened.notice, "");
  gpu::GpuProbe& probe = *opened.probe;
  FakeHooks fake(FAKE_NVML_FULL);
  fake.set_time(1.5);
  EXPECT_EQ(probe.BackendName(), "nvml");
  EXPECT_FALSE(probe.IsSimulated());
  EXPECT_EQ(probe.DriverVersion(), "550.54.15");
  ASSERT_EQ(probe.DeviceCount(), 3);
  const auto symbols = probe.SymbolReport();
  EXPECT_TRUE(HasLine(symbols, "nvmlInit_v2: nvmlInit_v2"));
  EXPECT_TRUE(HasLine(symbols,
                      "nvmlDeviceGetComputeRunningProcesses_v3: "
                      "nvmlDeviceGetComputeRunningProcesses_v3"));
  EXPECT_TRUE(HasLine(symbols, "nvmlGpmMetricsGet: nvmlGpmMetricsGet"));
  // Each GPU's device node by its minor number (the scenario's default: the index).
  EXPECT_TRUE(HasLine(symbols, "nvmlDeviceGetMinorNumber: nvmlDeviceGetMinorNumber"));
  if (std::getenv("GPUFLEET_NVIDIA_DEVICE_DIR") == nullptr) {
    EXPECT_EQ(probe.DeviceNode(0), "/dev/nvidia0");
    EXPECT_EQ(probe.DeviceNode(2), "/dev/nvidia2");
  }
  EXPECT_EQ(probe.DeviceNode(3), "") << "no such GPU";
  EXPECT_EQ(probe.DeviceNode(-1), "");

  gpu::GpuSample s = probe.Sample(0, 1.5);
  EXPECT_FALSE(s.lost);
  EXPECT_EQ(s.uuid, "GPU-5e1c7a52-0d3b-4f60-9a51-7b2f0c1d9e01");
  EXPECT_EQ(s.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(s.gpu_util_pct.value, 95U);
  EXPECT_EQ(s.mem_util_pct.value, 60U);
  EXPECT_EQ(s.fb_total_bytes.value, 81559 * kMiB);
  EXPECT_EQ(s.fb_used_bytes.value, 40000 * kMiB);
  EXPECT_EQ(s.fb_reserved_bytes.value, 512 * kMiB);
  EXPECT_EQ(s.fb_free_bytes.value, (81559 - 512 - 40000) * kMiB);
  EXPECT_EQ(s.temperature_c.value, 62U);
  EXPECT_EQ(s.memory_temperature_c.value, 70U);
  EXPECT_EQ(s.power_mw.value, 650'000U);
  EXPECT_EQ(s.power_limit_mw.value, 700'000U);
  EXPECT_GT(s.energy_mj.value, 0U);
  EXPECT_EQ(s.sm_clock_mhz.value, 1980U);
  EXPECT_EQ(s.mem_clock_mhz.value, 2619U);
  EXPECT_EQ(s.clock_event_reasons.value, nvmlClocksEventReasonSwPowerCap);
  EXPECT_EQ(s.pcie_tx_kbps.value, 1'500'000U);
  EXPECT_EQ(s.retired_pages_single_bit.value, 2U);
  EXPECT_EQ(s.remapped_rows_correctable.value, 1U);
  ASSERT_EQ(s.nvlinks.size(), 2U);
  EXPECT_TRUE(s.nvlinks[0].active);
  EXPECT_EQ(s.nvlinks[0].remote_pci_bus_id, "00000000:2A:00.0");
  EXPECT_FALSE(s.nvlinks[1].active);
  EXPECT_EQ(s.sm_activity.status, gpu::ReadStatus::kMissing) << "GPM needs two samples";

  // The first process-list call answers INSUFFICIENT_SIZE: the probe grows its buffer and retries.
  EXPECT_GE(fake.call_count("nvmlDeviceGetComputeRunningProcesses_v3"), 2U);
  ASSERT_TRUE(s.processes.has_value());
  ASSERT_EQ(s.processes.value.size(), 2U);
  EXPECT_EQ(s.processes.value[0].pid, 4242U);
  EXPECT_EQ(s.processes.value[0].used_memory_bytes.value, 38000 * kMiB);
  EXPECT_EQ(s.processes.value[0].sm_util_pct.value, 90U);
  EXPECT_EQ(s.processes.value[0].mem_util_pct.value, 55U);
  EXPECT_EQ(s.processes.value[1].sm_util_pct.value, 5U);

  fake.set_time(2.5);
  gpu::GpuSample second = probe.Sample(0, 2.5);
  ASSERT_TRUE(second.sm_activity.has_value());
  EXPECT_NEAR(second.sm_activity.value, 0.885, 1e-9);
  EXPECT_NEAR(second.gr_engine_activity.value, 0.97, 1e-9);
  EXPECT_NEAR(second.tensor_activity.value, 0.615, 1e-9);
  EXPECT_NEAR(second.dram_activity.value, 0.42, 1e-9);
  EXPECT_EQ(fake.call_count("nvmlGpmMetricsGet"), 1U) << "one request for every GPM metric";
  EXPECT_EQ(second.encoder_util_pct.value, 12U);
  EXPECT_EQ(second.decoder_util_pct.value, 30U);
  // 2,000,000 KiB/s sent and 1,000,000 received from scenario second 1 on.
  EXPECT_EQ(second.nvlink_tx_kib.value, 3'000'000U);
  EXPECT_EQ(second.nvlink_rx_kib.value, 1'500'000U);
  EXPECT_EQ(s.vgpu_license_status.value, 1U);
  EXPECT_GT(second.energy_mj.value, s.energy_mj.value);
  EXPECT_EQ(second.processes.value[0].sm_util_pct.value, 90U);
  gpu::GpuSample again = probe.Sample(0, 2.6);
  EXPECT_EQ(again.processes.value[0].sm_util_pct.value, 90U)
      << "no new driver sample since the last read, but one within the window: still busy";

  // GPU 2: MIG on, no memory sensor, no GPM.
  gpu::GpuSample mig = probe.Sample(2, 2.5);
  EXPECT_EQ(mig.mig_mode.value, 1U);
  ASSERT_EQ(mig.mig_devices.size(), 2U);
  EXPECT_EQ(mig.mig_devices[0].uuid, "MIG-2b7e0c3a-6a11-5d0e-8f3c-4f1d2a9b7c01");
  EXPECT_EQ(mig.mig_devices[0].memory_total_bytes.value, 19968 * kMiB);
  EXPECT_EQ(mig.memory_temperature_c.status, gpu::ReadStatus::kNotSupported);
  EXPECT_EQ(mig.sm_activity.status, gpu::ReadStatus::kNotSupported);
  EXPECT_EQ(mig.tensor_activity.status, gpu::ReadStatus::kNotSupported);
  EXPECT_EQ(mig.nvlink_tx_kib.status, gpu::ReadStatus::kNotSupported);
  EXPECT_EQ(mig.vgpu_license_status.status, gpu::ReadStatus::kNotSupported) << "bare metal";
  EXPECT_TRUE(mig.encoder_util_pct.has_value());
  EXPECT_TRUE(mig.nvlinks.empty());

  const gpu::GpuTopology topology = probe.Topology();
  ASSERT_EQ(topology.common_ancestor.size(), 3U);
  EXPECT_EQ(topology.common_ancestor[0][1], 10);
  EXPECT_EQ(topology.common_ancestor[2][0], 50);
  ASSERT_EQ(topology.nvlinks.size(), 3U);
  EXPECT_EQ(topology.nvlinks[0][1], 1) << "one of the two links is down";
  EXPECT_EQ(topology.nvlinks[1][0], 1);
  EXPECT_EQ(topology.nvlinks[0][2], 0);
}

// The three machines of the topology-aware placement, as the probe reads them: common ancestors
// and NVLinks (direct, or through the NVSwitch fabric) become the scheduler's link table.
TEST(NvmlProbe, ReadsTheLinkTablesOfRealMachines) {
  const struct {
    const char* file;
    core::GpuLinks want;
  } machines[] = {
      {"dgx1_v100.json", test::Dgx1V100Links()},
      {"pcie_two_socket.json", test::PcieTwoSocketLinks()},
      {"hgx_a100_nvswitch.json", test::HgxA100NvSwitchLinks()},
  };
  for (const auto& m : machines) {
    SCOPED_TRACE(m.file);
    gpu::OpenedProbe opened = OpenFake(FAKE_NVML_FULL, std::string(SCENARIO_DIR) + "/" + m.file);
    ASSERT_EQ(opened.notice, "");
    ASSERT_EQ(opened.probe->DeviceCount(), 8);
    const gpu::GpuTopology topology = opened.probe->Topology();
    const core::GpuLinks links = gpu::LinksFromTopology(topology);
    EXPECT_EQ(core::NvLinkMatrix(links), core::NvLinkMatrix(m.want));
    EXPECT_EQ(core::PcieMatrix(links), core::PcieMatrix(m.want));
  }
}

// Without nvmlDeviceGetNvLinkRemoteDeviceType (older drivers) a link into an NVSwitch cannot be
// told from a link to an unknown device: direct GPU links still count, switch links do not.
TEST(NvmlProbe, LegacyLibraryCountsOnlyDirectNvLinks) {
  {
    gpu::OpenedProbe opened =
        OpenFake(FAKE_NVML_LEGACY, std::string(SCENARIO_DIR) + "/dgx1_v100.json");
    ASSERT_EQ(opened.notice, "");
    EXPECT_EQ(core::NvLinkMatrix(gpu::LinksFromTopology(opened.probe->Topology())),
              core::NvLinkMatrix(test::Dgx1V100Links()));
  }
  gpu::OpenedProbe opened =
      OpenFake(FAKE_NVML_LEGACY, std::string(SCENARIO_DIR) + "/hgx_a100_nvswitch.json");
  ASSERT_EQ(opened.notice, "");
  const gpu::GpuTopology topology = opened.probe->Topology();
  for (const auto& row : topology.nvlinks) {
    for (int v : row) EXPECT_EQ(v, 0);
  }
}

TEST(NvmlProbe, XidEventsAndALostGpuMakeGpusUnhealthyWithoutStopping) {
  gpu::OpenedProbe opened = OpenFake(FAKE_NVML_FULL, SAMPLE_SCENARIO);
  ASSERT_EQ(opened.notice, "");
  FakeHooks fake(FAKE_NVML_FULL);
  fake.set_time(1.0);
  gpu::Sampler sampler(*opened.probe, {}, [] { return 0.0; });
  sampler.SampleOnce();
  EXPECT_TRUE(opened.probe->WaitEvents(0).empty());
  EXPECT_TRUE(sampler.Latest()[0].health.healthy);

  fake.set_time(2.5);
  const std::vector<gpu::GpuEvent> events = opened.probe->WaitEvents(1000);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].gpu_index, 0);
  EXPECT_EQ(events[0].data, 79U);
  for (const gpu::GpuEvent& e : events) sampler.OnEvent(e);
  EXPECT_FALSE(sampler.Latest()[0].health.healthy);
  EXPECT_EQ(sampler.Latest()[0].health.reasons[0], "XID 79 (GPU has fallen off the bus)");

  // GPU 1 falls off the bus at t = 30: it is reported lost and unhealthy; the others go on.
  fake.set_time(31);
  sampler.SampleOnce();
  const std::vector<gpu::GpuSample> latest = sampler.Latest();
  ASSERT_EQ(latest.size(), 3U);
  EXPECT_TRUE(latest[1].lost);
  EXPECT_FALSE(latest[1].health.healthy);
  EXPECT_FALSE(latest[1].gpu_util_pct.has_value());
  EXPECT_FALSE(latest[2].lost);
  EXPECT_TRUE(latest[2].health.healthy);
  EXPECT_EQ(latest[2].gpu_util_pct.value, 30U);
  sampler.SampleOnce();  // and again: still no crash
  EXPECT_EQ(sampler.rounds(), 3U);
}

TEST(NvmlProbe, LegacyLibraryUsesTheOldSymbols) {
  gpu::OpenedProbe opened = OpenFake(FAKE_NVML_LEGACY, SAMPLE_SCENARIO);
  ASSERT_EQ(opened.notice, "");
  FakeHooks fake(FAKE_NVML_LEGACY);
  fake.set_time(1.5);
  const auto symbols = opened.probe->SymbolReport();
  EXPECT_TRUE(HasLine(symbols, "nvmlInit_v2: nvmlInit"));
  EXPECT_TRUE(HasLine(symbols,
                      "nvmlDeviceGetComputeRunningProcesses_v3: "
                      "nvmlDeviceGetComputeRunningProcesses"));
  EXPECT_TRUE(HasLine(symbols,
                      "nvmlDeviceGetCurrentClocksEventReasons: "
                      "nvmlDeviceGetCurrentClocksThrottleReasons"));
  EXPECT_TRUE(HasLine(symbols, "nvmlEventSetWait_v2: nvmlEventSetWait"));
  EXPECT_TRUE(HasLine(symbols, "nvmlGpmMetricsGet: missing"));
  gpu::GpuSample s = opened.probe->Sample(0, 1.5);
  EXPECT_EQ(s.gpu_util_pct.value, 95U);
  EXPECT_EQ(s.fb_total_bytes.value, 81559 * kMiB);
  EXPECT_FALSE(s.fb_reserved_bytes.has_value()) << "only nvmlMemory_v2_t carries it";
  EXPECT_EQ(s.clock_event_reasons.value, nvmlClocksEventReasonSwPowerCap);
  ASSERT_TRUE(s.processes.has_value());
  ASSERT_EQ(s.processes.value.size(), 2U) << "read with the v1 struct";
  EXPECT_EQ(s.processes.value[1].pid, 4343U);
  EXPECT_EQ(s.processes.value[1].used_memory_bytes.value, 2000 * kMiB);
  EXPECT_EQ(s.sm_activity.status, gpu::ReadStatus::kNotSupported);
  EXPECT_EQ(s.dram_activity.status, gpu::ReadStatus::kNotSupported);
  EXPECT_EQ(s.encoder_util_pct.value, 12U) << "an old entry point: in the legacy library too";
}

TEST(NvmlProbe, MalformedScenarioFallsBackToSimulatedWithAClearNotice) {
  test::TempFile bad("bad.json",
                     R"({"gpus": [{"name": "x", "timeline": [{"t": 0, "gpu_util": "high"}]}]})");
  gpu::OpenedProbe opened = OpenFake(FAKE_NVML_FULL, bad.path());
  EXPECT_TRUE(opened.probe->IsSimulated());
  EXPECT_NE(opened.notice.find("NVML did not initialize"), std::string::npos) << opened.notice;
  EXPECT_NE(opened.notice.find("SIMULATED"), std::string::npos);
}

TEST(NvmlProbe, MissingLibraryFallsBackToSimulatedWithAClearNotice) {
  gpu::ProbeOptions options;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  gpu::OpenedProbe opened = gpu::OpenProbe(options);
  EXPECT_TRUE(opened.probe->IsSimulated());
  EXPECT_EQ(opened.probe->DeviceCount(), 4);
  EXPECT_NE(opened.notice.find("no NVIDIA driver"), std::string::npos);
  EXPECT_NE(opened.notice.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  options.simulated_gpus = 0;
  EXPECT_EQ(gpu::OpenProbe(options).probe->DeviceCount(), 0);
}

}  // namespace
}  // namespace gpufleet
