// What a job's cgroups cost the agent on this machine's real hierarchies (v1 or v2), per job:
// preparing them (with and without limits), reading the job's usage, and releasing them (kill
// what is left, rmdir). The launch path pays Prepare + a final ReadUsage + Release once per job.
// Needs root and writable cgroups; skips every benchmark with a message otherwise.
#include <benchmark/benchmark.h>

#include "agent/cgroup_limits.h"

namespace {

using gpufleet::agent::CgroupLimits;
using gpufleet::agent::JobLimits;

CgroupLimits& Cgroups() {
  static CgroupLimits cgroups = CgroupLimits::Detect("", "bench0000");
  return cgroups;
}

void PrepareAndRelease(benchmark::State& state, JobLimits limits) {
  CgroupLimits& c = Cgroups();
  if (!c.available()) {
    state.SkipWithError(("no usable cgroups here: " + c.why_unavailable()).c_str());
    return;
  }
  int64_t id = 1;
  for (auto _ : state) {
    auto procs = c.Prepare(id, limits);
    if (!procs) {
      state.SkipWithError(procs.error().c_str());
      return;
    }
    c.Release(id, 0);
    ++id;
  }
  state.SetLabel(std::string(c.Kind()));
}

void BM_PrepareAndReleaseUnlimited(benchmark::State& state) { PrepareAndRelease(state, {}); }
void BM_PrepareAndReleaseLimited(benchmark::State& state) {
  PrepareAndRelease(state, JobLimits{500, 1024});
}

void BM_ReadUsage(benchmark::State& state) {
  CgroupLimits& c = Cgroups();
  if (!c.available() || !c.Prepare(424242, {}).ok()) {
    state.SkipWithError("no usable cgroups here");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(c.ReadUsage(424242));
  c.Release(424242, 0);
  state.SetLabel(std::string(c.Kind()));
}

BENCHMARK(BM_PrepareAndReleaseUnlimited)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrepareAndReleaseLimited)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadUsage)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  Cgroups().RemoveJobsCgroupIfEmpty();
  benchmark::Shutdown();
  return 0;
}
