// What the advisor costs (issue 13's speed targets), on the real code paths:
//  - BM_BuildSeries: the controller's per-sample work, UsageSeriesBuilder fed one hour of 1 Hz
//    samples of 8 GPUs and one rank's host counters (per job-hour);
//  - BM_Advise/H: advising a job with H hours of samples (target: <= 1 ms per hour);
//  - BM_EncodeDecode/H: the stored form, with its size per job-hour as a counter (target:
//    <= 1 KB per job-hour);
//  - BM_ReportQuery / BM_Report: `gpufleet report` over 100,000 ended jobs: the store's query
//    (SQLite, a temporary directory), whole and in pages of 10,000 as the route reads it, and the
//    grouping (target: <= 1 s together).
// Series are made with a seeded generator: a training-like SM level with noise, periodic dips,
// host CPU near a limit; what the advisor finds does not matter here, only what it costs.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "advise/advisor.h"
#include "advise/usage_series.h"
#include "controller/advice_routes.h"
#include "store/store.h"

namespace {

using namespace gpufleet;

// When the report store's first job ended; the i-th ended i ms later.
constexpr int64_t kFirstEndMs = 3'600'000;

advise::JobUsage MakeSeries(int hours, int gpus, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 6);
  advise::UsageSeriesBuilder b(0, 8000, 64 * 1024);
  core::HostUsage host;
  host.source = core::UsageSource::kCgroupV1;
  for (core::UsageFigure f : {core::UsageFigure::kCpuUsageUs, core::UsageFigure::kCpuWaitUs,
                              core::UsageFigure::kCpuThrottledUs, core::UsageFigure::kIoReadBytes,
                              core::UsageFigure::kIoWriteBytes, core::UsageFigure::kIoBlockedUs,
                              core::UsageFigure::kMemoryCurrentBytes, core::UsageFigure::kOomKills}) {
    host.set(f, 0);
  }
  for (int64_t s = 0; s < int64_t{hours} * 3600; ++s) {
    const double level = (s % 600) < 30 ? 5 : 70;  // a checkpoint dip every 10 minutes
    for (int g = 0; g < gpus; ++g) {
      advise::GpuReading r;
      r.index = g;
      r.sm_pct = std::clamp(level + noise(rng) - g, 0.0, 100.0);
      r.membw_pct = r.sm_pct / 2;
      r.mem_used_mib = 40000;
      r.mem_total_mib = 81559;
      r.pcie_mb_s = 800;
      r.power_w = 300 + 3 * r.sm_pct;
      r.power_limit_w = 700;
      r.has_reasons = true;
      b.AddGpu("node-a", r, s * 1000);
    }
    auto add = [&](core::UsageFigure f, int64_t v) { host.set(f, host.get(f) + v); };
    add(core::UsageFigure::kCpuUsageUs, 7'000'000);
    add(core::UsageFigure::kCpuWaitUs, 100'000);
    add(core::UsageFigure::kIoReadBytes, 50'000'000);
    host.set(core::UsageFigure::kMemoryCurrentBytes, int64_t{20} << 30);
    b.AddHost(0, host, s * 1000);
  }
  return b.Snapshot();
}

advise::JobFacts Facts(int hours, int gpus) {
  advise::JobFacts f;
  f.gpus = gpus;
  f.cpu_milli = 8000;
  f.memory_mib = 64 * 1024;
  f.gpu_model = "H100-80GB";
  f.run_ms = int64_t{hours} * 3'600'000;
  f.ended = true;
  return f;
}

void BM_BuildSeries(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(MakeSeries(1, 8, 1));
  state.SetLabel("one job-hour: 8 GPUs x 3600 samples + 3600 host samples");
}
BENCHMARK(BM_BuildSeries)->Unit(benchmark::kMillisecond);

void BM_Advise(benchmark::State& state) {
  const int hours = static_cast<int>(state.range(0));
  const advise::JobUsage usage = MakeSeries(hours, 8, 2);
  const advise::JobFacts facts = Facts(hours, 8);
  for (auto _ : state) benchmark::DoNotOptimize(advise::Advise(usage, facts));
  state.counters["hours"] = hours;  // divide the time by this for the cost per job-hour
}
BENCHMARK(BM_Advise)->Arg(1)->Arg(24)->Arg(168)->Unit(benchmark::kMicrosecond);

void BM_EncodeDecode(benchmark::State& state) {
  const int hours = static_cast<int>(state.range(0));
  const advise::JobUsage usage = MakeSeries(hours, 8, 3);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string stored = advise::EncodeUsage(usage);
    bytes = stored.size();
    benchmark::DoNotOptimize(advise::DecodeUsage(stored));
  }
  state.counters["bytes_per_job_hour"] = static_cast<double>(bytes) / hours;
}
BENCHMARK(BM_EncodeDecode)->Arg(1)->Arg(24)->Unit(benchmark::kMicrosecond);

