#!/usr/bin/env bash
# Whole-process time of one openb placement run (issue 18, section 4: goal <= 30 ms), the way a
# user runs it: `gpufleet sim placement --policy fgd` on the default trace with the published
# seed-42 order, wall time from exec to exit, median of 21 runs, for each way of running it,
# interleaved so that they see the same machine:
#   gpufleet        the static client runs the command itself (since this change)
#   gpufleet-full   the dynamically linked full program (what `gpufleet` exec'd before)
# each with the heap on transparent huge pages (the default now) and on 4 KiB pages
# (GPUFLEET_HEAP_PAGES=small, the behaviour before). With BASELINE=DIR (a folder holding a
# `gpufleet` built from an earlier commit), that binary joins the interleaved runs as a fifth
# row, named by BASELINE_LABEL (say, the commit). Writes bench/results/placement-process.md.
# Needs build/ (bash scripts/setup.sh) and ../shared/traces.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
traces=../shared/traces/alibaba-openb-2023
[ -f "$traces/openb_node_list_gpu_node.csv" ] || { echo "needs $traces" >&2; exit 1; }
python3 - "$traces" "${BASELINE:-}" <<'PY'
import os, statistics, subprocess, sys, time, datetime
traces = sys.argv[1]
baseline = sys.argv[2]
args = ["sim", "placement", "--nodes", f"{traces}/openb_node_list_gpu_node.csv",
        "--pods", f"{traces}/openb_pod_list_default.csv", "--policy", "fgd",
        "--order", f"{traces}/orders/openb_pod_list_default.seed42.txt"]
configs = [("gpufleet-full, 4 KiB pages (before)", "./build/gpufleet-full", "small"),
           ("gpufleet-full, huge-page heap", "./build/gpufleet-full", ""),
           ("gpufleet (static), 4 KiB pages", "./build/gpufleet", "small"),
           ("gpufleet (static), huge-page heap (now)", "./build/gpufleet", "")]
if baseline:
    label = os.environ.get("BASELINE_LABEL", "BASELINE")
    configs.append((f"gpufleet (static) of {label}, huge-page heap",
                    f"{baseline}/gpufleet", ""))
times = {c[0]: [] for c in configs}
outputs = {}
for _ in range(21):
    for name, binary, pages in configs:
        env = dict(os.environ)
        env.pop("GPUFLEET_HEAP_PAGES", None)
        if pages:
            env["GPUFLEET_HEAP_PAGES"] = pages
        start = time.perf_counter()
        out = subprocess.run([binary] + args, env=env, check=True, capture_output=True).stdout
        times[name].append((time.perf_counter() - start) * 1000)
        outputs.setdefault(out, []).append(name)
same = len(outputs) == 1
base = statistics.median(times[configs[0][0]])
cpu = os.cpu_count()
lines = ["# Whole-process time of one openb placement run\n",
         f"Measured by `bash bench/run_placement_process.sh` on {cpu} CPUs, "
         f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}: "
         "`sim placement --policy fgd` on the default trace with the published seed-42 order, "
         "wall time from exec to exit, 21 runs of each, interleaved.\n",
         "| how | median ms | min ms | max ms | / before |", "|---|---|---|---|---|"]
for name, _, _ in configs:
    t = times[name]
    lines.append(f"| {name} | {statistics.median(t):.1f} | {min(t):.1f} | {max(t):.1f} | "
                 f"{statistics.median(t) / base:.2f} |")
lines.append("")
lines.append(f"Same output from all {len(configs)}: **{'yes' if same else 'NO'}**.\n")
lines.append("Goal (issue 18, section 4): <= 30 ms.\n")
open("bench/results/placement-process.md", "w").write("\n".join(lines))
print("\n".join(lines))
PY
