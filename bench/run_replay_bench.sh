#!/usr/bin/env bash
# Measures the time simulator and writes bench/results/replay.md: medians of 3 repetitions of
# the full Philly replay on philly-512 for every queue policy (one core), the trace replicated 2x
# and 4x for three policies, a synthetic 20k-job replay that needs no trace files, and the peak
# RSS of the whole benchmark process. Needs build/ (bash scripts/setup.sh) and ../shared/traces.
# Takes about three minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=bench/results/replay.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --build build --target replay_bench -j2 >/dev/null
/usr/bin/time -f "%M" -o "$tmp/rss" ./build/bench/replay_bench --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out="$tmp/bench.json" \
  --benchmark_out_format=json >"$tmp/bench.txt" 2>&1
python3 - "$tmp" "$out" <<'PY'
import json, sys
tmp, out = sys.argv[1], sys.argv[2]
data = json.load(open(f"{tmp}/bench.json"))
rss_mb = int(open(f"{tmp}/rss").read().strip()) / 1024
med = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") == "median":
        med[b["run_name"].replace("/iterations:1", "")] = b
ctx = data["context"]
def row(name):
    b = med[name]
    return b["real_time"] / 1000, b.get("avg_jct_h", float("nan")), b.get("jobs_per_s", 0)
lines = ["# Time-simulator benchmarks", "",
         f"`bash bench/run_replay_bench.sh` on {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, "
         f"{ctx['date']}; medians of 3 repetitions, one core per replay. Target: the full "
         "82,247-job Philly replay in at most 10 s per policy, peak memory at most 1 GB. Peer: "
         "Pollux's Python simulator replays 1,280 jobs with Tiresias in 34.7 s (about 37 jobs/s).",
         "", "## Philly, all 82,247 jobs, philly-512", "",
         "| policy | replay (s) | jobs/s | avg JCT (h) |", "|---|---|---|---|"]
policies = [n.split("/")[1] for n in med if n.startswith("BM_PhillyReplay/")]
for p in policies:
    s, jct, rate = row(f"BM_PhillyReplay/{p}")
    lines.append(f"| {p} | {s:.2f} | {rate:,.0f} | {jct:.2f} |")
lines += ["", "## Scaling: the trace replicated K times on K x 64 nodes", "",
          "| policy | x1 (s) | x2 (s) | x4 (s) |", "|---|---|---|---|"]
for p in ("fifo", "tiresias", "las-qssf"):
    cells = [f"{row(f'BM_PhillyReplay/{p}')[0]:.2f}"]
    for k in (2, 4):
        cells.append(f"{row(f'BM_PhillyReplicated/{p}/{k}')[0]:.2f}")
    lines.append(f"| {p} | " + " | ".join(cells) + " |")
lines += ["", "## Synthetic: 20,000 generated jobs on philly-512 (no trace files needed)", "",
          "| policy | replay (s) | avg JCT (h) |", "|---|---|---|"]
for p in policies:
    s, jct, _ = row(f"BM_SyntheticReplay/{p}")
    lines.append(f"| {p} | {s:.3f} | {jct:.2f} |")
lines += ["", f"Peak RSS of the benchmark process (all of the above, the x4 trace included): "
          f"{rss_mb:.0f} MB.", ""]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
PY
