#!/usr/bin/env bash
# Measures the placement experiment and writes bench/results/placement.md:
#  - Google Benchmark medians of one whole run per policy on the default openb trace (one core),
#    and on the trace replicated 2x and 4x (nodes and pods);
#  - peak RSS of one `gpufleet sim placement` process (FGD, default trace);
#  - wall time of the whole published sweep (6 policies x 10 seeds x 4 traces) on all cores.
# Needs build/ (bash scripts/setup.sh) and ../shared/traces. Takes about two minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
traces=../shared/traces/alibaba-openb-2023
out=bench/results/placement.md
[ -f "$traces/openb_node_list_gpu_node.csv" ] || { echo "needs $traces" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

./build/bench/placement_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out="$tmp/bench.json" --benchmark_out_format=json >"$tmp/bench.txt" 2>&1

/usr/bin/time -f "%M" -o "$tmp/rss" ./build/gpufleet sim placement \
  --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$traces/openb_pod_list_default.csv" \
  --policy fgd --order "$traces/orders/openb_pod_list_default.seed42.txt" >/dev/null

start=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$tmp/sweep_rss" ./build/gpufleet sim placement-report --out '' \
  --policies random,dotprod,gpuclustering,gpupacking,bestfit,fgd --check >"$tmp/sweep.txt"
end=$(date +%s.%N)

python3 - "$tmp" "$out" "$start" "$end" <<'PY'
import json, sys
tmp, out, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
data = json.load(open(f"{tmp}/bench.json"))
rows = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    rows[b["run_name"]] = b
def ms(name):
    b = rows.get(name)
    return None if b is None else b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6
ctx = data["context"]
lines = []
lines.append("# Placement benchmark results\n")
lines.append(f"Measured by `bash bench/run_placement_bench.sh` on {ctx.get('num_cpus')} CPUs "
             f"({ctx.get('mhz_per_cpu')} MHz), {ctx.get('date')}. Medians of 5 repetitions; one "
             "iteration is a whole run (build the cluster, place every pod, summarize the curves) on "
             "one core; reading the CSV files is not timed.\n")
lines.append("## One run of the default trace to 130% (10,866 pods, 1,213 nodes)\n")
lines.append("| policy | median ms | node scores computed |")
lines.append("|---|---|---|")
for p in ["random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "fgd_balance"]:
    b = rows.get(f"BM_OpenbDefault/{p}")
    if b:
        lines.append(f"| {p.replace('_', '-')} | {ms(f'BM_OpenbDefault/{p}'):.1f} | {int(b.get('scores_computed', 0)):,} |")
fgd = ms("BM_OpenbDefault/fgd")
lines.append("")
lines.append(f"Target: FGD <= 150 ms. Measured: **{fgd:.0f} ms**. Reference points from the issue: "
             f"the published Go simulator about 3,600 s, a plain Python re-implementation about 5 s "
             f"for FGD and 3 s for best fit (so about {5000 / fgd:.0f}x and "
             f"{3000 / ms('BM_OpenbDefault/bestfit'):.0f}x faster than the Python one).\n")
lines.append("## Scaling: the default trace replicated (nodes and pods x k), seeded order\n")
lines.append("| policy | x1 ms | x2 ms | x4 ms | x2 / x1 | x4 / x1 |")
lines.append("|---|---|---|---|---|---|")
for p in ["fgd", "bestfit"]:
    v = [ms(f"BM_OpenbReplicated/{p}/{k}") for k in (1, 2, 4)]
    if all(v):
        lines.append(f"| {p} | {v[0]:.0f} | {v[1]:.0f} | {v[2]:.0f} | {v[1]/v[0]:.1f} | {v[2]/v[0]:.1f} |")
lines.append("")
lines.append("Why the curve: every arriving pod is filtered against every node and the best node is "
             "the argmax over the feasible ones, so placement costs about pods x feasible nodes: "
             "replicating the trace k times multiplies both, and the time grows between k and k^2 "
             "(k^2 for the cheap scores, where the scan dominates). The expensive part, computing "
             "node scores, grows only about linearly (see `scores_computed` below: a node's score "
             "is recomputed only after the node changes, and nodes in identical states share one "
             "computation), and nodes a pod shape cannot fit drop out of its scan until they "
             "change. An incremental per-shape ranking (a balanced tree per shape) was estimated and "
             "rejected: with ~150 shapes each change must be re-ranked for every shape, which costs "
             "more than the 4 ns per node of the scan at these sizes.\n")
rss = int(open(f"{tmp}/rss").read().split()[-1])
sweep_rss = int(open(f"{tmp}/sweep_rss").read().split()[-1])
sweep = open(f"{tmp}/sweep.txt").read().strip().splitlines()
runs_line = next((l for l in sweep if " runs (" in l), "")
lines.append("## Memory and the whole sweep\n")
lines.append(f"- Peak RSS of one `gpufleet sim placement` process (FGD, default trace): **{rss/1024:.1f} MiB**.")
lines.append(f"- The published sweep, 6 policies x 10 seeds x 4 traces with the published orders, "
             f"all cores, `gpufleet sim placement-report --check`: **{end-start:.1f} s** wall "
             f"(target <= 120 s), peak RSS {sweep_rss/1024:.1f} MiB. Its own line: `{runs_line}`")
match = [l for l in sweep if l.startswith(("deterministic policies", "fragmentation ratio", "random fit"))]
for l in match:
    lines.append(f"- {l}")
lines.append("")
lines.append("Raw Google Benchmark output:\n")
lines.append("```")
lines.extend(open(f"{tmp}/bench.txt").read().strip().splitlines())
lines.append("```")
open(out, "w").write("\n".join(lines) + "\n")
print(f"wrote {out}")
PY
