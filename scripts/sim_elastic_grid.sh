#!/bin/bash
# The elastic-jobs evaluation of docs/sim/elastic.md (issue 18, section 3): Microsoft Philly
# (../shared/traces/philly) replayed with 0%, 25%, 50% and 100% of its whole-GPU jobs elastic
# (`--elastic-fraction`; each from its trace GPUs x 0.5 to x 2), under several queue policies, on
# philly-512 and on clusters of 8-GPU nodes sized to the trace's average GPU demand x 1.0 and
# x 1.25; then the speed-up model's efficiency and the grow delay varied on philly-512.
# Writes OUT/elastic.csv (one row per run), OUT/elastic.md (the tables, each point against the
# same policy with no elastic job) and OUT/jct_vs_fraction.svg (the plot).
# Usage: scripts/sim_elastic_grid.sh [OUT_DIR]   (default docs/sim/elastic)
# Environment: GPUFLEET (binary, default build/gpufleet), PHILLY (trace CSV), POLICIES (comma list).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/sim/elastic}
bin=${GPUFLEET:-build/gpufleet}
philly=${PHILLY:-../shared/traces/philly/philly_pollux_osdi21.csv}
policies=${POLICIES:-fifo,tiresias,gittins}
[ -x "$bin" ] || { echo "error: $bin not built (cmake --build build --target gpufleet)" >&2; exit 2; }
[ -f "$philly" ] || { echo "skipped: the Philly trace is not at $philly (set PHILLY)" >&2; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
csv="$out/elastic.csv"
echo "cluster,policy,elastic_fraction,efficiency,grow_after_s,elastic_jobs,avg_jct_h,p99_jct_h,makespan_d,utilization,preemptions,grows,shrinks" > "$csv"

# run CLUSTER LABEL POLICY FRACTION EFFICIENCY GROW_AFTER: appends one row.
run() {
  local cluster=$1 label=$2 policy=$3 fraction=$4 eff=$5 grow=$6
  "$bin" sim run --trace "philly:$philly" --cluster "$cluster" --policy "$policy" \
    --elastic-fraction "$fraction" --elastic-efficiency "$eff" --elastic-grow-after "$grow" \
    --json > "$tmp/run.json"
  python3 - "$tmp/run.json" "$label" "$policy" "$fraction" "$eff" "$grow" >> "$csv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
label, policy, fraction, eff, grow = sys.argv[2:7]
print(f"{label},{policy},{fraction},{eff},{grow},{j['elastic_jobs']},{j['avg_jct_s']/3600:.3f},"
      f"{j['p99_jct_s']/3600:.3f},{j['makespan_s']/86400:.2f},{j['utilization']:.4f},"
      f"{j['preemptions']},{j['grows']},{j['shrinks']}")
PY
}

# shellcheck source=scripts/sim_grid_lib.sh
source scripts/sim_grid_lib.sh

demand=$(philly_demand "$philly")
echo "Philly: average GPU demand $demand GPUs" >&2

grow=${GROW_AFTER:-3600}
eff=${EFFICIENCY:-0.8}
clusters=("philly-512|philly-512")
for f in 1.0 1.25; do
  nodes=$(nodes_for "$demand" "$f")
  clusters+=("$(cluster_toml "philly-$nodes" "$nodes")|demand x$f ($nodes nodes)")
done
for entry in "${clusters[@]}"; do
  cluster=${entry%%|*}
  label=${entry#*|}
  for policy in ${policies//,/ }; do
    for fraction in 0 0.25 0.5 1; do
      echo "$label $policy elastic $fraction" >&2
      run "$cluster" "$label" "$policy" "$fraction" "$eff" "$grow"
    done
  done
done
# Sensitivity on philly-512: the model's efficiency and the grow delay.
for policy in tiresias gittins; do
  for e in 0.6 0.95; do
    for fraction in 0.5 1; do run philly-512 philly-512 "$policy" "$fraction" "$e" "$grow"; done
  done
  for g in 600 7200; do
    for fraction in 0.5 1; do run philly-512 philly-512 "$policy" "$fraction" "$eff" "$g"; done
  done
done

python3 - "$csv" "$eff" "$grow" > "$out/elastic.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
eff, grow = sys.argv[2], sys.argv[3]
base = {(r['cluster'], r['policy'], r['efficiency'], r['grow_after_s']): r for r in rows
        if float(r['elastic_fraction']) == 0}
def key(r, e=None, g=None):
    return (r['cluster'], r['policy'], e or r['efficiency'], g or r['grow_after_s'])
def pct(a, b):
    return f"{100 * (float(a) / float(b) - 1):+.1f}%" if float(b) > 0 else "n/a"
print(f"Elastic jobs on Philly: each point against the same policy and cluster with no elastic "
      f"job (efficiency {eff}, grow delay {grow} s unless the row says otherwise).\n")
print("| cluster | policy | elastic | avg JCT (h) | vs rigid | p99 (h) | vs rigid | makespan (d) "
      "| utilization | vs rigid | preemptions | grows | shrinks |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    b = base.get(key(r, eff, grow))
    if b is None:
        continue
    print(f"| {r['cluster']} | {r['policy']} | {float(r['elastic_fraction']):.0%}"
          f"{'' if (r['efficiency'], r['grow_after_s']) == (eff, grow) else ' (eff ' + r['efficiency'] + ', grow ' + r['grow_after_s'] + ' s)'}"
          f" | {float(r['avg_jct_h']):.2f} | {pct(r['avg_jct_h'], b['avg_jct_h'])} "
          f"| {float(r['p99_jct_h']):.1f} | {pct(r['p99_jct_h'], b['p99_jct_h'])} "
          f"| {r['makespan_d']} | {float(r['utilization']):.1%} "
          f"| {100 * (float(r['utilization']) - float(b['utilization'])):+.1f} pts "
          f"| {r['preemptions']} | {r['grows']} | {r['shrinks']} |")
PY
# The plot: average JCT against the rigid run, by elastic fraction, one line per cluster and policy.
python3 - "$csv" "$eff" "$grow" > "$out/jct_vs_fraction.svg" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
eff, grow = sys.argv[2], sys.argv[3]
rows = [r for r in rows if (r['efficiency'], r['grow_after_s']) == (eff, grow)]
lines = {}
for r in rows:
    lines.setdefault((r['cluster'], r['policy']), []).append(
        (float(r['elastic_fraction']), float(r['avg_jct_h'])))
W, H, L, R, T, B = 760, 420, 60, 250, 20, 50
ys = [100 * (j / pts[0][1] - 1) for pts in lines.values() for _, j in pts if pts[0][0] == 0]
lo, hi = min(ys + [-5]), max(ys + [5])
lo, hi = 10 * (lo // 10), 10 * (-(-hi // 10))
X = lambda f: L + f * (W - L - R)
Y = lambda v: T + (hi - v) / (hi - lo) * (H - T - B)
colors = {'fifo': '#1f77b4', 'tiresias': '#d62728', 'gittins': '#2ca02c'}
dashes = ['', '6,3', '2,3']
clusters = sorted({c for c, _ in lines})
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>']
v = lo
while v <= hi:
    out.append(f'<line x1="{L}" x2="{W-R}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="{"#888" if v == 0 else "#eee"}"/>')
    out.append(f'<text x="{L-6}" y="{Y(v)+4:.1f}" text-anchor="end">{v:+.0f}%</text>')
    v += 10
for f in (0, 0.25, 0.5, 1):
    out.append(f'<text x="{X(f):.1f}" y="{H-B+18}" text-anchor="middle">{f:.0%}</text>')
out.append(f'<text x="{(L+W-R)/2:.1f}" y="{H-10}" text-anchor="middle">jobs elastic (Philly, efficiency {eff}, grow delay {grow} s)</text>')
out.append(f'<text x="14" y="{(T+H-B)/2:.1f}" transform="rotate(-90 14 {(T+H-B)/2:.1f})" text-anchor="middle">average JCT vs rigid</text>')
k = 0
for (cluster, policy), pts in sorted(lines.items()):
    pts.sort()
    if pts[0][0] != 0:
        continue
    base = pts[0][1]
    d = " ".join(f"{X(f):.1f},{Y(100 * (j / base - 1)):.1f}" for f, j in pts)
    dash = dashes[clusters.index(cluster) % len(dashes)]
    out.append(f'<polyline fill="none" stroke="{colors.get(policy, "#555")}" stroke-width="2" stroke-dasharray="{dash}" points="{d}"/>')
    ly = T + 16 * k + 10
    out.append(f'<line x1="{W-R+10}" x2="{W-R+40}" y1="{ly}" y2="{ly}" stroke="{colors.get(policy, "#555")}" stroke-width="2" stroke-dasharray="{dash}"/>')
    out.append(f'<text x="{W-R+46}" y="{ly+4}">{policy}, {cluster}</text>')
    k += 1
out.append('</svg>')
print("\n".join(out))
PY
echo "wrote $csv, $out/elastic.md and $out/jct_vs_fraction.svg" >&2
