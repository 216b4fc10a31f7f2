#!/usr/bin/env bash
# Measures one scheduling pass at fleet scale (bench/schedule_bench.cpp) and writes
# bench/results/schedule.md: median of 5 repetitions (3 passes each) per policy, fleet idle and
# busy, the decisions each pass made and a hash of them.
# With BASELINE=DIR (a folder holding schedule_bench built from an earlier commit) it runs that
# too, in the same session, and says for each row whether the decisions are the same.
# Needs build/ (bash scripts/setup.sh). Takes about a minute (several with a slow BASELINE).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=bench/results/schedule.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # binary json
  /usr/bin/time -f "%M" -o "$2.rss" "$1" --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_out="$2" --benchmark_out_format=json \
    >/dev/null 2>&1
}
run ./build/bench/schedule_bench "$tmp/after.json"
[ -n "${BASELINE:-}" ] && run "$BASELINE/schedule_bench" "$tmp/before.json"
python3 - "$tmp" "$out" "${BASELINE:+yes}" <<'PY'
import json, os, sys
tmp, out, has_base = sys.argv[1], sys.argv[2], sys.argv[3] == "yes"
def load(name):
    data = json.load(open(f"{tmp}/{name}.json"))
    rows = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rows[b["run_name"].split("/iterations")[0]] = b
    return data["context"], rows
ctx, after = load("after")
before = load("before")[1] if has_base else {}
rss = int(open(f"{tmp}/after.json.rss").read().split()[-1])
lines = ["# One scheduling pass at fleet scale\n",
         f"`bash bench/run_schedule_bench.sh` ({ctx.get('num_cpus')} CPUs, {ctx.get('date')}): "
         "Google Benchmark, median of 5 repetitions of 3 passes, one core. 1,250 nodes x 8 H100 = "
         "10,000 GPUs, 100,000 pending jobs of 1-8 GPUs, `gpupacking` placement, the same "
         "`Scheduler::Schedule` the controller calls. Target (issue 5): at most 100 ms per pass.\n",
         "- *idle*: the fleet is idle and the pass fills it;",
         "- *busy*: every GPU but 64 is held by 8-GPU jobs that have run 1,000,000 s. For the "
         "preemptive policies (tiresias, las-qssf, gittins) this is the worst case: every running "
         "job ranks below every waiting job, and the pass replaces the whole fleet. fairshare: "
         "the running jobs' queue has no quota, so it reclaims them;",
         "- *busy, running index*: the same busy pass reading the running jobs from a "
         "`RunningIndex` kept across passes (as the replay does; built outside the timing). A "
         "baseline without it is compared with its plain busy pass.\n"]
head = "| policy | fleet | ms | decisions | decision hash |"
sep = "|---|---|---|---|---|"
if has_base:
    head = "| policy | fleet | before ms | after ms | decisions | same decisions |"
    sep = "|---|---|---|---|---|---|"
if has_base and os.environ.get("BASELINE_LABEL"):
    lines.append(f"Before: {os.environ['BASELINE_LABEL']}.\n")
lines += [head, sep]
for name, b in after.items():
    _, policy, fleet = name.split("/")
    fleet = {"empty": "idle", "busy": "busy", "busy-indexed": "busy, running index"}[fleet]
    h, n = int(b["decision_hash"]), int(b["started"])
    if has_base:
        # A build without the running index has no busy-indexed row: the same decisions as its
        # plain busy pass are expected.
        a = before.get(name) or before.get(name.replace("busy-indexed", "busy"))
        same = "yes" if a and int(a["decision_hash"]) == h and int(a["started"]) == n else "NO"
        bms = f"{a['real_time']:.2f}" if a else "-"
        lines.append(f"| {policy} | {fleet} | {bms} | {b['real_time']:.2f} | {n:,} | {same} |")
    else:
        lines.append(f"| {policy} | {fleet} | {b['real_time']:.2f} | {n:,} | {h} |")
lines.append("")
lines.append("The decision hash is FNV-1a over every decision (kind, job, node, GPUs) in order, low "
             "32 bits; equal hashes and counts mean the same decisions.\n")
lines.append(f"Peak RSS of the whole benchmark process: {rss/1024:.1f} MiB.\n")
lines.append("The preemption index (`src/sched/schedule.cpp`): the running jobs that may be "
             "preempted are indexed once per pass, only for the classes the waiting jobs can "
             "take, in a heap popped in victim order only as far as plans read it; victims are "
             "always taken from its front, so a waiting job that cannot preempt anyone costs O(1) "
             "instead of a scan of every running job, a sort and a copy of the cluster. A preemption "
             "plan releases its candidates on the pass's own cluster and places with the pass's "
             "placer, putting them back when no plan is found, so the placer keeps its rankings "
             "and no plan copies the cluster. With a `RunningIndex` (*busy, running index*), the "
             "running jobs' classes, GPUs and victim order are kept across passes, and the pass "
             "reads only the victims it takes. Under greedy backfill the pass "
             "visits only the waiting jobs within reach: the queue is kept in buckets by class "
             "and fewest GPUs, and a bucket of jobs larger than the free GPUs plus the "
             "preemptible ones is passed over, not walked.")
open(out, "w").write("\n".join(lines) + "\n")
print(f"wrote {out}")
PY
