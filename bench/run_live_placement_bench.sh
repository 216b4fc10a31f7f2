#!/usr/bin/env bash
# Replays the openb placement experiment through the live controller on simulated nodes and
# writes bench/results/live_placement.md: per trace and seed, per policy, the GPU allocation
# ratio at the end (and in the 100% bucket, the published measure), the pods placed and the wall
# time, live (the controller given the simulator's workload profile, and learning it online)
# beside the simulator's figure for the same arrival order.
# Needs build/bench/live_placement_bench (cmake --build build --target live_placement_bench) and
# ../shared/traces; skips with a message when the traces are absent.
# POINTS overrides the (pods file:seed) points; POLICIES the policies. Each point runs under the
# shared build lock (about 3 minutes each on 2 cores), so builds of others wait only that long.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
traces=../shared/traces/alibaba-openb-2023
out=${OUT:-bench/results/live_placement.md}
bin=./build/bench/live_placement_bench
if [ ! -f "$traces/openb_node_list_gpu_node.csv" ]; then
  echo "skipped: the openb traces are not at $traces" >&2
  exit 0
fi
[ -x "$bin" ] || { echo "needs $bin (cmake --build build --target live_placement_bench)" >&2; exit 1; }
points=${POINTS:-"openb_pod_list_default.csv:42 openb_pod_list_default.csv:43 openb_pod_list_default.csv:44 openb_pod_list_gpushare40.csv:42 openb_pod_list_multigpu20.csv:42 openb_pod_list_gpuspec10.csv:42"}
policies=${POLICIES:-gpupacking,bestfit,dotprod,gpuclustering,fgd,fgd-balance}
# The store lives on tmpfs when there is one: the bench measures placement, not fsync.
[ -d /dev/shm ] && export TMPDIR=/dev/shm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lock() { if command -v flock >/dev/null; then flock /tmp/gpufleet-build.lock nice -n 5 "$@"; else "$@"; fi; }
first=1
for point in $points; do
  pods=${point%%:*}
  seed=${point##*:}
  echo "== $pods seed $seed" >&2
  lock "$bin" --traces "$traces" --pods "$pods" --seeds "$seed" --policies "$policies" \
    >"$tmp/point.csv"
  if [ $first = 1 ]; then head -1 "$tmp/point.csv" >"$tmp/all.csv"; first=0; fi
  tail -n +2 "$tmp/point.csv" | tee -a "$tmp/all.csv" >&2
done
cp "$tmp/all.csv" "${out%.md}.csv"
python3 - "$tmp/all.csv" "$out" "$(nproc)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" <<'PY'
import csv, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
out, cpus, when = sys.argv[2], sys.argv[3], sys.argv[4]
L = []
L.append("# Fragmentation-aware placement, live: the openb experiment through the controller\n")
L.append(f"Measured by `bash bench/run_live_placement_bench.sh` on {cpus} CPUs, {when}. "
         "Every openb node (1,213 nodes, 6,212 GPUs of 7 models, with their CPUs and memory) "
         "registers with a live `Controller` as a remote agent through `Heartbeat`; the pods of "
         "the published arrival order (`orders/<trace>.seed<N>.txt`: the trace shuffled, then "
         "inflated to 130% of GPU capacity) are submitted one by one, each followed by one "
         "scheduling pass, and a pod the pass could not place is cancelled (the experiment's "
         "dropped pod); pods never end. The figures are read back from what each node is told "
         "to run (its heartbeat reply), checked against every node's GPUs, CPU and memory. "
         "Beside them, the simulator's `RunPlacement` on the same order in the same process.\n")
L.append("- **alloc end**: GPU milli allocated / capacity after the last arrival (%).")
L.append("- **alloc@100**: the published measure, allocation ratio in the bucket where arrived "
         "GPU demand is 100% of capacity.")
L.append("- **live (given)**: the controller given the simulator's workload profile "
         "(`ControllerOptions::workload_profile`); **same** counts pods placed on the same node "
         "and GPUs as in the simulator.")
L.append("- **live (learnt)**: the default live behaviour: fgd and fgd-balance learn the profile "
         "from the jobs as they arrive (`sched::WorkloadLearner`, rebuilt after every 1/8 more "
         "jobs); the other policies ignore it.")
L.append("- **live s**: wall seconds of the live replay (registration, submits, passes, the store "
         "on tmpfs), one core; **sim ms**: the simulator's run.\n")
by = defaultdict(list)
for r in rows:
    by[(r["pods"], r["seed"])].append(r)
for (pods, seed), rs in by.items():
    L.append(f"## {pods.replace('.csv','')}, seed {seed} ({rs[0]['events']} pods)\n")
    L.append("| policy | sim alloc end | live (given) alloc end | live (learnt) alloc end | "
             "sim alloc@100 | live (given) alloc@100 | live (learnt) alloc@100 | "
             "placed sim / given / learnt | same as sim (given) | sim ms | live s (given) | "
             "live s (learnt) | problem |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        L.append(f"| {r['policy']} | {r['sim_alloc_end']} | {r['live_given_alloc_end']} | "
                 f"{r['live_learnt_alloc_end']} | {r['sim_alloc_100']} | "
                 f"{r['live_given_alloc_100']} | {r['live_learnt_alloc_100']} | "
                 f"{r['sim_placed']} / {r['live_given_placed']} / {r['live_learnt_placed']} | "
                 f"{r['live_given_same']} | {float(r['sim_s'])*1000:.0f} | "
                 f"{r['live_given_s']} | {r['live_learnt_s']} | {r['problem'] or '-'} |")
    L.append("")
# Ranking per point by the live (learnt) allocation at the end.
L.append("## Ranking (live, learnt profile, allocation at the end)\n")
L.append("| trace, seed | best | second | gpupacking | fgd-balance - gpupacking (points) |")
L.append("|---|---|---|---|---|")
for (pods, seed), rs in by.items():
    ranked = sorted(rs, key=lambda r: -float(r["live_learnt_alloc_end"] or 0))
    g = next((r for r in rs if r["policy"] == "gpupacking"), None)
    b = next((r for r in rs if r["policy"] == "fgd-balance"), None)
    d = (f"{float(b['live_learnt_alloc_end']) - float(g['live_learnt_alloc_end']):+.2f}"
         if g and b else "-")
    L.append(f"| {pods.replace('.csv','')}, {seed} | {ranked[0]['policy']} "
             f"({ranked[0]['live_learnt_alloc_end']}) | {ranked[1]['policy']} "
             f"({ranked[1]['live_learnt_alloc_end']}) | "
             f"{g['live_learnt_alloc_end'] if g else '-'} | {d} |")
L.append("")
L.append("Raw CSV: `bench/results/live_placement.csv`.\n")
# The hand-written conclusion below the marker survives a re-run.
marker = "<!-- conclusion: kept by the script -->"
try:
    old = open(out).read()
    if marker in old:
        L.append(old[old.index(marker):].rstrip("\n"))
except FileNotFoundError:
    pass
open(out, "w").write("\n".join(L) + "\n")
print(f"wrote {out}")
PY
