#!/usr/bin/env bash
# Measures the placement experiment and writes bench/results/placement.md:
#  - Google Benchmark medians of one whole run per policy on the default openb trace (one core),
#    and on the trace replicated 2x and 4x (nodes and pods);
#  - peak RSS of one `gpufleet sim placement` process (FGD, default trace);
#  - wall time of the whole published sweep (6 policies x 10 seeds x 4 traces) on all cores.
#  - with BASELINE=DIR (a folder holding placement_bench and gpufleet built from an earlier
#    commit): the same benchmarks and whole-process times for both, interleaved round by round
#    in this run (the machine's speed drifts within minutes), and whether every pod's decision is
#    the same (`sim placement --decisions`, 4 traces x 6 policies x 3 published orders).
# Every benchmark runs with the heap settings the gpufleet process uses (cli/heap_tuning.cpp:
# blocks up to 32 MiB come from the heap, which is not trimmed): without them each iteration's
# large vectors are fresh mappings, faulted in again on every iteration, which the one run of a
# process pays only once.
# Needs build/ (bash scripts/setup.sh) and ../shared/traces. Takes about three minutes (six with
# BASELINE). ROUNDS (default 5) sets the rounds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
traces=../shared/traces/alibaba-openb-2023
out=bench/results/placement.md
[ -f "$traces/openb_node_list_gpu_node.csv" ] || { echo "needs $traces" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456
rounds=${ROUNDS:-5}
for round in $(seq "$rounds"); do
  ./build/bench/placement_bench --benchmark_out="$tmp/bench.$round.json" \
    --benchmark_out_format=json >"$tmp/bench.txt" 2>&1
  if [ -n "${BASELINE:-}" ]; then
    "$BASELINE/placement_bench" --benchmark_filter='BM_OpenbDefault|BM_OpenbReplicated' \
      --benchmark_out="$tmp/base.$round.json" --benchmark_out_format=json >/dev/null 2>&1
  fi
done
unset GLIBC_TUNABLES

/usr/bin/time -f "%M" -o "$tmp/rss" ./build/gpufleet sim placement \
  --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$traces/openb_pod_list_default.csv" \
  --policy fgd --order "$traces/orders/openb_pod_list_default.seed42.txt" >/dev/null

# Whole-process wall time of one FGD run (median of 9), and the baseline's when given, the two
# runs interleaved.
proc_once() {  # binary -> seconds
  /usr/bin/time -f "%e" "$1" sim placement --nodes "$traces/openb_node_list_gpu_node.csv" \
    --pods "$traces/openb_pod_list_default.csv" --policy fgd \
    --order "$traces/orders/openb_pod_list_default.seed42.txt" 2>&1 >/dev/null
}
: >"$tmp/proc.all"
: >"$tmp/base_proc.all"
for _ in 1 2 3 4 5 6 7 8 9; do
  proc_once ./build/gpufleet >>"$tmp/proc.all"
  if [ -n "${BASELINE:-}" ]; then proc_once "$BASELINE/gpufleet" >>"$tmp/base_proc.all"; fi
done
sort -n "$tmp/proc.all" | sed -n 5p >"$tmp/proc"
: >"$tmp/base.txt"
if [ -n "${BASELINE:-}" ]; then
  sort -n "$tmp/base_proc.all" | sed -n 5p >"$tmp/base_proc"
  same=0 differ=0
  for trace in default gpushare40 multigpu20 gpuspec10; do
    for policy in dotprod gpuclustering gpupacking bestfit fgd fgd-balance; do
      for seed in 42 46 50; do
        for bin in "$BASELINE/gpufleet" ./build/gpufleet; do
          "$bin" sim placement --nodes "$traces/openb_node_list_gpu_node.csv" \
            --pods "$traces/openb_pod_list_$trace.csv" --policy "$policy" \
            --order "$traces/orders/openb_pod_list_$trace.seed$seed.txt" \
            --decisions "$tmp/d.$(basename "$(dirname "$bin")")" >/dev/null
        done
        if cmp -s "$tmp/d.$(basename "$BASELINE")" "$tmp/d.build"; then same=$((same + 1)); else differ=$((differ + 1)); fi
      done
    done
  done
  echo "$same $differ" >"$tmp/base.txt"
fi

start=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$tmp/sweep_rss" ./build/gpufleet sim placement-report --out '' \
  --policies random,dotprod,gpuclustering,gpupacking,bestfit,fgd --check >"$tmp/sweep.txt"
end=$(date +%s.%N)

python3 - "$tmp" "$out" "$start" "$end" "$rounds" <<'PY'
import glob, json, os, statistics, sys
tmp, out, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rounds = int(sys.argv[5])
def medians(prefix):
    """Per benchmark: its first round's entry, with real_time the median over the rounds (ms)."""
    times, first, ctx = {}, {}, None
    for path in sorted(glob.glob(f"{tmp}/{prefix}.*.json")):
        data = json.load(open(path))
        ctx = ctx or data["context"]
        for b in data["benchmarks"]:
            t = b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6
            times.setdefault(b["run_name"], []).append(t)
            first.setdefault(b["run_name"], b)
    for name, b in first.items():
        b["real_time"] = statistics.median(times[name])
    return first, ctx
rows, ctx = medians("bench")
def ms(name):
    b = rows.get(name)
    return None if b is None else b["real_time"]
lines = []
lines.append("# Placement benchmark results\n")
lines.append(f"Measured by `bash bench/run_placement_bench.sh` on {ctx.get('num_cpus')} CPUs "
             f"({ctx.get('mhz_per_cpu')} MHz), {ctx.get('date')}. Medians of {rounds} rounds (with a "
             "BASELINE, each round runs this build's benchmarks, then the baseline's); one "
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
lines.append("| policy | x1 ms | x2 ms | x4 ms | x2 / x1 | x4 / x1 | nodes re-ranked x1 | x4 | x4 / x1 |")
lines.append("|---|---|---|---|---|---|---|---|---|")
for p in ["fgd", "bestfit"]:
    v = [ms(f"BM_OpenbReplicated/{p}/{k}") for k in (1, 2, 4)]
    r = [rows.get(f"BM_OpenbReplicated/{p}/{k}", {}).get("nodes_reranked", 0) for k in (1, 4)]
    if all(v) and all(r):
        lines.append(f"| {p} | {v[0]:.0f} | {v[1]:.0f} | {v[2]:.0f} | {v[1]/v[0]:.1f} | {v[2]/v[0]:.1f} "
                     f"| {int(r[0]):,} | {int(r[1]):,} | {r[1]/r[0]:.2f} |")
lines.append("")
lines.append("Nodes re-ranked counts the work that grows with the cluster (`Placer::nodes_reranked`: "
             "a shape looking again at a node changed since its last pod), the same in every run; "
             "the times also carry this machine's drift (x4 / x1 of the same build has read 4.7 "
             "to 5.5 within one hour).\n")
lines.append("How it scales: the placer keeps, per pod shape, the nodes that fit it ranked "
             "(score, then tie-break rank), and re-ranks only the nodes that changed since that "
             "shape was last placed, each once, found through a recency list of changed nodes "
             "(`src/sched/placer.h`). A node is held once per shape and moved in place when its "
             "score changes: for the published policies, whose scores are whole numbers 0..100, "
             "in one bit set per score (`node_rank_buckets.h`: a few word writes per change, two "
             "word scans for the best, whatever the node count); for fgd-balance (fractional "
             "scores), and for a shape that meets a score outside 0..100, in an indexed 4-ary "
             "heap (`node_rank_heap.h`). Node states are interned (`flat_interner.h`), so "
             "identical nodes share one score per shape. The work per pod is the nodes changed since its shape's last pod, not a "
             "scan of the cluster. What grows faster than k is the shapes seen only once or "
             "twice in the default trace (40 of its 151 shapes). Counted with temporary "
             "instrumentation: every other shape walks as many changed nodes per pod at x4 as at "
             "x1 (4.0-4.4x the re-ranks in all); the later pods of those 40 each walk about 780 "
             "changed nodes at x4 against 170 at x1 (21x the re-ranks); all together, 5.2x (the "
             "table's last column). Most of those nodes no longer fit the shape; skipping the "
             "ones that only lost resources since (without reading them) left the time "
             "unchanged, and walking the shape's held nodes instead would not be shorter (they "
             "fit most nodes), so neither is in the tree. Tables 4x larger also miss the caches "
             "more (node states, the score memo, the rankings); a memo per shape instead of one "
             "for all (so a frequent shape's scores share cache lines) measured 76.4 ms at x4 "
             "against 76.0 ms without, 7 rounds interleaved, and is not in the tree either. "
             "A policy's figure of the node alone (FGD's fragmentation "
             "before the placement, `PlacementPolicy::StateTerm`) is computed once per distinct "
             "node state, not once per shape, and FGD memoizes every fragmentation it computes "
             "by what the measure reads (GPU model, which job types' CPU fits, the GPUs' free "
             "shares as a multiset; 32-byte entries), so the states before and after a placement "
             "that recur across shapes and nodes are measured once. Each iteration makes and "
             "prepares a fresh policy (untimed), so that memo starts cold, as in a process.\n")
proc = float(open(f"{tmp}/proc").read().strip())
lines.append(f"Whole process, `gpufleet sim placement --policy fgd` (the static client, which "
             f"runs it itself) on the default trace with order seed 42 (median of 9 wall times, "
             f"including reading the CSV files): **{proc*1000:.0f} ms**.\n")
base = open(f"{tmp}/base.txt").read().split()
if base:
    brows = {name: b["real_time"] for name, b in medians("base")[0].items()}
    base_proc = float(open(f"{tmp}/base_proc").read().strip())
    lines.append("## Before and after, measured in this run (BASELINE)\n")
    label = os.environ.get("BASELINE_LABEL", "")
    if label:
        lines.append(f"Before: {label}.\n")
    lines.append("| benchmark | before ms | after ms | after / before |")
    lines.append("|---|---|---|---|")
    for name in ["BM_OpenbDefault/bestfit", "BM_OpenbDefault/fgd", "BM_OpenbDefault/fgd_balance",
                 "BM_OpenbReplicated/fgd/1", "BM_OpenbReplicated/fgd/4",
                 "BM_OpenbReplicated/bestfit/1", "BM_OpenbReplicated/bestfit/4"]:
        if name in brows and ms(name):
            lines.append(f"| {name} | {brows[name]:.1f} | {ms(name):.1f} | {ms(name)/brows[name]:.2f} |")
    lines.append(f"| whole process, fgd, default trace (wall time in 10 ms steps) | {base_proc*1000:.0f} | {proc*1000:.0f} | "
                 f"{proc/base_proc:.2f} |")
    for p in ["fgd", "bestfit"]:
        b1, b4 = brows.get(f"BM_OpenbReplicated/{p}/1"), brows.get(f"BM_OpenbReplicated/{p}/4")
        if b1 and b4:
            lines.append(f"\n{p}: x4 / x1 was {b4/b1:.1f} before, "
                         f"{ms(f'BM_OpenbReplicated/{p}/4')/ms(f'BM_OpenbReplicated/{p}/1'):.1f} now.")
    lines.append(f"\nSame decisions (every pod's node and GPUs, `--decisions`), 4 traces x 6 "
                 f"deterministic policies x 3 published orders: **{base[0]} identical, {base[1]} "
                 f"different**.\n")
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