// A store with `n` ended jobs, each with a usage record (made once per process).
store::Store& ReportStore(int n) {
  static std::unique_ptr<store::Store> made;
  static std::filesystem::path dir;
  if (made) return *made;
  dir = std::filesystem::temp_directory_path() /
        ("gpufleet-advise-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  made = store::OpenSqliteStore(dir.string()).value();
  std::vector<store::JobUsageRecord> usage;
  std::vector<store::TransitionRequest> moves;
  const std::string series = advise::EncodeUsage(MakeSeries(1, 2, 4));
  for (int i = 0; i < n; ++i) {
    store::JobRecord j;
    j.user = "user" + std::to_string(i % 50);
    j.queue = i % 3 == 0 ? "interactive" : "batch";
    j.argv = {"train"};
    j.submit_ms = 1000;
    const int64_t id = made->SubmitJob(j).value();
    store::JobUpdate run;
    run.start_ms = 2000;
    store::JobUpdate done;
    done.end_ms = kFirstEndMs + i;
    done.reason = i % 20 == 0 ? "idle for 30 min" : "";
    moves.push_back({id, store::JobState::kPending, store::JobState::kScheduled, {}});
    moves.push_back({id, store::JobState::kScheduled, store::JobState::kRunning, run});
    moves.push_back({id, store::JobState::kRunning,
                     i % 20 == 0 ? store::JobState::kCancelled : store::JobState::kSucceeded,
                     done});
    usage.push_back({id, series, i % 4 == 0 ? "input_bound_cpu:warning:0.420,idle:info:0.100"
                                            : "efficient:info:0.000",
                     i % 2 == 0 ? "H100-80GB" : "A100-80GB", 2.0, 1.3, 3'600'000});
    if (moves.size() >= 3000) {
      (void)made->TransitionAll(moves, 3'600'000);
      (void)made->PutJobUsage(usage);
      moves.clear();
      usage.clear();
    }
  }
  (void)made->TransitionAll(moves, 3'600'000);
  (void)made->PutJobUsage(usage);
  return *made;
}

void BM_ReportQuery(benchmark::State& state) {
  store::Store& s = ReportStore(static_cast<int>(state.range(0)));
  std::size_t rows = 0;
  for (auto _ : state) {
    auto got = s.ReportRows(kFirstEndMs + state.range(1));
    rows = got.value().size();
    benchmark::DoNotOptimize(got);
  }
  state.counters["rows"] = static_cast<double>(rows);
}
// Second argument: the report's window leaves out the jobs that ended first (0: all of them).
BENCHMARK(BM_ReportQuery)
    ->Args({100'000, 0})
    ->Args({100'000, 50'000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// The same rows as GET /v1/report reads them: pages of 10,000 by id, the store's lock released
// between pages.
void BM_ReportQueryPaged(benchmark::State& state) {
  store::Store& s = ReportStore(static_cast<int>(state.range(0)));
  std::size_t rows = 0;
  for (auto _ : state) {
    rows = 0;
    for (int64_t after = 0;;) {
      auto got = s.ReportRows(kFirstEndMs + state.range(1), "", after, 10'000);
      rows += got.value().size();
      if (got.value().size() < 10'000) break;
      after = got.value().back().id;
    }
  }
  state.counters["rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_ReportQueryPaged)
    ->Args({100'000, 0})
    ->Args({100'000, 50'000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void BM_Report(benchmark::State& state) {
  store::Store& s = ReportStore(static_cast<int>(state.range(0)));
  const auto rows = s.ReportRows(0).value();
  for (auto _ : state) benchmark::DoNotOptimize(controller::FleetReport(rows, "user").dump());
  state.counters["rows"] = static_cast<double>(rows.size());
}
BENCHMARK(BM_Report)->Arg(100'000)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
