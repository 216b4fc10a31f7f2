// Agent benchmarks (issue targets: a sampling round of 8 GPUs at 1 Hz costs at most 0.2% of one
// core, and /metrics for 8 GPUs x 100 processes renders in at most 1 ms).
//
//  - BM_RenderMetrics/8 GPUs/P processes per GPU: the real RenderMetrics on samples shaped as the
//    NVML probe fills them.
//  - BM_SamplingRound/P: one Sampler round (probe, sanitize, health, history) of the NVML backend
//    on the fake libnvidia-ml.so.1 (FAKE_NVML_DIR) with 8 GPUs and P processes each. The fake's
//    own CPU time (it counts it) is subtracted: counters `own_us` (agent code per round) and
//    `own_core_pct_at_1hz`.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "agent/metrics_text.h"
#include "gpu/gpu_probe.h"
#include "gpu/sampler.h"

namespace {

using namespace gpufleet;

std::vector<gpu::GpuSample> Samples(int gpus, int processes) {
  std::vector<gpu::GpuSample> samples;
  for (int i = 0; i < gpus; ++i) {
    gpu::GpuSample s;
    s.index = i;
    s.uuid = "GPU-5e1c7a52-0d3b-4f60-9a51-7b2f0c1d9e0" + std::to_string(i);
    s.name = "NVIDIA H100 80GB HBM3";
    s.pci_bus_id = "00000000:18:00.0";
    for (auto* r : {&s.gpu_util_pct,
                    &s.mem_util_pct,
                    &s.temperature_c,
                    &s.memory_temperature_c,
                    &s.power_mw,
                    &s.power_limit_mw,
                    &s.sm_clock_mhz,
                    &s.mem_clock_mhz,
                    &s.pcie_tx_kbps,
                    &s.pcie_rx_kbps,
                    &s.pcie_replay_count,
                    &s.retired_pages_single_bit,
                    &s.retired_pages_double_bit,
                    &s.remapped_rows_correctable,
                    &s.remapped_rows_uncorrectable,
                    &s.remapped_rows_failure,
                    &s.mig_mode,
                    &s.encoder_util_pct,
                    &s.decoder_util_pct,
                    &s.vgpu_license_status}) {
      r->Set(static_cast<std::uint32_t>(40 + i));
    }
    for (auto* r :
         {&s.fb_total_bytes, &s.fb_used_bytes, &s.fb_free_bytes, &s.fb_reserved_bytes, &s.energy_mj,
          &s.clock_event_reasons, &s.ecc_corrected_volatile, &s.ecc_uncorrected_volatile,
          &s.ecc_corrected_total, &s.ecc_uncorrected_total, &s.nvlink_tx_kib, &s.nvlink_rx_kib}) {
      r->Set(123456789ULL * static_cast<std::uint64_t>(i + 1));
    }
    for (auto* r : {&s.sm_activity, &s.gr_engine_activity, &s.tensor_activity, &s.dram_activity}) {
      r->Set(0.875);
    }
    std::vector<gpu::GpuProcess> procs;
    for (int p = 0; p < processes; ++p) {
      gpu::GpuProcess proc;
      proc.pid = static_cast<std::uint32_t>(10000 + i * 1000 + p);
      proc.user = "user" + std::to_string(p % 7);
      proc.job_id = "job-" + std::to_string(p / 4);
      proc.command = "python train.py --rank " + std::to_string(p);
      proc.used_memory_bytes.Set(1024ULL * 1024 * static_cast<std::uint64_t>(100 + p));
      proc.sm_util_pct.Set(static_cast<std::uint32_t>(p % 100));
      proc.mem_util_pct.Set(static_cast<std::uint32_t>(p % 50));
      procs.push_back(std::move(proc));
    }
    s.processes.Set(std::move(procs));
    samples.push_back(std::move(s));
  }
  return samples;
}

void BM_RenderMetrics(benchmark::State& state) {
  const auto samples = Samples(8, static_cast<int>(state.range(0)));
  const agent::MetricsContext context{"node-a", "nvml", "550.54.15", "0.1.0", 42};
  std::string out;
  for (auto _ : state) {
    agent::RenderMetrics(samples, context, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_RenderMetrics)->Arg(0)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

// Writes an 8-GPU scenario with `processes` processes per GPU; returns its path.
std::string WriteScenario(int processes) {
  const std::string path = "/tmp/gpufleet-agent-bench-" + std::to_string(processes) + ".json";
  std::ofstream out(path);
  out << "{\"driver_version\": \"550.54.15\", \"gpus\": [";
  for (int g = 0; g < 8; ++g) {
    out << (g ? "," : "") << "{\"name\": \"NVIDIA H100 80GB HBM3\", \"memory_total_mib\": 81559,"
        << "\"memory_reserved_mib\": 512, \"power_limit_w\": 700, \"gpm_supported\": true,"
        << "\"timeline\": [{\"t\": 0, \"gpu_util\": 80, \"mem_util\": 40, \"memory_used_mib\": "
           "30000,"
        << "\"temperature_c\": 60, \"memory_temperature_c\": 70, \"power_w\": 500,"
        << "\"sm_clock_mhz\": 1980, \"mem_clock_mhz\": 2619, \"sm_activity\": 75}],"
        << "\"nvlinks\": [{\"link\": 0, \"active\": true, \"peer_gpu\": " << (g ^ 1) << "}],"
        << "\"processes\": [";
    for (int p = 0; p < processes; ++p) {
      out << (p ? "," : "") << "{\"pid\": " << 200000 + g * 1000 + p
          << ", \"used_memory_mib\": 100, \"sm_util\": 10, \"mem_util\": 5}";
    }
    out << "]}";
  }
  out << "]}";
  return path;
}

double ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void BM_SamplingRound(benchmark::State& state) {
  const char* dir = std::getenv("FAKE_NVML_DIR");
  if (dir == nullptr) {
    state.SkipWithError("set FAKE_NVML_DIR to build/tests/fake_nvml/full");
    return;
  }
  const std::string library = std::string(dir) + "/libnvidia-ml.so.1";
  setenv("FAKE_NVML_SCENARIO", WriteScenario(static_cast<int>(state.range(0))).c_str(), 1);
  gpu::ProbeOptions options;
  options.nvml_library = library;
  gpu::OpenedProbe opened = gpu::OpenProbe(options);
  if (!opened.notice.empty()) {
    state.SkipWithError(opened.notice.c_str());
    return;
  }
  void* fake = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  auto fake_cpu_ns = reinterpret_cast<unsigned long long (*)()>(dlsym(fake, "fakeNvmlSelfCpuNs"));
  gpu::Sampler sampler(*opened.probe, {});
  sampler.SampleOnce();  // warm: buffers sized, /proc cache filled
  const double cpu_start = ThreadCpuNs();
  const unsigned long long fake_start = fake_cpu_ns();
  for (auto _ : state) sampler.SampleOnce();
  const double rounds = static_cast<double>(state.iterations());
  const double total_ns = (ThreadCpuNs() - cpu_start) / rounds;
  const double fake_ns = static_cast<double>(fake_cpu_ns() - fake_start) / rounds;
  state.counters["total_us"] = total_ns / 1e3;
  state.counters["fake_us"] = fake_ns / 1e3;
  state.counters["own_us"] = (total_ns - fake_ns) / 1e3;
  // At 1 Hz a round runs once a second: its CPU time over 1 s of wall time.
  state.counters["own_core_pct_at_1hz"] = (total_ns - fake_ns) / 1e9 * 100.0;
  dlclose(fake);
}
BENCHMARK(BM_SamplingRound)->Arg(4)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
