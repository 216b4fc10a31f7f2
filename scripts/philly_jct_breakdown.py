#!/usr/bin/env python3
"""Where two queue policies' average JCT on Philly differs, by job size and GPU-time.

Replays the Philly trace under each policy (`gpufleet sim run --decisions`), then splits every
job's JCT by its GPU count (1, 2-4, 5-8, >8) and its GPU-time in the trace (<6 min, <1 h, <10 h,
<100 h, >=100 h). Each cell's share is its JCT summed over its jobs and divided by all jobs: the
cells add up to the average JCT, so the delta column says which jobs make the difference.

Usage: scripts/philly_jct_breakdown.py [--trace CSV] [--cluster NAME] [--policies A,B]
Writes a Markdown table to standard output. Needs build/gpufleet.
"""
import argparse
import collections
import csv
import datetime
import math
import os
import subprocess
import sys
import tempfile


def trace_jobs(path):
    """(submit offset, GPUs, GPU-time) per job, in the order the replay numbers them: by submit
    time, stable (src/sim/philly_trace.cpp)."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            when = datetime.datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S")
            submit = int(when.replace(tzinfo=datetime.timezone.utc).timestamp())
            gpus = int(r["num_gpus"])
            rows.append((submit, gpus, gpus * math.ceil(float(r["duration"]))))
    rows.sort(key=lambda row: row[0])
    first = rows[0][0]
    return [(s - first, g, t) for s, g, t in rows]


def replay(binary, trace, cluster, policy, out):
    subprocess.run([binary, "sim", "run", "--trace", "philly:" + trace, "--cluster", cluster,
                    "--policy", policy, "--decisions", out, "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    finish, preempts = {}, collections.Counter()
    with open(out, newline="") as f:
        for r in csv.DictReader(f):
            if r["event"] == "finish":
                finish[int(r["job"])] = int(r["time_s"])
            elif r["event"] == "preempt":
                preempts[int(r["job"])] += 1
    return finish, preempts


def size_class(gpus):
    return "1" if gpus == 1 else "2-4" if gpus <= 4 else "5-8" if gpus <= 8 else ">8"


def time_class(gpu_s):
    for limit_h, name in [(0.1, "<6 min"), (1, "<1 h"), (10, "<10 h"), (100, "<100 h")]:
        if gpu_s < limit_h * 3600:
            return name
    return ">=100 h"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", default="../shared/traces/philly/philly_pollux_osdi21.csv")
    p.add_argument("--cluster", default="philly-512")
    p.add_argument("--policies", default="tiresias,gittins")
    p.add_argument("--gpufleet", default="build/gpufleet")
    args = p.parse_args()
    names = args.policies.split(",")
    if len(names) != 2:
        sys.exit("error: --policies takes exactly two policies, A,B")
    if not os.path.exists(args.trace):
        sys.exit(f"error: {args.trace} not found (the shared Philly trace)")
    jobs = trace_jobs(args.trace)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            results.append(replay(args.gpufleet, args.trace, args.cluster, name,
                                  os.path.join(tmp, name + ".csv")))
    for name, (finish, _) in zip(names, results):
        if len(finish) != len(jobs):
            sys.exit(f"error: {name} finished {len(finish)} jobs, the trace has {len(jobs)}")
    cells = collections.defaultdict(lambda: [0, 0.0, 0.0, 0, 0])
    for i, (submit, gpus, gpu_s) in enumerate(jobs):
        c = cells[(size_class(gpus), time_class(gpu_s))]
        c[0] += 1
        for k, (finish, preempts) in enumerate(results):
            c[1 + k] += (finish[i] - submit) / 3600
            c[3 + k] += preempts[i]
    n = len(jobs)
    a, b = names
    print(f"Philly on {args.cluster}: average JCT {sum(c[1] for c in cells.values()) / n:.2f} h "
          f"under {a}, {sum(c[2] for c in cells.values()) / n:.2f} h under {b}\n")
    print(f"| GPUs | GPU-time | jobs | {a} share (h) | {b} share (h) | {b} - {a} (h) | "
          f"{a} avg JCT (h) | {b} avg JCT (h) | {a} preemptions | {b} preemptions |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    sizes = ["1", "2-4", "5-8", ">8"]
    times = ["<6 min", "<1 h", "<10 h", "<100 h", ">=100 h"]
    for key in sorted(cells, key=lambda k: (sizes.index(k[0]), times.index(k[1]))):
        c = cells[key]
        print(f"| {key[0]} | {key[1]} | {c[0]} | {c[1] / n:.3f} | {c[2] / n:.3f} | "
              f"{(c[2] - c[1]) / n:+.3f} | {c[1] / c[0]:.2f} | {c[2] / c[0]:.2f} | {c[3]} | {c[4]} |")


if __name__ == "__main__":
    main()
