#!/usr/bin/env bash
# Measures the node agent and writes bench/results/agent.md:
#  - Google Benchmark medians (5 repetitions) of rendering /metrics and of one sampling round of
#    8 GPUs on the fake NVML library, with the fake's own CPU time subtracted;
#  - the real `gpufleet agent` process sampling 8 GPUs (fake NVML, 4 processes each) at 1 Hz for
#    SECONDS (default 60): CPU time from /proc/PID/stat minus the fake library's share, and RSS;
#    next to a baseline measured in the same run: the same binary serving no GPUs.
# Needs build/ with the tests configured (bash scripts/setup.sh --tests).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${SECONDS_TO_RUN:-60}
fake_dir=build/tests/fake_nvml/full
out=bench/results/agent.md
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
cmake --build build --target gpufleet agent_bench fake_nvml_full -j2 >/dev/null

FAKE_NVML_DIR=$fake_dir ./build/bench/agent_bench --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_out="$tmp/bench.json" \
  --benchmark_out_format=json >"$tmp/bench.txt" 2>&1

# An 8-GPU scenario with 4 processes per GPU, written by the benchmark above.
scenario=/tmp/gpufleet-agent-bench-4.json
[ -f "$scenario" ] || { echo "missing $scenario" >&2; exit 1; }

# Starts an agent; prints its pid.
start_agent() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  echo $!
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }

agent=$(LD_LIBRARY_PATH=$fake_dir FAKE_NVML_SCENARIO=$scenario start_agent "$tmp/agent.log" \
  ./build/gpufleet agent --listen 127.0.0.1:0 --interval 1)
pids+=("$agent")
floor=$(start_agent "$tmp/floor.log" ./build/gpufleet agent --listen 127.0.0.1:0 --simulated-gpus 0)
pids+=("$floor")
sleep 3  # past start-up
a0=$(ticks "$agent"); f0=$(ticks "$floor")
sleep "$seconds"
a1=$(ticks "$agent"); f1=$(ticks "$floor")
port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/agent.log")
curl -sf "http://127.0.0.1:$port/metrics" -o "$tmp/metrics.txt"
rounds=$(awk '/^gpufleet_agent_sample_rounds_total/ { print $2 }' "$tmp/metrics.txt")
echo "$a0 $a1 $f0 $f1 $(rss_kb "$agent") $(hwm_kb "$agent") $(rss_kb "$floor") $(hwm_kb "$floor") $rounds $(getconf CLK_TCK)" >"$tmp/proc.txt"

python3 - "$tmp" "$out" "$seconds" <<'PY'
import json, sys
tmp, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
data = json.load(open(f"{tmp}/bench.json"))
med = {b["run_name"]: b for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
a0, a1, f0, f1, rss, hwm, frss, fhwm, rounds, hz = map(float, open(f"{tmp}/proc.txt").read().split())
s4 = med["BM_SamplingRound/4"]
fake_s = s4["fake_us"] / 1e6 * rounds           # the fake library's CPU in the agent's window
agent_cpu = (a1 - a0) / hz
floor_cpu = (f1 - f0) / hz
own_pct = (agent_cpu - fake_s) / seconds * 100
ctx = data["context"]
lines = [
    "# Node agent benchmarks",
    "",
    f"`bash bench/run_agent_bench.sh` on {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, "
    f"{ctx['date']}; medians of 5 repetitions. GPUs are the fake `libnvidia-ml.so.1` "
    "(tests/fake_nvml): this measures gpufleet's own code; a real driver's calls cost more and "
    "are not ours to count (see docs/agent/README.md for the real-GPU run).",
    "",
    "## Google Benchmark",
    "",
    "| benchmark | median | target | counters |",
    "|---|---|---|---|",
]
for name, target in [("BM_RenderMetrics/0", ""), ("BM_RenderMetrics/10", ""),
                     ("BM_RenderMetrics/100", "<= 1000 us (8 GPUs x 100 processes)"),
                     ("BM_SamplingRound/4", ""), ("BM_SamplingRound/100", "")]:
    b = med[name]
    counters = ", ".join(f"{k} {b[k]:.4g}" for k in
                         ("bytes", "total_us", "fake_us", "own_us", "own_core_pct_at_1hz") if k in b)
    lines.append(f"| {name} | {b['real_time']:.1f} {b['time_unit']} | {target} | {counters} |")
lines += [
    "",
    "`BM_RenderMetrics/N`: 8 GPUs with N processes each. `BM_SamplingRound/N`: one sampler round "
    "of 8 GPUs with N processes each; `own_us` = thread CPU time minus the time spent inside the "
    "fake library (which it counts itself).",
    "",
    f"## The `gpufleet agent` process, {seconds:.0f} s at 1 Hz, 8 GPUs (fake NVML)",
    "",
    "| process | CPU over the window | of one core | RSS | peak RSS |",
    "|---|---|---|---|---|",
    f"| agent, 8 GPUs x 4 processes | {agent_cpu:.2f} s (fake NVML's share {fake_s:.3f} s) | "
    f"{agent_cpu / seconds * 100:.3f}% total, **{own_pct:.3f}% own** (target <= 0.2%) | "
    f"{rss / 1024:.1f} MiB | **{hwm / 1024:.1f} MiB** (target <= 15 MB) |",
    f"| baseline: same binary, no GPUs | {floor_cpu:.2f} s | {floor_cpu / seconds * 100:.3f}% | "
    f"{frss / 1024:.1f} MiB | {fhwm / 1024:.1f} MiB |",
    "",
    f"Rounds completed: {rounds:.0f}. CPU times come from /proc/PID/stat in clock ticks "
    f"(1/{hz:.0f} s), so the whole-process figure is coarse; the Google Benchmark figure above is "
    "the precise per-round cost. For context: dcgm-exporter users report 131% CPU (its issue "
    "#311) and memory leaks (#702); `nvidia-smi dmon` runs in about 5 MiB.",
    "",
]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
PY
