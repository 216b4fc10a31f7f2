#include "agent/metrics_text.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gpufleet::agent {
namespace {

gpu::GpuSample Sample(int index) {
  gpu::GpuSample s;
  s.index = index;
  s.uuid = "GPU-" + std::to_string(index);
  s.name = "NVIDIA H100 80GB HBM3";
  s.pci_bus_id = "00000000:18:00.0";
  s.gpu_util_pct.Set(87);
  s.fb_used_bytes.Set(2048ULL * 1024 * 1024);
  s.power_mw.Set(350'500);
  s.energy_mj.Set(123456789);
  return s;
}

std::vector<std::string> LinesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(MetricsText, DcgmNamesLabelsAndUnits) {
  std::string out;
  RenderMetrics({Sample(0)}, {"node-a", "nvml", "550.54", "0.1.0", 7}, out);
  const std::string labels =
      "{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\","
      "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\","
      "DCGM_FI_DRIVER_VERSION=\"550.54\"}";
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL" + labels + " 87\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("DCGM_FI_DEV_FB_USED" + labels + " 2048\n"), std::string::npos);
  EXPECT_NE(out.find("DCGM_FI_DEV_POWER_USAGE" + labels + " 350.5\n"), std::string::npos);
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
  EXPECT_NE(out.find("gpufleet_gpu_healthy" + labels + " 1\n"), std::string::npos);
  EXPECT_NE(out.find("gpufleet_agent_sample_rounds_total{Hostname=\"node-a\"} 7\n"),
            std::string::npos);
  // Not reported by this GPU: left out entirely, not exported as 0.
  EXPECT_EQ(out.find("DCGM_FI_DEV_GPU_TEMP"), std::string::npos);
}

TEST(MetricsText, LostGpuKeepsOnlyHealthSeries) {
  gpu::GpuSample lost = Sample(1);
  lost.lost = true;
  lost.health.healthy = false;
  lost.health.reasons = {"GPU is lost"};
  std::string out;
  RenderMetrics({Sample(0), lost}, {"h", "nvml", "", "", 0}, out);
  EXPECT_EQ(LinesStartingWith(out, "DCGM_FI_DEV_GPU_UTIL{").size(), 1U);
  EXPECT_NE(out.find("gpufleet_gpu_lost{gpu=\"1\""), std::string::npos);
  const auto reasons = LinesStartingWith(out, "gpufleet_gpu_health_reason{");
  ASSERT_EQ(reasons.size(), 1U);
  EXPECT_NE(reasons[0].find("reason=\"GPU is lost\""), std::string::npos);
}

TEST(MetricsText, ProcessAndJobSeries) {
  gpu::GpuSample s = Sample(0);
  gpu::GpuProcess a;
  a.pid = 10;
  a.user = "alice";
  a.job_id = "j1";
  a.used_memory_bytes.Set(1000);
  a.sm_util_pct.Set(30);
  gpu::GpuProcess b = a;
  b.pid = 11;
  b.sm_util_pct.Set(25);
  gpu::GpuProcess c = a;
  c.pid = 12;
  c.job_id = "";
  c.user = "bob \"the\" builder";
  s.processes.Set({a, b, c});
  std::string out;
  RenderMetrics({s}, {"h", "nvml", "", "", 0}, out);
  EXPECT_EQ(LinesStartingWith(out, "gpufleet_process_gpu_memory_bytes{").size(), 3U);
  const auto job_memory = LinesStartingWith(out, "gpufleet_job_gpu_memory_bytes{");
  ASSERT_EQ(job_memory.size(), 1U);
  EXPECT_NE(job_memory[0].find("job=\"j1\"} 2000"), std::string::npos);
  const auto job_sm = LinesStartingWith(out, "gpufleet_job_sm_util_percent{");
  ASSERT_EQ(job_sm.size(), 1U);
  EXPECT_NE(job_sm[0].find("} 55"), std::string::npos);
  EXPECT_NE(out.find("user=\"bob \\\"the\\\" builder\""), std::string::npos) << "escaped";
}

TEST(MetricsText, DcgmProfilingNamesAndFieldSupport) {
  gpu::GpuSample s = Sample(0);
  s.pcie_tx_kbps.Set(1000);
  s.tensor_activity.Set(0.5);
  s.encoder_util_pct.status = gpu::ReadStatus::kNotSupported;
  s.nvlink_tx_kib.Set(30);
  s.nvlink_rx_kib.Set(12);
  std::string out;
  RenderMetrics({s}, {"h", "nvml", "", "", 0}, out);
  EXPECT_NE(out.find("# TYPE DCGM_FI_PROF_PCIE_TX_BYTES gauge\nDCGM_FI_PROF_PCIE_TX_BYTES{"),
            std::string::npos);
  EXPECT_EQ(LinesStartingWith(out, "DCGM_FI_PROF_PCIE_TX_BYTES{")[0].substr(
                LinesStartingWith(out, "DCGM_FI_PROF_PCIE_TX_BYTES{")[0].rfind(' ') + 1),
            "1024000");
  EXPECT_EQ(out.find("DCGM_FI_DRIVER_VERSION="), std::string::npos) << "no driver: no label";
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter\n"), std::string::npos);
  EXPECT_NE(out.find("Hostname=\"h\"} 42\n"), std::string::npos) << "NVLink: tx + rx";
  EXPECT_EQ(out.find("DCGM_FI_DEV_ENC_UTIL{"), std::string::npos);
  EXPECT_NE(out.find("field=\"DCGM_FI_DEV_ENC_UTIL\"} 0\n"), std::string::npos);
  EXPECT_NE(out.find("field=\"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE\"} 1\n"), std::string::npos);
  EXPECT_EQ(out.find("field=\"DCGM_FI_DEV_DEC_UTIL\""), std::string::npos) << "never read";
}

TEST(MetricsText, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

}  // namespace
}  // namespace gpufleet::agent
