// Issue 21: every counter of dcgm-exporter's default counter list (etc/default-counters.csv,
// dcgm-exporter 4.x) is exported with dcgm-exporter's name, type and labels, read from the fake
// libnvidia-ml.so.1 through the real dlopen path and rendered by the real /metrics code.
//
// The list below is written from that file (26 metrics and 1 label: DCGM_FI_DRIVER_VERSION, which
// dcgm-exporter puts on every series). On a Hopper GPU every one is present; on an A100, which has
// no GPM, exactly the three profiling ratios are missing (docs/agent/README.md says why and what to
// use instead), and `gpufleet_gpu_field_supported` says so.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/metrics_text.h"
#include "gpu/gpu_probe.h"
#include "testing/builders.h"

namespace gpufleet {
namespace {

struct Counter {
  const char* name;
  const char* type;
};

// dcgm-exporter's default counters, in its file's order, with its Prometheus types.
constexpr Counter kDefaultCounters[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge"},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge"},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge"},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge"},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge"},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge"},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge"},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge"},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge"},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge"},
    {"DCGM_FI_DEV_FB_FREE", "gauge"},
    {"DCGM_FI_DEV_FB_USED", "gauge"},
    {"DCGM_FI_DEV_FB_TOTAL", "gauge"},
    {"DCGM_FI_DEV_FB_RESERVED", "gauge"},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter"},
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge"},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter"},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter"},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge"},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge"},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge"},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge"},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge"},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge"},
};

// What a GPU without GPM (Ampere, Volta) cannot give through NVML; see docs/agent/README.md.
const std::set<std::string> kPreHopperExceptions = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"};

// dcgm-exporter's label set on a GPU series (no Kubernetes pod mapping, no MIG).
const std::set<std::string> kDcgmLabels = {
    "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"};

// GPU 0: a Hopper with every feature. GPU 1: an A100 (no GPM). GPU 2: a Hopper whose driver lacks
// the video engines, the NVLink counters and vGPU, and has GPM turned off: each switch of the fake.
constexpr const char* kScenario = R"({
  "driver_version": "550.54.15",
  "gpus": [
    {"name": "NVIDIA H100 80GB HBM3", "gpm_supported": true,
     "timeline": [{"t": 0, "gpu_util": 90, "mem_util": 50, "memory_used_mib": 1000,
                   "power_w": 600, "sm_activity": 80, "gr_engine_active": 95,
                   "tensor_active": 60, "dram_active": 40, "encoder_util": 10,
                   "decoder_util": 20, "pcie_tx_kbps": 1000, "pcie_rx_kbps": 2000,
                   "nvlink_tx_kibps": 3000, "nvlink_rx_kibps": 1000}],
     "nvlinks": [{"link": 0, "peer_gpu": 1}, {"link": 1, "peer_gpu": 1}],
     "vgpu_instances": [{"id": 11, "licensed": true}, {"id": 12, "licensed": true}]},
    {"name": "NVIDIA A100-SXM4-80GB", "gpm_supported": false,
     "timeline": [{"t": 0, "gpu_util": 70, "encoder_util": 5, "nvlink_tx_kibps": 100}],
     "nvlinks": [{"link": 0, "peer_gpu": 0}, {"link": 1, "peer_gpu": 0}],
     "vgpu_instances": [{"id": 21, "licensed": false}]},
    {"name": "NVIDIA H100 80GB HBM3", "gpm_supported": true,
     "not_supported": ["encoder", "decoder", "nvlink_throughput", "vgpu", "gpm"],
     "nvlinks": [{"link": 0, "peer_gpu": 0}]}
  ]
})";

