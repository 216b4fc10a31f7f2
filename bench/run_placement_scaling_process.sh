#!/usr/bin/env bash
# Whole-process scaling of one openb placement run (issue 18, section 4: "x4 pods and nodes ->
# at most x5 time"): `gpufleet sim placement --policy P` on the default trace and on the same
# trace replicated 4 times (nodes and pods, names suffixed -r1..-r3 as sim::ReplicateWorkload
# does), both with the seeded order of --seed 42 (the published order files exist for x1 only).
# Wall time from exec to exit, loading the CSV files included; ROUNDS interleaved rounds (default
# 21) of x1 then x4, medians. BM_OpenbReplicated (bench/run_placement_bench.sh) measures the
# placement alone. Writes bench/results/placement-scaling-process.md.
# Needs build/ (bash scripts/setup.sh) and ../shared/traces.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
traces=../shared/traces/alibaba-openb-2023
[ -f "$traces/openb_node_list_gpu_node.csv" ] || { echo "needs $traces" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$traces" "$work" "${ROUNDS:-21}" "${POLICIES:-fgd bestfit}" <<'PY'
import datetime, os, statistics, subprocess, sys, time
traces, work, rounds, policies = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()

def replicate(src, dst, factor):
    with open(src) as f:
        header, *rows = f.read().splitlines()
    out = [header]
    for r in range(factor):
        suffix = "" if r == 0 else f"-r{r}"
        for row in rows:
            name, rest = row.split(",", 1)
            out.append(f"{name}{suffix},{rest}")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")

files = {}
for factor in (1, 4):
    nodes = f"{work}/nodes-x{factor}.csv"
    pods = f"{work}/pods-x{factor}.csv"
    replicate(f"{traces}/openb_node_list_gpu_node.csv", nodes, factor)
    replicate(f"{traces}/openb_pod_list_default.csv", pods, factor)
    files[factor] = (nodes, pods)

def args(policy, factor, json=False):
    nodes, pods = files[factor]
    a = ["./build/gpufleet", "sim", "placement", "--nodes", nodes, "--pods", pods,
         "--policy", policy, "--seed", "42"]
    return a + (["--json"] if json else [])

lines = ["# Whole-process scaling of one openb placement run\n",
         f"Measured by `bash bench/run_placement_scaling_process.sh` on {os.cpu_count()} CPUs, "
         f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}: "
         "`gpufleet sim placement --seed 42` on the default trace (x1: 1,213 nodes, a list of 8,152 pods drawn until 130% of the GPUs are asked) "
         "and on it replicated 4 times (x4), wall time from exec to exit (CSV loading included), "
         f"{rounds} interleaved rounds, medians.\n",
         "| policy | x1 ms | x4 ms | x4 / x1 | x1 allocated at 130% | x4 allocated at 130% |",
         "|---|---|---|---|---|---|"]
import json
for policy in policies:
    alloc = {}
    for factor in (1, 4):
        out = json.loads(subprocess.run(args(policy, factor, True), check=True,
                                        capture_output=True).stdout)
        alloc[factor] = f'{out["allocation"]["130"]:.2f}% ({int(out["pods"])} pods)'
    times = {1: [], 4: []}
    for _ in range(rounds):
        for factor in (1, 4):
            start = time.perf_counter()
            subprocess.run(args(policy, factor), check=True, capture_output=True)
            times[factor].append((time.perf_counter() - start) * 1000)
    m1, m4 = statistics.median(times[1]), statistics.median(times[4])
    lines.append(f"| {policy} | {m1:.1f} | {m4:.1f} | {m4 / m1:.2f} | {alloc[1]} | {alloc[4]} |")
    print(lines[-1], flush=True)
lines.append("")
lines.append("Goal (issue 18, section 4): x4 in size costs at most x5 in time.\n")
os.makedirs("bench/results", exist_ok=True)
open("bench/results/placement-scaling-process.md", "w").write("\n".join(lines))
PY
