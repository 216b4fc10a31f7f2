#!/usr/bin/env bash
# How the Philly replay's time grows with the trace (issue 18, section 4: linear replay scaling):
# `gpufleet sim run` as a user runs it, the trace replicated K = 1, 2, 4 times on K x 64 nodes,
# wall time from exec to exit (reading the trace included), median of REPEATS (default 3) runs,
# one core. With BASELINE=FILE (a `gpufleet-full` built from an earlier commit, named by
# BASELINE_LABEL), that binary runs interleaved with this build's, and the table shows both and
# whether every replay's summary (average, p99 JCT, makespan, preemptions) is the same.
# Writes bench/results/replay-scaling.md. Needs build/ (bash scripts/setup.sh) and
# ../shared/traces. About 4 minutes alone, 10 with a baseline.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
trace=../shared/traces/philly/philly_pollux_osdi21.csv
[ -f "$trace" ] || { echo "needs $trace" >&2; exit 1; }
python3 - "$trace" "${BASELINE:-}" "${BASELINE_LABEL:-BASELINE}" "${REPEATS:-3}" \
  "${POLICIES:-fifo,tiresias,las-qssf,gittins}" <<'PY'
import datetime, json, os, statistics, subprocess, sys, time
trace, baseline, label, repeats, policies = sys.argv[1:6]
repeats = int(repeats)
policies = policies.split(",")
builds = [("now", "./build/gpufleet-full")]
if baseline:
    builds.insert(0, (label, baseline))
times, summary = {}, {}
for k in (1, 2, 4):
    for p in policies:
        for _ in range(repeats):
            for name, binary in builds:
                start = time.perf_counter()
                out = subprocess.run([binary, "sim", "run", "--trace", f"philly:{trace}",
                                      "--policy", p, "--replicate", str(k), "--json"],
                                     check=True, capture_output=True, text=True).stdout
                times.setdefault((name, p, k), []).append(time.perf_counter() - start)
                d = json.loads(out)
                summary[(name, p, k)] = (round(d["avg_jct_s"], 3), round(d["p99_jct_s"], 3),
                                         d["makespan_s"], d["preemptions"])
lines = ["# Replay scaling (issue 18, section 4)", "",
         f"`bash bench/run_replay_scaling.sh` on {os.cpu_count()} CPUs, "
         f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}: "
         "`gpufleet sim run --trace philly:... --replicate K` (K times the jobs on K x 64 nodes), "
         f"wall time of the whole process, median of {repeats} runs, one core.", "",
         "| policy | build | x1 (s) | x2 (s) | x4 (s) | x2 / x1 | x4 / x1 |",
         "|---|---|---|---|---|---|---|"]
for p in policies:
    for name, _ in builds:
        m = [statistics.median(times[(name, p, k)]) for k in (1, 2, 4)]
        lines.append(f"| {p} | {name} | {m[0]:.2f} | {m[1]:.2f} | {m[2]:.2f} | "
                     f"{m[1] / m[0]:.2f} | {m[2] / m[0]:.2f} |")
if baseline:
    lines += ["", f"Time now / {label}:", ""]
    for p in policies:
        r = [statistics.median(times[("now", p, k)]) / statistics.median(times[(label, p, k)])
             for k in (1, 2, 4)]
        lines.append(f"- {p}: x1 {r[0]:.2f}, x2 {r[1]:.2f}, x4 {r[2]:.2f}")
    same = [(p, k) for p in policies for k in (1, 2, 4)
            if summary[("now", p, k)] == summary[(label, p, k)]]
    differ = [f"{p} x{k}" for p in policies for k in (1, 2, 4)
              if summary[("now", p, k)] != summary[(label, p, k)]]
    lines += ["", f"Same summary (average and p99 JCT, makespan, preemptions) as {label}: "
              f"{len(same)} of {len(same) + len(differ)} replays"
              + (f"; different: {', '.join(differ)}" if differ else "") + "."]
open("bench/results/replay-scaling.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