struct Series {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the exposition's sample lines (label values here never hold quotes or commas).
std::vector<Series> ParseSamples(const std::string& text,
                                 std::map<std::string, std::string>* types) {
  std::vector<Series> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      (*types)[name] = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    Series s;
    const std::size_t brace = line.find('{');
    const std::size_t close = line.rfind('}');
    if (brace == std::string::npos || close == std::string::npos) continue;
    s.name = line.substr(0, brace);
    std::istringstream pairs(line.substr(brace + 1, close - brace - 1));
    for (std::string pair; std::getline(pairs, pair, ',');) {
      const std::size_t eq = pair.find('=');
      s.labels[pair.substr(0, eq)] = pair.substr(eq + 2, pair.size() - eq - 3);
    }
    s.value = std::strtod(line.c_str() + close + 2, nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

class DcgmParity : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_NVML_SCENARIO", scenario_.path().c_str(), 1);
    gpu::ProbeOptions options;
    options.nvml_library = FAKE_NVML_FULL;
    opened_ = gpu::OpenProbe(options);
    ASSERT_EQ(opened_.notice, "");
    void* handle = dlopen(FAKE_NVML_FULL, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr);
    auto set_time = reinterpret_cast<void (*)(double)>(dlsym(handle, "fakeNvmlSetTime"));
    ASSERT_NE(set_time, nullptr);
    // GPM needs two samples apart in time.
    std::vector<gpu::GpuSample> samples;
    for (double t : {1.0, 2.0}) {
      set_time(t);
      samples.clear();
      for (int i = 0; i < opened_.probe->DeviceCount(); ++i) {
        samples.push_back(opened_.probe->Sample(i, t));
      }
    }
    dlclose(handle);
    agent::MetricsContext context{"node-a", "nvml", opened_.probe->DriverVersion(), "0.1.0", 2};
    agent::RenderMetrics(samples, context, text_);
    series_ = ParseSamples(text_, &types_);
  }

  const Series* Find(const std::string& name, const std::string& gpu) const {
    for (const Series& s : series_) {
      if (s.name == name && s.labels.count("gpu") && s.labels.at("gpu") == gpu &&
          !s.labels.count("field")) {
        return &s;
      }
    }
    return nullptr;
  }
  const Series* Supported(const std::string& field, const std::string& gpu) const {
    for (const Series& s : series_) {
      if (s.name == "gpufleet_gpu_field_supported" && s.labels.at("gpu") == gpu &&
          s.labels.at("field") == field) {
        return &s;
      }
    }
    return nullptr;
  }

  test::TempFile scenario_{"dcgm-parity.json", kScenario};
  gpu::OpenedProbe opened_;
  std::string text_;
  std::map<std::string, std::string> types_;
  std::vector<Series> series_;
};

TEST_F(DcgmParity, EveryDefaultCounterOnHopperWithDcgmTypeAndLabels) {
  for (const Counter& c : kDefaultCounters) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(types_.count(c.name)) << "no TYPE line";
    EXPECT_EQ(types_.at(c.name), c.type);
    const Series* s = Find(c.name, "0");
    ASSERT_NE(s, nullptr) << text_;
    std::set<std::string> names;
    for (const auto& [k, v] : s->labels) names.insert(k);
    EXPECT_EQ(names, kDcgmLabels);
    EXPECT_EQ(s->labels.at("DCGM_FI_DRIVER_VERSION"), "550.54.15");
    EXPECT_EQ(s->labels.at("device"), "nvidia0");
    EXPECT_EQ(s->labels.at("Hostname"), "node-a");
  }
}

TEST_F(DcgmParity, NewCountersCarryTheFakeGpusValues) {
  const struct {
    const char* name;
    double want;
  } rows[] = {
      {"DCGM_FI_DEV_ENC_UTIL", 10},
      {"DCGM_FI_DEV_DEC_UTIL", 20},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.95},
      {"DCGM_FI_PROF_SM_ACTIVE", 0.80},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.60},
      {"DCGM_FI_PROF_DRAM_ACTIVE", 0.40},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", 1000 * 1024},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", 2000 * 1024},
      // (3000 + 1000) KiB/s over scenario seconds 0..2, in KiB.
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 8000},
      {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", 1},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const Series* s = Find(row.name, "0");
    ASSERT_NE(s, nullptr);
    EXPECT_NEAR(s->value, row.want, 1e-9 + row.want * 1e-6);
  }
  const Series* a100_license = Find("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "1");
  ASSERT_NE(a100_license, nullptr);
  EXPECT_EQ(a100_license->value, 0) << "one unlicensed vGPU instance";
}

TEST_F(DcgmParity, OnAnA100OnlyTheDocumentedExceptionsAreMissing) {
  ASSERT_EQ(Find("DCGM_FI_DEV_GPU_UTIL", "1")->labels.at("modelName"), "NVIDIA A100-SXM4-80GB");
  std::set<std::string> missing;
  for (const Counter& c : kDefaultCounters) {
    if (Find(c.name, "1") == nullptr) missing.insert(c.name);
  }
  EXPECT_EQ(missing, kPreHopperExceptions);
  for (const std::string& field : kPreHopperExceptions) {
    const Series* s = Supported(field, "1");
    ASSERT_NE(s, nullptr) << field;
    EXPECT_EQ(s->value, 0) << field;
    ASSERT_NE(Supported(field, "0"), nullptr);
    EXPECT_EQ(Supported(field, "0")->value, 1) << field;
  }
}

TEST_F(DcgmParity, UnsupportedCallsLeaveTheSeriesOutAndSaySo) {
  for (const char* field :
       {"DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"}) {
    SCOPED_TRACE(field);
    EXPECT_EQ(Find(field, "2"), nullptr) << "never a made-up value";
    const Series* s = Supported(field, "2");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->value, 0);
  }
  EXPECT_NE(Find("DCGM_FI_DEV_GPU_UTIL", "2"), nullptr) << "the rest of the GPU is still there";
}

}  // namespace
}  // namespace gpufleet
